"""A fake GitHub in its own process for the service benchmarks (started by them, not by hand).

It builds N pull requests with one finished measurement run each, writes the signed
deliveries of those runs to a file, and serves the API, the artifact storage and a small
control route (``GET /__bench/commented`` → how many of the PRs have perfbot's comment,
``GET /__bench/warmed`` → the same for the warm-up PRs, ``GET /__bench/calls`` →
rate-limited API calls so far) on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
from pathlib import Path
from typing import Any

import uvicorn
import uvloop
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfbot.sandbox.fakegithub import rsa_keypair
from tests.harness import World

FIRST_PULL = 100


def build(worlds: list[World], events: int, first: int = FIRST_PULL) -> list[dict[str, Any]]:
    """Signed deliveries of one finished run each for PRs ``first`` .. ``first + events - 1``,
    PR n in the repository (and installation) n mod len(worlds)."""
    deliveries: list[dict[str, Any]] = []
    for n in range(first - FIRST_PULL, first - FIRST_PULL + events):
        world = worlds[n % len(worlds)]
        pull = world.pull(FIRST_PULL + n, f"{n:040x}")
        body, headers = world.delivery(world.measured_run(pull, 5000 + n))
        deliveries.append({"body": body.decode(), "headers": headers})
    return deliveries


def worlds_of(world: World, installations: int) -> list[World]:
    """The world's repository and installation, and ``installations - 1`` more, one
    repository each (GitHub's pace is per installation: many keep it from being measured)."""
    return [world] + [
        world.another(1 + i, f"org{i}/widget", 10_000 + i) for i in range(1, installations)
    ]


def control_app(worlds: list[World], events: int, warmup: int) -> Starlette:
    world = worlds[0]
    # PRs seen with perfbot's comment: perfbot never deletes one, so each PR is looked up
    # until it has one and not again (the benchmark polls every 20 ms: looking every PR up
    # on every poll cost the fake more CPU than answering perfbot).
    seen: set[int] = set()

    def count(first: int, number: int) -> int:
        for n in range(first, first + number):
            if n not in seen and world.fake.bot_comments(
                worlds[(n - FIRST_PULL) % len(worlds)].repo, n
            ):
                seen.add(n)
        return sum(1 for n in range(first, first + number) if n in seen)

    async def commented(request: Request) -> JSONResponse:
        return JSONResponse({"commented": count(FIRST_PULL, events)})

    async def warmed(request: Request) -> JSONResponse:
        return JSONResponse({"commented": count(FIRST_PULL + events, warmup)})

    async def calls(request: Request) -> JSONResponse:
        return JSONResponse({"calls": len(world.fake.rate_limited_calls())})

    return Starlette(
        routes=[
            Route("/__bench/commented", commented),
            Route("/__bench/warmed", warmed),
            Route("/__bench/calls", calls),
            Mount("/", app=world.fake.api_app),
        ]
    )


async def serve(apps: list[Starlette], sockets: list[socket.socket]) -> None:
    servers = [
        uvicorn.Server(
            uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                lifespan="off",
                # The C parser (the tests' fake keeps h11, the strict one, to catch a
                # malformed request): h11 cost the fake a third of its CPU here.
                http="httptools",
                proxy_headers=False,
            )
        )
        for app in apps
    ]
    await asyncio.gather(
        *(s.serve(sockets=[sock]) for s, sock in zip(servers, sockets, strict=True))
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--warmup", type=int, default=0, help="extra runs, for PRs of their own")
    parser.add_argument(
        "--installations", type=int, default=1, help="installations the PRs are spread over"
    )
    parser.add_argument("--out", type=Path, required=True, help="where to write the setup")
    args = parser.parse_args()

    sockets = []
    for _ in range(2):
        sock = socket.socket()
        # Inherited by accepted connections; asyncio skips sockets made with proto 0, and
        # without it every answer waits 40 ms for perfbot's delayed ACK.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(1024)
        sockets.append(sock)
    api_url, storage_url = (f"http://127.0.0.1:{s.getsockname()[1]}" for s in sockets)
    world = World.create()
    world.fake.api_url, world.fake.storage_url = api_url, storage_url
    world.fake.latency = args.latency
    worlds = worlds_of(world, args.installations)
    setup = {
        "api_url": api_url,
        "private_key": rsa_keypair().private_pem,  # the key this fake trusts
        "deliveries": build(worlds, args.events),
        "warmup": build(worlds, args.warmup, first=FIRST_PULL + args.events),
    }
    # Written aside, then renamed: the reader never sees half a file.
    partial = args.out.with_name(args.out.name + ".partial")
    partial.write_text(json.dumps(setup))
    partial.rename(args.out)
    # uvloop, as perfbot serves on: asyncio's own loop and socket transports were another
    # fifth of the fake's CPU.
    uvloop.run(
        serve([control_app(worlds, args.events, args.warmup), world.fake.storage_app], sockets)
    )


if __name__ == "__main__":
    main()
