"""Benchmark of the CPU one GitHub request costs perfbot's side of the wire.

A loopback server in a process of its own answers every request at once with a small
JSON body, and the client sends request after request, one at a time, on one kept-alive
connection: a PATCH with a 3 KB body (a comment's edit) and its answer. What is measured
is the CPU time of the client's process per request (the kernel's part included):

  * perfbot's pools (``perfbot.github.pools.Pools``), through ``Metered`` as the App sends;
  * aiohttp's client, as perfbot used it before 2026-12-03 (a session with no cookie jar
    and none of its default headers), when aiohttp is installed (it is no longer one of
    perfbot's dependencies: ``pip install aiohttp`` to see it);
  * the floor: the same bytes written and the answer's end awaited by a bare asyncio
    protocol, with no HTTP parsing at all.

Each client runs ``--rounds`` times, alternating, with the median printed; each round is
``--requests`` requests after 200 unmeasured ones.

Run: .venv/bin/python bench/wire.py [--requests N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import uvloop
from multidict import CIMultiDict
from rawhttp import read_request

from perfbot.github.pools import Pools
from perfbot.github.wire import Call, Metered
from tests.harness import free_port

ANSWER = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n{"ok":1}'
BODY = b'{"body":"' + b"x" * 3_000 + b'"}'
HEADERS = {
    "Accept": "application/vnd.github+json",
    "Authorization": "token ghs_bench",
    "Content-Type": "application/json",
    "User-Agent": "perfbot/bench",
}


async def _serve(port: int) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await read_request(reader)
                writer.write(ANSWER)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", port)
    await server.serve_forever()


Send = Callable[[], Awaitable[Any]]
# A client: the CPU seconds per request it measured at a URL, over so many requests.
Client = Callable[[str, int], Coroutine[Any, Any, float]]


async def per_request(send: Send, count: int) -> float:
    """CPU seconds of this process per request, after 200 unmeasured ones."""
    for _ in range(200):
        await send()
    start = time.process_time()
    for _ in range(count):
        await send()
    return (time.process_time() - start) / count


async def pools_client(url: str, count: int) -> float:
    wire = Metered(Pools(4), None)
    try:
        return await per_request(
            lambda: wire.send(Call("PATCH", url, "/x", CIMultiDict(HEADERS), BODY)), count
        )
    finally:
        await wire.close()


async def aiohttp_client(url: str, count: int) -> float:
    # Optional, and not one of perfbot's dependencies (so unknown to the type checker).
    aiohttp: Any = importlib.import_module("aiohttp")

    session = aiohttp.ClientSession(
        cookie_jar=aiohttp.DummyCookieJar(),
        skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding"),
    )

    async def send() -> bytes:
        async with session.request(
            "PATCH", url, headers=HEADERS, data=BODY, allow_redirects=False, compress=False
        ) as response:
            body: bytes = await response.read()
            return body

    try:
        return await per_request(send, count)
    finally:
        await session.close()


class _Floor(asyncio.Protocol):
    def __init__(self) -> None:
        self.received = b""
        self.done: asyncio.Future[None] | None = None

    def data_received(self, data: bytes) -> None:
        self.received += data
        if self.received.endswith(b'{"ok":1}') and self.done is not None:
            self.received = b""
            self.done.set_result(None)


async def floor_client(url: str, count: int) -> float:
    host, port = url.removeprefix("http://").split("/", 1)[0].split(":")
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.create_connection(_Floor, host, int(port))
    head = "".join(f"{name}: {value}\r\n" for name, value in HEADERS.items())
    request = (
        f"PATCH /x HTTP/1.1\r\nHost: {host}:{port}\r\n{head}Content-Length: {len(BODY)}\r\n\r\n"
    ).encode() + BODY

    async def send() -> None:
        protocol.done = loop.create_future()
        transport.write(request)
        await protocol.done

    try:
        return await per_request(send, count)
    finally:
        transport.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3_000, help="per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        uvloop.run(_serve(args.serve))
        return
    clients: dict[str, Client] = {"perfbot's pools": pools_client}
    if importlib.util.find_spec("aiohttp") is not None:
        clients["aiohttp's client"] = aiohttp_client
    else:
        print("aiohttp is not installed: its client is left out (pip install aiohttp)")
    clients["the floor (no HTTP)"] = floor_client
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    url = f"http://127.0.0.1:{port}/x"
    try:
        time.sleep(1.0)
        found: dict[str, list[float]] = {name: [] for name in clients}
        for _ in range(args.rounds):
            for name, client in clients.items():
                found[name].append(uvloop.run(client(url, args.requests)))
    finally:
        server.terminate()  # the process this benchmark started
        server.wait(timeout=10)
    print(
        f"CPU of the client's process per request (PATCH of {len(BODY):,} bytes, one kept-alive "
        f"connection, {args.requests:,} requests a round, median of {args.rounds} rounds):"
    )
    ours = statistics.median(found["perfbot's pools"])
    for name, seconds in found.items():
        median = statistics.median(seconds)
        rounds = ", ".join(f"{s * 1e6:.0f}" for s in seconds)
        print(
            f"  {name:20} {median * 1e6:6.0f} us (rounds: {rounds}); "
            f"{median / ours:.2f} x perfbot's pools"
        )


if __name__ == "__main__":
    main()
