"""The wire under every GitHub request (perfbot/github/wire.py, pools.py, httpx_edge.py) and
the direct calls sent into it (direct.py): each layer's one rule, and a direct call's
credential, headers and errors as githubkit's own calls have them."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncGenerator, Callable

import httpx
import pytest
from githubkit.auth.app import AppAuth
from multidict import CIMultiDict

from perfbot.github import wire
from perfbot.github.app import GitHubApp
from perfbot.github.dryrun import SYNTHETIC_BASE, DryRun
from perfbot.github.errors import GitHubError, GitHubUnavailable, RateLimited
from perfbot.github.pools import Pools
from perfbot.github.storage import fetch_blob
from perfbot.github.wire import API_VERSION, API_VERSION_HEADER, Answer, Call, Metered
from perfbot.sandbox.fakegithub import rsa_keypair
from perfbot.support.metrics import Metrics
from tests.rawpeer import header_lines, peer_answering

BASE = "https://api.example.test"
TOKEN_PATH = "/app/installations/5/access_tokens"


def call(method: str = "GET", url: str = f"{BASE}/repos/a/b", **headers: str) -> Call:
    return Call(method, url, httpx.URL(url).path, CIMultiDict(headers))


class Recording:
    """A wire that answers every call with ``answer`` and keeps the calls."""

    def __init__(self, answer: Answer | None = None) -> None:
        self.calls: list[Call] = []
        self._answer = answer or Answer(200, {}, b"{}")

    async def send(self, sent: Call, limit: int | None = None) -> Answer:
        self.calls.append(sent)
        return self._answer

    async def close(self) -> None:
        pass


async def test_every_api_request_names_the_one_api_version() -> None:
    inner = Recording()
    versioned = wire.ApiVersioned(inner)
    await versioned.send(call())
    await versioned.send(call(**{API_VERSION_HEADER: "2022-11-28"}))  # githubkit's own, say
    older = wire.ApiVersioned(inner, "2022-11-28")
    await older.send(call(**{API_VERSION_HEADER: API_VERSION}))
    assert [c.headers[API_VERSION_HEADER] for c in inner.calls] == [
        API_VERSION,
        API_VERSION,
        "2022-11-28",
    ]
    with pytest.raises(ValueError, match="no REST API version '2023-01-01'"):
        wire.ApiVersioned(inner, "2023-01-01")


class _Slow:
    """A raw wire whose answer takes ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds

    async def open(self, sent: Call) -> wire.Opened:
        await asyncio.sleep(self._seconds)
        raise AssertionError("the deadline should have ended the call")

    async def close(self) -> None:
        pass


def counted(metrics: Metrics) -> dict[tuple[str, str], float]:
    return {
        (sample.labels["method"], sample.labels["status"]): sample.value
        for metric in metrics.github_calls.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    }


async def test_the_deadline_ends_a_call_and_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "DEADLINE_SECONDS", 0.05)
    metrics = Metrics()
    async with asyncio.timeout(10):  # a guard against a hang of the test itself
        with pytest.raises(TimeoutError, match="deadline"):
            await Metered(_Slow(5), metrics).send(call("POST"))
    assert counted(metrics) == {("POST", "deadline"): 1.0}


def answer(status: str, body: bytes = b"", *headers: str) -> bytes:
    head = "".join(f"{line}\r\n" for line in (*headers, f"Content-Length: {len(body)}"))
    return f"HTTP/1.1 {status}\r\n{head}\r\n".encode() + body


