"""A real iperf3 server on 127.0.0.1 for the tests that measure with iperf3."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

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
def iperf3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The port of an ``iperf3 -s`` started for one test and stopped by its PID.

    Ready once its log says it listens. Not by probing the port: iperf3 takes a probe
    connection for a client, and the test's first real client may then be refused
    ("unable to receive control message") while the server gets over it.
    """
    assert IPERF3, "iperf3 is not installed: run scripts/bootstrap"
    port = free_port()
    log = tmp_path_factory.mktemp("iperf3-server") / "server.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [IPERF3, "-s", "-B", HOST, "-p", str(port), "--forceflush"],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 10
        while b"Server listening" not in log.read_bytes():
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"iperf3 server did not start listening: {log.read_text()[-500:]}")
            time.sleep(0.02)
        yield port
    finally:
        server.terminate()  # only the process this fixture started, by its PID
        server.wait(timeout=10)


# Between two tests the server closes its listening socket and opens it again: a client
# that comes in that moment is refused. Such a client is run again, a few times at most.
_NOT_LISTENING = (b"Connection refused", b"unable to receive control message")
MAX_CLIENT_TRIES = 5


def run_client(port: int, extra: list[str], output: Path, *, refused: bool = False) -> None:
    """One ``iperf3 -c`` run of a second against the fixture's server, its JSON in ``output``.
    ``refused``: nothing listens on ``port`` on purpose; its one failed run is the output."""
    assert IPERF3
    for attempt in range(1, 2 if refused else MAX_CLIENT_TRIES + 1):
        result = subprocess.run(
            [IPERF3, "-c", HOST, "-p", str(port), "-J", "-t", "1", *extra],
            capture_output=True,
            timeout=30,
            check=False,
        )
        # iperf3 3.12 with -J exits 0 on these errors too: its JSON tells.
        missed = any(m in result.stdout for m in _NOT_LISTENING)
        if refused or not missed or attempt == MAX_CLIENT_TRIES:
            break
        time.sleep(0.1 * attempt)  # the server's own restart, not a result to wait for
    assert refused or (result.returncode == 0 and not missed), result.stdout[-500:]
    output.write_bytes(result.stdout)
