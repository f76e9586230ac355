"""Benchmark of webhook ingest: perfbot's ``POST /webhook`` against a bare HMAC endpoint.

Both servers run the same way (uvicorn, one process, on 127.0.0.1, with the pure-Python
h11 parser and asyncio loop, then with httptools and uvloop) and get the same
signed 20 KB ``workflow_run`` deliveries, each with its own delivery id:

  * the bare endpoint is a Starlette route that checks ``X-Hub-Signature-256`` and
    answers 202, nothing else: the ceiling of any Python webhook receiver;
  * perfbot verifies, parses, de-duplicates and stores the delivery and its job in its
    SQLite queue (durable), then answers 202. Its workers are off: this measures ingest.

Throughput: wrk (Debian package), 32 connections for 10 s, every request with a fresh
delivery id (a Python client would be the bottleneck, not the servers); three rounds
alternating the two servers, the median of each.
The CPU each server process spends a request during wrk's run is printed beside it: on a
machine shared with other work it moves less than requests/s do.
Latency: an open loop at a fixed 500 requests/s for 10 s (5,000 requests), each timed from
the moment it was due; p50 and p99.

Run: .venv/bin/python bench/ingest.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from procstat import process_cpu
from rawhttp import Connection, raw_request

from perfbot.app.processes import server_config
from perfbot.app.server import create_app
from perfbot.app.settings import Settings
from tests.harness import free_port, settings_env, wait_until

SECRET = "bench-secret"
PAYLOAD = (
    Path(__file__).resolve().parents[2]
    / "shared/fixtures/octokit-webhooks/workflow_run/completed.with-pull-requests.payload.json"
)


def bare_app() -> Starlette:
    async def webhook(request: Request) -> Response:
        body = await request.body()
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, request.headers.get("x-hub-signature-256", "")):
            return JSONResponse({"error": "bad signature"}, status_code=401)
        return JSONResponse({"status": "queued"}, status_code=202)

    return Starlette(routes=[Route("/webhook", webhook, methods=["POST"])])


def perfbot_app(database: Path) -> Starlette:
    env = settings_env("http://127.0.0.1:9", database, PERFBOT_WEBHOOK_SECRET=SECRET)
    return create_app(Settings.from_env(env), run_workers=False)


def delivery_body() -> bytes:
    """A real workflow_run delivery, padded to 20 KB, as a pull_request run."""
    payload = json.loads(PAYLOAD.read_text())
    payload["workflow_run"]["event"] = "pull_request"
    payload["installation"] = {"id": 1}
    text = json.dumps(payload)
    payload["padding"] = "x" * max(0, 20_000 - len(text) - 20)
    return json.dumps(payload).encode()


def headers_for(body: bytes, n: int) -> dict[str, str]:
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return {
        "content-type": "application/json",
        "x-github-event": "workflow_run",
        "x-github-delivery": f"bench-{os.getpid()}-{n}",
        "x-hub-signature-256": signature,
    }


async def closed_loop(url: str, body: bytes, count: int, concurrency: int) -> float:
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
        numbers = iter(range(count))

        async def one_connection() -> None:
            for n in numbers:
                response = await client.post("/webhook", content=body, headers=headers_for(body, n))
                assert response.status_code == 202, response.text

        start = time.perf_counter()
        await asyncio.gather(*(one_connection() for _ in range(concurrency)))
        return count / (time.perf_counter() - start)


async def open_loop(url: str, body: bytes, rate: float, seconds: float) -> list[float]:
    """Requests sent on a fixed schedule; the latency of each, in seconds.

    A request's latency runs from the moment the schedule says it is due, so a server that
    stalls is charged for every request queued behind the stall. The client is a few
    lines of asyncio over 64 kept-alive connections, requests built in advance: at 500
    requests/s it needs a few per cent of a core, where an HTTP library's client needed
    enough to fall behind and charge its own delays to the server.
    """
    host, port = url.removeprefix("http://").rsplit(":", 1)
    count = int(rate * seconds)
    requests = [_raw_request(host, body, 10_000_000 + n) for n in range(count)]
    idle: asyncio.Queue[Connection] = asyncio.Queue()
    connections = [Connection(host, int(port)) for _ in range(64)]
    for connection in connections:
        await connection.open()  # before the schedule starts: no request waits for one
        idle.put_nowait(connection)
    latencies: list[float] = []

    async def one(request: bytes, due: float) -> None:
        connection = await idle.get()
        status, _ = await connection.send(request)
        latencies.append(time.perf_counter() - due)
        idle.put_nowait(connection)
        if status != 202:
            raise RuntimeError(f"the server answered {status}")

    tasks = []
    begin = time.perf_counter()
    for n, request in enumerate(requests):
        due = begin + n / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(request, due)))
    await asyncio.gather(*tasks)
    for connection in connections:
        connection.close()
    return latencies


def _raw_request(host: str, body: bytes, n: int) -> bytes:
    return raw_request(host, "/webhook", headers_for(body, n), body)


# uvicorn's HTTP parser and event loop: the pure-Python pair, and the C pair it picks by
# default when httptools and uvloop are installed (perfbot installs both).
STACKS = {"h11+asyncio": ("h11", "asyncio"), "httptools+uvloop": ("httptools", "uvloop")}


def measure(kind: str, stack: str, body: bytes, latency: bool) -> tuple[float, float, list[float]]:
    """The requests/s wrk gets through, the server's CPU seconds per request meanwhile,
    and the open loop's latencies (none unless ``latency``)."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind, "--port", str(port), "--stack", stack],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _listening(url), 30, f"the {kind} server")
        asyncio.run(closed_loop(url, body, 500, 8))  # warm-up
        # Latency first: after wrk's burst the database holds hundreds of MB of
        # deliveries, which no real installation reaches in minutes.
        latencies = asyncio.run(open_loop(url, body, 500, 10)) if latency else []
        before = process_cpu(server.pid)
        rate, count = wrk_rate(url, body)
        cpu = (process_cpu(server.pid) - before) / count
    finally:
        server.terminate()  # the process this benchmark started
        server.wait(timeout=10)
    return rate, cpu, latencies