async def test_the_pools_follow_no_redirect_bound_a_body_and_undo_gzip() -> None:
    answers = (
        answer("302 Found", b"", "Location: /elsewhere"),
        answer("200 OK", b"x" * 10_000),
        answer("200 OK", b"x" * 10_000),
        answer("200 OK", gzip.compress(b'{"ok": true}'), "Content-Encoding: gzip"),
    )
    metrics = Metrics()
    async with peer_answering(*answers) as peer:
        base = peer.url
        pools = Metered(Pools(4), metrics)
        try:
            redirect = await pools.send(call(url=f"{base}/moved", **{"User-Agent": "perfbot"}))
            cut = await pools.send(call(url=f"{base}/big"), limit=4_000)
            whole = await pools.send(call(url=f"{base}/big"), limit=10_000)
            unzipped = await pools.send(call(url=f"{base}/zipped"))
        finally:
            await pools.close()
    assert (redirect.status_code, redirect.headers["location"]) == (302, "/elsewhere")
    # Only the call's own headers (and the ones HTTP needs), no library's defaults.
    assert header_lines(peer.requests[0]) == [
        ("Host", base.removeprefix("http://")),
        ("User-Agent", "perfbot"),
    ]
    assert (cut.whole, len(cut.content)) == (False, 4_000)
    assert (whole.whole, len(whole.content)) == (True, 10_000)
    assert json.loads(unzipped.content) == {"ok": True}
    assert counted(metrics) == {("GET", "302"): 1.0, ("GET", "200"): 3.0}


async def test_the_pools_send_exactly_the_calls_headers_in_their_order() -> None:
    """What HTTP/1.1 needs added (a Host, a body's length) and nothing else: no User-Agent,
    Accept, Accept-Encoding or Content-Type the call did not name itself."""
    api = {
        "User-Agent": "GitHubKit/Python",
        "Accept": "application/vnd.github+json",
        "Accept-Encoding": "gzip, deflate",
        "Authorization": "token t",
    }
    lower = {name.lower(): value for name, value in api.items()}  # as httpx's edge names them
    sent = [
        ("GET", {"User-Agent": "perfbot"}, None),  # the storage's download
        ("GET", api, None),
        ("POST", {**api, "Content-Type": "application/json"}, b'{"a":1}'),
        ("PATCH", {"User-Agent": "u", "Accept": "*/*"}, b"x"),
        ("GET", lower, None),
        ("GET", {}, None),
    ]
    async with peer_answering(*[answer("200 OK", b"{}")] * len(sent)) as peer:
        base = peer.url
        pools = Metered(Pools(4), None)
        try:
            for method, headers, body in sent:
                await pools.send(Call(method, f"{base}/x", "/x", CIMultiDict(headers), body))
        finally:
            await pools.close()
    host = ("Host", base.removeprefix("http://"))
    assert [header_lines(request) for request in peer.requests] == [
        [host, ("User-Agent", "perfbot")],
        [host, *api.items()],
        [host, *api.items(), ("Content-Type", "application/json"), ("Content-Length", "7")],
        [host, ("User-Agent", "u"), ("Accept", "*/*"), ("Content-Length", "1")],
        [host, *lower.items()],
        [host],
    ]
    assert [request.split(b" ", 1)[0] for request in peer.requests] == [
        method.encode() for method, _, _ in sent
    ]


async def test_an_artifact_past_its_limit_is_refused_and_storage_sees_no_credential() -> None:
    blob = answer("200 OK", b"z" * 5_000)
    async with peer_answering(blob, blob, answer("404 Not Found", b"n" * 5_000)) as peer:
        base = peer.url
        storage = Metered(Pools(4), None)
        try:
            assert await fetch_blob(storage, f"{base}/blob?sig=s", 5_000) == b"z" * 5_000
            with pytest.raises(GitHubError, match="larger than 4999 bytes"):
                await fetch_blob(storage, f"{base}/blob?sig=s", 4_999)
            # The status decides before the size: a long 404 is a gone artifact.
            with pytest.raises(GitHubError, match="storage answered 404"):
                await fetch_blob(storage, f"{base}/gone", 100)
        finally:
            await storage.close()
    assert [request.split(b" ", 2)[1] for request in peer.requests] == [
        b"/blob?sig=s",
        b"/blob?sig=s",
        b"/gone",
    ]
    assert all(
        name.lower() != "authorization"
        for request in peer.requests
        for name, _ in header_lines(request)
    )


