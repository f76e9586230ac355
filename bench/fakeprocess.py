"""The benchmarks' side of bench/fakeserver.py: start it as a process, read its setup."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from rawhttp import Connection, host_port, raw_request

from tests.harness import wait_until

BENCH = Path(__file__).resolve().parent

Deliveries = list[tuple[bytes, dict[str, str]]]


@dataclass(frozen=True)
class Setup:
    api_url: str
    private_key: str  # the key the fake trusts as the App's
    deliveries: Deliveries  # signed workflow_run deliveries
    warmup: Deliveries  # the same, for PRs of their own
    settle: Deliveries  # with updates: one more run of each warm-up PR, after the warm-up
    fake_pid: int


@contextmanager
def fake_github(
    events: int,
    latency: float,
    tmp: Path,
    warmup: int = 0,
    installations: int = 1,
    *,
    updates: bool = False,
) -> Iterator[Setup]:
    """bench/fakeserver.py as a process (stopped by its PID), and the setup it wrote;
    ``updates``: the timed runs update the warm-up PRs' comments (bench/fakeserver.py)."""
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
            "--installations",
            str(installations),
            "--out",
            str(setup_file),
            *(["--updates"] if updates else []),
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
            settle=[(d["body"].encode(), d["headers"]) for d in setup["settle"]],
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


# Deliveries in flight at once, as GitHub sends them: concurrently, a few at a time.
DELIVERY_CONCURRENCY = 16


async def post_all(base_urls: list[str], deliveries: Deliveries) -> None:
    """Deliver concurrently; delivery i goes to perfbot i mod len(base_urls). The requests
    are built before the first is sent, and go over kept-alive connections
    (bench/rawhttp.py): the load costs the machine little of the CPU it measures."""
    addresses = [host_port(url) for url in base_urls]
    queues: list[list[bytes]] = [[] for _ in addresses]
    for i, (body, headers) in enumerate(deliveries):
        host, port = addresses[i % len(addresses)]
        queues[i % len(addresses)].append(raw_request(f"{host}:{port}", "/webhook", headers, body))
    # DELIVERY_CONCURRENCY connections in all, shared out between the URLs (one each at least).
    share, extra = divmod(DELIVERY_CONCURRENCY, len(addresses))
    per_url = [max(1, share + (1 if n < extra else 0)) for n in range(len(addresses))]

    async def deliver(connection: Connection, requests: Iterator[bytes]) -> None:
        try:
            for request in requests:
                status, answer = await connection.send(request)
                if not 200 <= status < 300:
                    raise RuntimeError(f"perfbot answered {status}: {answer[:200]!r}")
        finally:
            connection.close()

    senders = []
    for (host, port), requests, count in zip(addresses, queues, per_url, strict=True):
        shared = iter(requests)  # each request is taken by one connection
        senders += [deliver(Connection(host, port), shared) for _ in range(count)]
    await asyncio.gather(*senders)


def wait_commented(api_url: str, at_least: int, timeout: float, what: str) -> None:
    """Until the fake counts ``at_least`` comments of the timed runs (bench/fakeserver.py,
    which looks every 20 ms for up to 5 s before it answers)."""
    with httpx.Client(base_url=api_url, timeout=30) as control:

        def commented() -> bool:
            answer = control.get("/__bench/commented", params={"at_least": at_least, "wait": 5})
            return int(answer.json()["commented"]) >= at_least

        wait_until(commented, timeout, what)


def warm_up(setup: Setup, base_urls: list[str]) -> None:
    """Deliver the warm-up runs and wait for their comments, then the settling updates
    and wait for their edits (nothing is timed)."""
    for deliveries, route, what in (
        (setup.warmup, "/__bench/warmed", "the warm-up comments"),
        (setup.settle, "/__bench/settled", "the settling updates"),
    ):
        if not deliveries:
            continue
        asyncio.run(post_all(base_urls, deliveries))
        with httpx.Client(base_url=setup.api_url, timeout=10) as control:
            wait_until(
                lambda: control.get(route).json()["commented"] == len(deliveries),  # noqa: B023
                600,
                what,
            )
