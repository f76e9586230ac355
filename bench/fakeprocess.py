"""The benchmarks' side of bench/fakeserver.py: start it as a process, read its setup."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.harness import wait_until

BENCH = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Setup:
    api_url: str
    private_key: str  # the key the fake trusts as the App's
    deliveries: list[tuple[bytes, dict[str, str]]]  # signed workflow_run deliveries
    warmup: list[tuple[bytes, dict[str, str]]]  # the same, for PRs of their own
    fake_pid: int


@contextmanager
def fake_github(events: int, latency: float, tmp: Path, warmup: int = 0) -> Iterator[Setup]:
    """bench/fakeserver.py as a process (stopped by its PID), and the setup it wrote."""
    setup_file = tmp / "setup.json"
    process = subprocess.Popen(
        [
            sys.executable,
            str(BENCH / "fakeserver.py"),
            "--events",
            str(events),
            "--latency",
            str(latency),
            "--warmup",
            str(warmup),
            "--out",
            str(setup_file),
        ]
    )
    try:
        wait_until(lambda: setup_file.exists() and setup_file.stat().st_size > 0, 120, "the fake")
        setup = json.loads(setup_file.read_text())
        # The file is written just before the servers start listening: wait for them.
        with httpx.Client(base_url=setup["api_url"], timeout=5) as client:
            wait_until(lambda: _answers(client), 30, "the fake GitHub to listen")
        yield Setup(
            api_url=setup["api_url"],
            private_key=setup["private_key"],
            deliveries=[(d["body"].encode(), d["headers"]) for d in setup["deliveries"]],
            warmup=[(d["body"].encode(), d["headers"]) for d in setup["warmup"]],
            fake_pid=process.pid,
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _answers(client: httpx.Client) -> bool:
    try:
        client.get("/__bench/calls")
    except httpx.TransportError:
        return False
    return True