Handler = Callable[[httpx.Request], httpx.Response]


def github(handler: Handler, dry_run: DryRun | None = None) -> GitHubApp:
    return GitHubApp(
        5, rsa_keypair().private_pem, BASE, transport=httpx.MockTransport(handler), dry_run=dry_run
    )


def token_or(answer: Handler, log: list[httpx.Request]) -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        log.append(request)
        if request.url.path == TOKEN_PATH:
            return httpx.Response(
                201, json={"token": "ghs_t", "expires_at": "2099-01-01T00:00:00Z"}
            )
        return answer(request)

    return handle


PULL = {
    "number": 7,
    "state": "open",
    "title": "t",
    "comments": 0,
    "labels": [],
    "head": {"sha": "a" * 40, "ref": "f", "repo": {"id": 1}},
    "base": {"sha": "b" * 40, "ref": "main", "repo": {"id": 1}},
}


async def test_a_direct_call_takes_the_token_from_the_cache_after_one_exchange(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    flows: list[str] = []
    flow = AppAuth.async_auth_flow

    def counted_flow(
        self: AppAuth, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        flows.append(request.url.path)
        return flow(self, request)

    monkeypatch.setattr(AppAuth, "async_auth_flow", counted_flow)
    log: list[httpx.Request] = []
    app = github(token_or(lambda r: httpx.Response(200, json=PULL), log))
    try:
        for _ in range(3):
            async with app.installation(5) as calls:
                pull = await calls.get_pull("acme", "widget", 7)
                assert pull is not None
                assert pull.number == 7
    finally:
        await app.close()
    assert [r.url.path for r in log] == [TOKEN_PATH] + ["/repos/acme/widget/pulls/7"] * 3
    # githubkit's auth flow ran once, for the exchange: the later calls found the token.
    assert flows == ["/repos/acme/widget/pulls/7"]
    assert log[0].headers["authorization"].startswith("Bearer ")
    for request in log:
        assert request.headers[API_VERSION_HEADER] == API_VERSION
        assert request.headers["user-agent"].startswith("perfbot/")
    assert {r.headers["authorization"] for r in log[1:]} == {"token ghs_t"}
    assert log[1].headers["accept"] == "application/vnd.github+json"


async def test_a_direct_calls_errors_are_githubkits_mapped_once() -> None:
    answers = iter(
        [
            httpx.Response(403, headers={"retry-after": "7"}, json={"message": "slow down"}),
            httpx.Response(404, json={"message": "Not Found"}),
            httpx.Response(502, text="bad gateway"),
        ]
        + [httpx.Response(502, text="bad gateway")] * 3
    )
    app = github(token_or(lambda r: next(answers), []))
    try:
        async with app.installation(5) as calls:
            with pytest.raises(RateLimited) as limited:
                await calls.create_comment("acme", "widget", 7, "hi")
            assert limited.value.retry_after == 7
            assert await calls.update_comment("acme", "widget", 9, "hi") is None
            with pytest.raises(GitHubUnavailable, match="502"):
                await calls.get_pull("acme", "widget", 7)
    finally:
        await app.close()


async def test_a_direct_write_in_a_dry_run_stops_at_the_gate() -> None:
    log: list[httpx.Request] = []
    dry_run = DryRun()
    app = github(token_or(lambda r: httpx.Response(500), log), dry_run)
    try:
        async with app.installation(5) as calls:
            made = await calls.create_comment("acme", "widget", 7, "would be posted")
            check = await calls.upsert_check_run(
                "acme",
                "widget",
                check_run_id=None,
                name="perfbot",
                head_sha="a" * 40,
                conclusion="success",
                title="t",
                summary="s",
            )
    finally:
        await app.close()
    assert made.id > SYNTHETIC_BASE
    assert check > SYNTHETIC_BASE
    assert [w.kind for w in dry_run.entries()] == ["check_run", "comment"]
    # Nothing but the token exchange (a read's credential) reached GitHub.
    assert [r.url.path for r in log] == [TOKEN_PATH]