WRK_SCRIPT = """
local body_file, signature = ...
wrk.method = "POST"
wrk.body = io.open(body_file, "rb"):read("*a")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-GitHub-Event"] = "workflow_run"
wrk.headers["X-Hub-Signature-256"] = signature
local prefix = tostring(math.random(1, 1000000000))
local counter = 0
request = function()
  counter = counter + 1
  wrk.headers["X-GitHub-Delivery"] = "wrk-" .. prefix .. "-" .. counter
  return wrk.format()
end
"""


def wrk_rate(url: str, body: bytes) -> tuple[float, int]:
    """Requests per second that wrk gets through in 10 s with 32 connections, and how
    many requests that was."""
    with tempfile.TemporaryDirectory() as tmp:
        body_file, script = Path(tmp) / "body.json", Path(tmp) / "post.lua"
        body_file.write_bytes(body)
        signature = headers_for(body, 0)["x-hub-signature-256"]
        script.write_text(
            f'local body_file, signature = "{body_file}", "{signature}"\n'
            + WRK_SCRIPT.split("\n", 2)[2]
        )
        result = subprocess.run(
            ["wrk", "-t2", "-c32", "-d10s", "-s", str(script), url + "/webhook"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    if "Non-2xx" in result.stdout:
        raise RuntimeError(f"wrk saw errors:\n{result.stdout}")
    lines = result.stdout.splitlines()
    line = next(x for x in lines if x.startswith("Requests/sec:"))
    total = next(x for x in lines if " requests in " in x)
    return float(line.split()[1]), int(total.split()[0])


def _listening(url: str) -> bool:
    try:
        httpx.post(url + "/webhook", content=b"{}", timeout=2)
    except httpx.TransportError:
        return False
    return True


def serve(kind: str, port: int, stack: str) -> None:
    http, loop = STACKS[stack]
    with tempfile.TemporaryDirectory() as tmp:
        app = bare_app() if kind == "bare" else perfbot_app(Path(tmp) / "perfbot.db")
        # Both as `perfbot serve` runs uvicorn (no proxy headers, no Server header).
        config = server_config(app, "127.0.0.1", port, log_level="warning", http=http, loop=loop)
        uvicorn.Server(config).run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", choices=["bare", "perfbot"])
    parser.add_argument("--port", type=int)
    parser.add_argument("--stack", choices=list(STACKS), default="httptools+uvloop")
    parser.add_argument(
        "--rounds", type=int, default=3, help="throughput rounds per stack; the median counts"
    )
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.stack)
        return
    if shutil.which("wrk") is None:
        print(
            "bench/ingest.py needs wrk to load the servers: install it (apt-get install -y wrk)"
            " and run it again.",
            file=sys.stderr,
        )
        raise SystemExit(2)
    body = delivery_body()
    print(f"signed deliveries of {len(body):,} bytes")
    for stack in STACKS:
        # Rounds alternate bare and perfbot, each on a fresh server: the machine's speed
        # drifts by several per cent from one minute to the next, and would otherwise
        # favour whichever ran at the better moment.
        rates: dict[str, list[float]] = {"bare": [], "perfbot": []}
        cpus: dict[str, list[float]] = {"bare": [], "perfbot": []}
        latencies: dict[str, list[float]] = {}
        for round_number in range(args.rounds):
            for kind, kind_rates in rates.items():
                rate, cpu, measured = measure(kind, stack, body, latency=round_number == 0)
                kind_rates.append(rate)
                cpus[kind].append(cpu)
                latencies.setdefault(kind, measured)
        print(f" uvicorn with {stack} ({args.rounds} rounds, median):")
        for kind, kind_rates in rates.items():
            cuts = statistics.quantiles(latencies[kind], n=100)
            print(
                f"  {kind:8} {statistics.median(kind_rates):7.0f} requests/s (32 connections; "
                f"rounds: {', '.join(f'{r:.0f}' for r in kind_rates)});  at 500 requests/s: "
                f"p50 {cuts[49] * 1000:.1f} ms, p99 {cuts[98] * 1000:.1f} ms;  "
                f"{statistics.median(cpus[kind]) * 1e6:.0f} us of CPU a request"
            )
        ratio = statistics.median(rates["perfbot"]) / statistics.median(rates["bare"])
        ratios = ", ".join(
            f"{p / b:.0%}" for p, b in zip(rates["perfbot"], rates["bare"], strict=True)
        )
        print(
            f"  perfbot throughput = {ratio:.0%} of the bare endpoint's (target >= 75 %;"
            f" round by round {ratios})"
        )
        # Less swayed by the other processes of a shared machine than requests/s: what
        # each server spent per request, whatever share of a core it was given.
        share = statistics.median(cpus["bare"]) / statistics.median(cpus["perfbot"])
        print(f"  perfbot's CPU a request: the bare endpoint's is {share:.0%} of it")


if __name__ == "__main__":
    main()
