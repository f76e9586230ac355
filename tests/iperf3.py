"""A real iperf3 server on 127.0.0.1 for the tests that measure with iperf3."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

HOST = "127.0.0.1"
# Installed by scripts/bootstrap (Debian package iperf3); its absence is a broken setup,
# not a reason to skip.
IPERF3 = shutil.which("iperf3")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def iperf3_server() -> Iterator[int]:
    """The port of an ``iperf3 -s`` started for one test and stopped by its PID."""
    assert IPERF3, "iperf3 is not installed: run scripts/bootstrap"
    port = free_port()
    server = subprocess.Popen(
        [IPERF3, "-s", "-B", HOST, "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex((HOST, port)) == 0:
                    break
            time.sleep(0.05)
        else:
            pytest.fail("iperf3 server did not start listening within 10 s")
        yield port
    finally:
        server.terminate()  # only the process this fixture started, by its PID
        server.wait(timeout=10)
