"""A fake GitHub in its own process for the service benchmarks (started by them, not by hand).

It builds pull requests with finished measurement runs, writes the signed deliveries of
those runs to a file, and serves the API, the artifact storage and a small control route
(``GET /__bench/commented`` → how many of the timed runs perfbot has commented on,
``GET /__bench/warmed`` → how many warm-up PRs have perfbot's comment, ``GET
/__bench/settled`` → how many of the settling updates landed, ``GET /__bench/calls`` →
rate-limited API calls so far) on 127.0.0.1.

Two shapes of timed run: by default, N first comments, one on each of N PRs of their own;
with ``--updates``, N steady-state updates: the warm-up PRs (perfbot's first comment on
each, then one untimed update so that the comment is settled) measured again, PR ``n mod
warm-up`` for run n, its comment edited in place.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import socket
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn
import uvloop
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfbot.sandbox.common import is_token_path
from perfbot.sandbox.fakegithub import RecordedRequest, rsa_keypair
from tests.harness import World

FIRST_PULL = 100
# A link to a run in perfbot's comment (``.../actions/runs/5001)``).
_RUN_LINK = re.compile(r"runs/(\d+)\)")


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


# Run ids of the settling updates and of the timed updates (``--updates``); below them,
# the first runs of the PRs (5000 + n).
SETTLE_RUNS = 1_000_000
UPDATE_RUNS = 2_000_000


def build_updates(
    worlds: list[World], pulls: int, events: int, first_run: int
) -> list[dict[str, Any]]:
    """Signed deliveries of ``events`` more runs of PRs ``FIRST_PULL`` .. ``FIRST_PULL +
    pulls - 1`` (their heads as ``build`` made them): run ``first_run + n`` for PR ``n mod
    pulls``."""
    deliveries: list[dict[str, Any]] = []
    for n in range(events):
        offset = n % pulls
        world = worlds[offset % len(worlds)]
        pull = world.repo.pulls[FIRST_PULL + offset]
        body, headers = world.delivery(world.measured_run(pull, first_run + n))
        deliveries.append({"body": body.decode(), "headers": headers})
    return deliveries


def worlds_of(world: World, installations: int) -> list[World]:
    """The world's repository and installation, and ``installations - 1`` more, one
    repository each (GitHub's pace is per installation: many keep it from being measured)."""
    return [world] + [
        world.another(1 + i, f"org{i}/widget", 10_000 + i) for i in range(1, installations)
    ]


def control_app(worlds: list[World], events: int, warmup: int, updates: bool) -> ASGIApp:
    world = worlds[0]
    bench_repos = {w.repo.full_name for w in worlds}
    # The PRs with perfbot's comment, from the comments added since the last look, and the
    # runs perfbot's edits named, from the requests since the last look (the benchmark asks
    # every 20 ms: looking every PR up each time cost the fake more CPU than answering
    # perfbot). perfbot never deletes its comment, and PR n is in one repository only.
    commented_pulls: set[int] = set()
    comments_read = 0
    edited_runs: set[int] = set()
    requests_read = 0
    in_flight: list[RecordedRequest] = []  # edits not answered yet when last looked at

    def count(first: int, number: int) -> int:
        nonlocal comments_read
        comments = world.fake.comments
        for comment in itertools.islice(comments.values(), comments_read, None):
            if comment.app_id == world.fake.app_id and comment.repo in bench_repos:
                commented_pulls.add(comment.issue_number)
        comments_read = len(comments)
        return sum(1 for n in commented_pulls if first <= n < first + number)

    def edited(first_run: int, number: int) -> int:
        """How many of runs ``first_run`` .. ``first_run + number - 1`` an edit of a
        comment named (an edit names its own run, and earlier ones)."""
        nonlocal requests_read
        requests = world.fake.requests
        fresh = [
            request
            for request in itertools.islice(requests, requests_read, None)
            if request.method == "PATCH" and "/issues/comments/" in request.path
        ]
        requests_read = len(requests)
        # A request is recorded on arrival and answered later (its status set then).
        waiting = in_flight + fresh
        in_flight[:] = [request for request in waiting if request.status == 0]
        for request in waiting:
            if request.status == 200 and isinstance(request.body, dict):
                text = str(request.body.get("body", ""))
                edited_runs.update(int(run) for run in _RUN_LINK.findall(text))
        return sum(1 for run in edited_runs if first_run <= run < first_run + number)

    timed: Callable[[], int] = (
        (lambda: edited(UPDATE_RUNS, events)) if updates else (lambda: count(FIRST_PULL, events))
    )
    warm_first = FIRST_PULL if updates else FIRST_PULL + events
    controls: dict[str, Callable[[], dict[str, int]]] = {
        "/__bench/commented": lambda: {"commented": timed()},
        "/__bench/warmed": lambda: {"commented": count(warm_first, warmup)},
        "/__bench/settled": lambda: {"commented": edited(SETTLE_RUNS, warmup)},
        "/__bench/calls": lambda: {"calls": len(world.fake.rate_limited_calls())},
        "/__bench/requests": lambda: requests_by_kind(world.fake.requests),
    }

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        """The control routes, and the fake's API under every other path (no router: its
        matching cost the fake as much as a route of the API)."""
        control = controls.get(scope["path"]) if scope["type"] == "http" else None
        if control is None:
            await world.fake.api_app(scope, receive, send)
            return
        await JSONResponse(await answered(control, scope))(scope, receive, send)

    return app


def requests_by_kind(requests: list[RecordedRequest]) -> dict[str, int]:
    """The API requests so far: those the rate limit counts, the token exchanges, and the
    conditional reads answered 304 (neither of which it counts)."""
    tokens = sum(1 for request in requests if is_token_path(request.path))
    unchanged = sum(1 for request in requests if request.status == 304)
    return {
        "counted": len(requests) - tokens - unchanged,
        "tokens": tokens,
        "not_modified": unchanged,
    }


async def answered(control: Callable[[], dict[str, int]], scope: Scope) -> dict[str, int]:
    """The control's answer; with ``?at_least=N&wait=S``, once its count is N or after S
    seconds (at most 10), whichever comes first, looked at every 20 ms as the benchmark's
    own polling did: one request a round instead of fifty a second, whose HTTP was a
    sixth of the fake's CPU on a loaded machine."""
    query = urllib.parse.parse_qs(scope["query_string"].decode())
    at_least = int(query.get("at_least", ["0"])[0])
    deadline = time.monotonic() + min(10.0, float(query.get("wait", ["0"])[0]))
    answer = control()
    while min(answer.values()) < at_least and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
        answer = control()
    return answer


async def serve(apps: list[ASGIApp], sockets: list[socket.socket]) -> None:
    servers = [
        uvicorn.Server(
            uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                lifespan="off",
                # The C parser (the tests' fake keeps h11, the strict one, to catch a
                # malformed request); h11 and asyncio's socket transports were a third of the
                # fake's CPU here.
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
    parser.add_argument(
        "--updates",
        action="store_true",
        help="timed runs update the warm-up PRs' comments (else: first comments on new PRs)",
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
    if args.updates:
        warmup = build(worlds, args.warmup)
        settle = build_updates(worlds, args.warmup, args.warmup, SETTLE_RUNS)
        deliveries = build_updates(worlds, args.warmup, args.events, UPDATE_RUNS)
    else:
        deliveries = build(worlds, args.events)
        warmup, settle = build(worlds, args.warmup, first=FIRST_PULL + args.events), []
    setup = {
        "api_url": api_url,
        "private_key": rsa_keypair().private_pem,  # the key this fake trusts
        "deliveries": deliveries,
        "warmup": warmup,
        "settle": settle,
    }
    # Written aside, then renamed: the reader never sees half a file.
    partial = args.out.with_name(args.out.name + ".partial")
    partial.write_text(json.dumps(setup))
    partial.rename(args.out)
    # uvloop, as perfbot serves on (with httptools, 40 % less CPU per request than h11 on
    # asyncio's loop for a bare endpoint: docs/benchmarks.md, bench/ingest.py).
    uvloop.run(
        serve(
            [control_app(worlds, args.events, args.warmup, args.updates), world.fake.storage_app],
            sockets,
        )
    )


if __name__ == "__main__":
    main()
