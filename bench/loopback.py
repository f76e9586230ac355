"""A real iperf3 server on 127.0.0.1 and bounded client runs against it (bench/signal_noise.py).

The server is started on a free port and stopped by its PID; each client run has a
timeout, and a run the server refused (busy between two tests) is retried a bounded
number of times, so one hiccup does not become a failed case in a corpus.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"
RETRIES = 2
# Added to a run's own length for its timeout: connection set-up and the summary exchange.
SLACK_SECONDS = 20.0


class LoopbackError(RuntimeError):
    """iperf3 is missing or its server did not start."""


def iperf3() -> str:
    path = shutil.which("iperf3")
    if path is None:
        raise LoopbackError("iperf3 is not installed (Debian package iperf3; scripts/bootstrap)")
    return path


def version() -> str:
    result = subprocess.run(
        [iperf3(), "--version"], capture_output=True, text=True, timeout=10, check=False
    )
    return result.stdout.splitlines()[0].strip() if result.stdout else "unknown"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@contextmanager
def server(start_timeout: float = 10.0) -> Iterator[int]:
    """The port of an ``iperf3 -s`` listening on 127.0.0.1, stopped by its PID afterwards."""
    port = free_port()
    process = subprocess.Popen(
        [iperf3(), "-s", "-B", HOST, "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + start_timeout
        while not _listening(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise LoopbackError(f"iperf3 -s did not listen on {HOST}:{port}")
            time.sleep(0.05)
        yield port
    finally:
        process.terminate()  # only the server this block started
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex((HOST, port)) == 0


@dataclass(frozen=True, slots=True)
class Run:
    """One client run: what was asked, what it wrote, how long it took."""

    args: tuple[str, ...]
    output: bytes
    elapsed: float
    attempts: int

    @property
    def error(self) -> str | None:
        try:
            document = json.loads(self.output)
        except ValueError:
            return "no JSON output"
        error = document.get("error") if isinstance(document, dict) else "not an object"
        return None if error is None else str(error)


def client(port: int, args: Sequence[str], seconds: int, omit: int = 0) -> Run:
    """``iperf3 -c 127.0.0.1 -J -t seconds [-O omit] args``; retried while the server refuses."""
    command = [iperf3(), "-c", HOST, "-p", str(port), "-J", "-t", str(seconds)]
    if omit:
        command += ["-O", str(omit)]
    command += list(args)
    started = time.monotonic()
    output = b""
    attempt = 0
    for attempt in range(1, RETRIES + 2):
        try:
            result = subprocess.run(
                command, capture_output=True, timeout=seconds + omit + SLACK_SECONDS, check=False
            )
            output = result.stdout
        except subprocess.TimeoutExpired as exc:
            output = exc.stdout or b'{"error": "client timed out"}'
        run = Run(tuple(args), output, time.monotonic() - started, attempt)
        if run.error is None or attempt > RETRIES:
            break
        time.sleep(0.2 * attempt)  # the server resets between tests; give it a moment
    return Run(tuple(args), output, time.monotonic() - started, attempt)


def write(run: Run, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(run.output)
