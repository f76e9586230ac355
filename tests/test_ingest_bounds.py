"""What an unauthenticated sender can hold at ``POST /webhook``: no memory without a
well-formed signature header, no body over the cap, no body past the deadline, no more
than the budget of unverified bytes at once; and real deliveries still served meanwhile.

The in-process tests drive the ASGI endpoint directly; the ``slow`` one attacks
``perfbot serve`` as a real process over loopback sockets."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from perfbot.app.ingest import SMALL_BODY_BYTES, SMALL_BODY_RESERVE, BodyBudget, WebhookEndpoint
from perfbot.app.processes import LIMIT_CONCURRENCY
from perfbot.app.settings import Settings
from perfbot.app.triage import sign
from perfbot.sandbox.fakegithub import serve
from perfbot.store import SQLiteStore
from perfbot.support.metrics import Metrics
from tests.deadline import within
from tests.harness import (
    INSTALLATION,
    SECRET,
    World,
    perfbot_process,
    settings_env,
    wait_until,
)
from tests.held_bodies import FLOOD_VARIANTS, VARIANTS, rss_bytes, start_senders

Message = MutableMapping[str, Any]
MIB = 1024 * 1024
WELL_FORMED_BUT_WRONG = "sha256=" + "0" * 64


class Responses:
    """What the endpoint sent, by status; ``done`` is set at the end of each answer."""

    def __init__(self) -> None:
        self.sent: list[Message] = []
        self.done = asyncio.Event()

    async def send(self, message: Message) -> None:
        self.sent.append(message)
        if message["type"] == "http.response.body":
            self.done.set()

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.sent[0]["headers"])

    @property
    def json(self) -> Any:
        return json.loads(self.sent[1]["body"])


def scope(headers: dict[str, str]) -> dict[str, Any]:
    raw = [(k.lower().encode(), v.encode("latin-1")) for k, v in headers.items()]
    return {"type": "http", "method": "POST", "path": "/webhook", "headers": raw}


async def never_called() -> Message:
    raise AssertionError("the body was read")


class RecordingStore:
    """A store that accepts every delivery and records the calls ingest makes."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    async def record_delivery(self, *args: Any) -> bool:
        self.calls.append(("record_delivery", *args[:3]))
        return bool(args[0] != "seen-before")

    async def set_suspended(
        self,
        installation_id: int,
        suspended: bool,
        now: float,
        event_time: float | None = None,
        *,
        final: bool = False,
    ) -> bool:
        self.calls.append(("set_suspended", installation_id, suspended))
        return suspended


def endpoint(
    tmp_path: Path,
    store: Any = None,
    *,
    deadline: float = 10.0,
    budget: BodyBudget | None = None,
    **extra: str,
) -> WebhookEndpoint:
    settings = Settings.from_env(settings_env("http://127.0.0.1:9", tmp_path / "db", **extra))
    metrics = Metrics()
    store = store if store is not None else RecordingStore()
    return WebhookEndpoint(
        lambda: (settings, store, metrics, lambda: None),
        lambda: 1000.0,
        body_deadline=deadline,
        budget=budget,
    )


async def call(
    app: WebhookEndpoint, headers: dict[str, str], receive: Callable[[], Awaitable[Message]]
) -> Responses:
    responses = Responses()
    await within(app(scope(headers), receive, responses.send), 10)
    return responses


def one_body(body: bytes) -> Callable[[], Awaitable[Message]]:
    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def signed(
    event: str, payload: dict[str, Any], delivery: str = "guid-1"
) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload).encode()
    headers = {
        "x-github-event": event,
        "x-github-delivery": delivery,
        "x-hub-signature-256": sign(SECRET, body),
        "content-length": str(len(body)),
    }
    return body, headers


@pytest.mark.parametrize(
    "signature",
    [
        None,
        "",
        "sha1=" + "0" * 40,
        "sha256=",
        "sha256=" + "0" * 63,
        "sha256=" + "0" * 65,
        "sha256=" + "g" * 64,
        "sha256 " + "0" * 64,
    ],
    ids=["missing", "empty", "sha1", "no-digest", "63-hex", "65-hex", "not-hex", "no-equals"],
)
async def test_a_malformed_signature_header_is_refused_before_the_body_is_read(
    tmp_path: Path, signature: str | None
) -> None:
    headers = {"x-github-event": "workflow_run", "content-length": str(24 * MIB)}
    if signature is not None:
        headers["x-hub-signature-256"] = signature
    response = await call(endpoint(tmp_path), headers, never_called)
    assert response.status == 401
    assert response.json == {"error": "missing or malformed X-Hub-Signature-256 header"}
    assert response.headers[b"connection"] == b"close"  # nothing more of the body is read


async def test_a_declared_length_over_the_cap_is_refused_before_the_body_is_read(
    tmp_path: Path,
) -> None:
    app = endpoint(tmp_path, PERFBOT_MAX_BODY_BYTES=str(MIB))
    headers = {"x-hub-signature-256": WELL_FORMED_BUT_WRONG, "content-length": str(MIB + 1)}
    response = await call(app, headers, never_called)
    assert response.status == 413
    assert response.headers[b"connection"] == b"close"


async def test_a_chunked_body_is_cut_at_the_cap(tmp_path: Path) -> None:
    chunk = b"x" * (64 * 1024)
    read = 0

    async def endless() -> Message:  # bounded: the test fails long before 1,000 chunks
        nonlocal read
        read += 1
        if read > 1000:
            raise AssertionError("read on past the cap")
        return {"type": "http.request", "body": chunk, "more_body": True}

    app = endpoint(tmp_path, PERFBOT_MAX_BODY_BYTES=str(MIB))
    response = await call(app, {"x-hub-signature-256": WELL_FORMED_BUT_WRONG}, endless)
    assert response.status == 413
    assert response.headers[b"connection"] == b"close"
    assert read == MIB // len(chunk) + 1  # the first chunk past the cap ends the read


async def test_a_stalled_sender_is_answered_408_at_the_deadline(tmp_path: Path) -> None:
    stalled = asyncio.Event()  # never set: the sender holds back the rest
    messages = 0

    async def first_chunk_then_nothing() -> Message:
        nonlocal messages
        messages += 1
        if messages == 1:
            return {"type": "http.request", "body": b'{"action": ', "more_body": True}
        await stalled.wait()
        raise AssertionError("unreachable")

    store = RecordingStore()
    budget = BodyBudget(MIB, MIB)
    app = endpoint(tmp_path, store, deadline=0.05, budget=budget)
    headers = {"x-hub-signature-256": WELL_FORMED_BUT_WRONG, "content-length": "1000"}
    response = await call(app, headers, first_chunk_then_nothing)
    assert response.status == 408
    assert response.headers[b"connection"] == b"close"
    assert messages == 2  # it was waiting for the rest when the deadline passed
    assert budget.used == 0  # what the stalled body held is given back
    assert store.calls == []


class HeldBody:
    """A sender that sends one chunk of its body and holds the rest until released."""

    def __init__(self, chunk: bytes) -> None:
        self.chunk = chunk
        self.first_sent = asyncio.Event()
        self.release = asyncio.Event()

    async def receive(self) -> Message:
        if not self.first_sent.is_set():
            self.first_sent.set()
            return {"type": "http.request", "body": self.chunk, "more_body": True}
        await self.release.wait()
        return {"type": "http.disconnect"}


async def test_large_unverified_bodies_share_a_budget_that_small_deliveries_keep_a_part_of(
    tmp_path: Path,
) -> None:
    budget = BodyBudget(large=2 * MIB, reserve=MIB)
    store = RecordingStore()
    app = endpoint(tmp_path, store, budget=budget)
    attack = {"x-hub-signature-256": WELL_FORMED_BUT_WRONG, "content-length": str(4 * MIB)}
    held = HeldBody(b"x" * (2 * MIB))
    holder = asyncio.create_task(call(app, attack, held.receive))
    await within(held.first_sent.wait(), 5)
    await wait_for(lambda: budget.used == 2 * MIB)  # what it sent, held while it waits

    # A second large body finds no room once it passes the small bodies' size.
    refused = await call(app, attack, chunks(b"x" * SMALL_BODY_BYTES, b"x", b"x"))
    assert refused.status == 503
    assert refused.headers[b"retry-after"] == b"10"
    assert refused.headers[b"connection"] == b"close"

    # A real delivery is small: served from the share large bodies cannot take, even
    # when it arrives in parts.
    body, headers = signed("workflow_run", {"action": "completed"})
    served = await call(app, headers, chunks(body[:10], body[10:]))
    assert served.status == 202
    assert ("record_delivery", "guid-1", "workflow_run", "completed") in store.calls

    held.release.set()
    assert (await within(holder, 5)).sent == []  # it hung up: no answer
    assert budget.used == 0


async def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Until ``condition`` holds, yielding to the event loop; fails after ``timeout``."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        assert loop.time() < end, "condition not met in time"
        await asyncio.sleep(0)


def chunks(*parts: bytes) -> Callable[[], Awaitable[Message]]:
    """A sender of ``parts`` as separate messages, the last one ending the body."""
    left = list(parts)

    async def receive() -> Message:
        chunk = left.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(left)}

    return receive


async def test_a_withheld_body_holds_only_what_it_sent_not_what_it_declared(
    tmp_path: Path,
) -> None:
    # Many requests declaring a small body, each sending a byte and holding the rest:
    # charged up front, 8 of them took the whole budget and every delivery was refused.
    budget = BodyBudget(large=MIB, reserve=MIB)
    app = endpoint(tmp_path, budget=budget)
    attack = {"x-hub-signature-256": WELL_FORMED_BUT_WRONG, "content-length": str(256 * 1024)}
    senders = [HeldBody(b"x") for _ in range(16)]
    holders = [asyncio.create_task(call(app, attack, s.receive)) for s in senders]
    for sender in senders:
        await within(sender.first_sent.wait(), 5)
    await wait_for(lambda: budget.used == len(senders))
    body, headers = signed("workflow_run", {"action": "completed"})
    served = await call(app, headers, chunks(body[:10], body[10:]))
    assert served.status == 202
    for sender in senders:
        sender.release.set()
    await within(asyncio.gather(*holders), 5)
    assert budget.used == 0


async def test_a_body_that_arrives_whole_is_not_refused_when_the_budget_is_full(
    tmp_path: Path,
) -> None:
    budget = BodyBudget(large=MIB, reserve=MIB)
    app = endpoint(tmp_path, budget=budget)
    attack = {"x-hub-signature-256": WELL_FORMED_BUT_WRONG, "content-length": str(4 * MIB)}
    # One held body fills the large share, small ones the reserve: nothing is left for a
    # body that waits for its rest.
    large = HeldBody(b"x" * MIB)
    small = [HeldBody(b"x" * SMALL_BODY_BYTES) for _ in range(MIB // SMALL_BODY_BYTES)]
    holders = [asyncio.create_task(call(app, attack, s.receive)) for s in (large, *small)]
    await wait_for(lambda: budget.used == 2 * MIB)
    parted = await call(app, attack, chunks(b"x", b"x"))
    assert parted.status == 503  # the control: the budget is full
    body, headers = signed("workflow_run", {"action": "completed"})
    served = await call(app, headers, one_body(body))
    assert served.status == 202  # checked at once, nothing held while waiting
    for sender in (large, *small):
        sender.release.set()
    await within(asyncio.gather(*holders), 5)
    assert budget.used == 0


def test_the_reserve_has_room_for_every_request_in_flight_and_one_more() -> None:
    assert SMALL_BODY_RESERVE >= (LIMIT_CONCURRENCY + 1) * SMALL_BODY_BYTES


@pytest.mark.parametrize(
    ("action", "suspended"), [("suspend", True), ("deleted", True), ("unsuspend", False)]
)
async def test_an_installation_suspension_is_recorded_before_the_answer(
    tmp_path: Path, action: str, suspended: bool
) -> None:
    store = SQLiteStore(str(tmp_path / "perfbot.db"))
    await store.setup()
    try:
        app = endpoint(tmp_path, store)
        if not suspended:
            await store.set_suspended(INSTALLATION, True, 0.0)
        payload = {"action": action, "installation": {"id": INSTALLATION}}
        body, headers = signed("installation", payload)
        seen: list[bool] = []
        responses = Responses()

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                seen.append(await store.is_suspended(INSTALLATION))
            await responses.send(message)

        await app(scope(headers), one_body(body), send)
        assert responses.status == 202
        assert responses.json == {"status": "queued"}  # the job still runs (forgets repos)
        assert seen == [suspended]  # already recorded when the answer starts
        assert await store.queue_depth(2000.0) == 1
    finally:
        await store.close()


async def test_a_suspension_is_not_recorded_for_a_repeat_or_an_unsigned_delivery(
    tmp_path: Path,
) -> None:
    store = RecordingStore()
    app = endpoint(tmp_path, store)
    payload = {"action": "suspend", "installation": {"id": INSTALLATION}}
    body, headers = signed("installation", payload, delivery="seen-before")
    repeat = await call(app, headers, one_body(body))
    assert repeat.json == {"status": "duplicate"}
    forged = await call(
        app, {**headers, "x-hub-signature-256": WELL_FORMED_BUT_WRONG}, one_body(body)
    )
    assert forged.status == 401
    assert store.calls == [("record_delivery", "seen-before", "installation", "suspend")]
    fresh_body, fresh = signed("installation", payload, delivery="guid-9")
    assert (await call(app, fresh, one_body(fresh_body))).status == 202
    assert store.calls[-1] == ("set_suspended", INSTALLATION, True)  # the control: it runs


def installation_payload(action: str, at: str) -> dict[str, Any]:
    """An installation event as GitHub sends it: its time in the installation object."""
    installation = {"id": INSTALLATION, "updated_at": at}
    if action == "suspend":
        installation["suspended_at"] = at
    return {"action": action, "installation": installation}


@pytest.mark.parametrize("redelivered_first", [False, True])
async def test_a_suspend_redelivered_after_its_unsuspend_leaves_the_installation_active(
    tmp_path: Path, redelivered_first: bool
) -> None:
    store = SQLiteStore(str(tmp_path / "perfbot.db"))
    await store.setup()
    try:
        settings = Settings.from_env(settings_env("http://127.0.0.1:9", tmp_path / "db"))
        metrics = Metrics()
        arrivals = iter(range(1000, 2000))  # perfbot's clock moves on between the two
        app = WebhookEndpoint(
            lambda: (settings, store, metrics, lambda: None), lambda: float(next(arrivals))
        )
        suspend = signed(
            "installation", installation_payload("suspend", "2021-04-29T02:32:50Z"), "guid-s"
        )
        unsuspend = signed(
            "installation",
            installation_payload("unsuspend", "2021-04-28T23:40:00.000-04:00"),  # 03:40 UTC
            "guid-u",
        )
        # GitHub's order, or the suspend's delivery lost and redelivered by the sweep.
        order = [unsuspend, suspend] if redelivered_first else [suspend, unsuspend]
        states = []
        for body, headers in order:
            assert (await call(app, headers, one_body(body))).json == {"status": "queued"}
            states.append(await store.is_suspended(INSTALLATION))
        # Suspended in between only in GitHub's order (the control); active at the end.
        assert states == ([False, False] if redelivered_first else [True, False])
    finally:
        await store.close()


FLOOD = LIMIT_CONCURRENCY + 44  # connections per flood variant


@pytest.mark.slow
def test_held_bodies_hold_little_memory_are_cut_off_and_real_deliveries_get_through(
    tmp_path: Path,
) -> None:
    world = World.create()
    pull = world.pull(7, "a" * 40)
    run = world.measured_run(pull, 1001)
    with serve(world.fake) as fake:
        env = settings_env(fake.api_url, tmp_path / "perfbot.db")
        with perfbot_process(env, tmp_path / "perfbot.log") as bot:
            port = int(str(bot.client.base_url).rsplit(":", 1)[1].rstrip("/"))
            pid = bot.process.pid  # the process this test started
            before = rss_bytes(pid)
            senders = start_senders(port, per_variant=12)
            # More connections than the requests served at once, each holding a place.
            senders += start_senders(port, FLOOD, FLOOD_VARIANTS)
            try:
                # While they hold their bodies, GitHub's delivery is served and queued.
                wait_until(lambda: all(s.sent or not s.thread.is_alive() for s in senders), 20)
                body, headers = world.delivery(run, delivery_id="real-1")
                response = bot.client.post("/webhook", content=body, headers=headers)
                assert (response.status_code, response.json()) == (202, {"status": "queued"})
                # Every held connection is closed by the server, whatever its sender does.
                deadline = time.monotonic() + 20
                still_open = [s.variant.name for s in senders if s.wait_closed(deadline) is None]
                assert still_open == [], f"open after 20 s: {still_open}"
                peak = rss_bytes(pid, "VmHWM")
            finally:
                for sender in senders:
                    sender.close()
            wait_until(lambda: len(world.bot_comments(7)) == 1, 30, "the real delivery's comment")
    assert len(senders) == 12 * len(VARIANTS) + FLOOD * len(FLOOD_VARIANTS)
    assert peak - before < 150 * 1024 * 1024, f"RSS grew {(peak - before) / 2**20:.0f} MiB"


async def test_a_content_length_that_is_not_ascii_digits_is_not_trusted(tmp_path: Path) -> None:
    body, headers = signed("workflow_run", {"action": "completed"})
    response = await call(endpoint(tmp_path), {**headers, "content-length": "²"}, one_body(body))
    assert response.status == 202  # counted as it came, as a chunked body is


async def test_a_cancelled_read_stays_cancelled_and_gives_its_budget_back(tmp_path: Path) -> None:
    budget = BodyBudget(MIB, MIB)
    app = endpoint(tmp_path, budget=budget)
    held = HeldBody(b"x" * 1024)
    headers = {"x-hub-signature-256": WELL_FORMED_BUT_WRONG, "content-length": "4096"}
    reading = asyncio.create_task(call(app, headers, held.receive))
    await within(held.first_sent.wait(), 5)
    await wait_for(lambda: budget.used == 1024)
    reading.cancel()  # as uvicorn's shutdown would: not a 408
    with pytest.raises(asyncio.CancelledError):
        await reading
    assert budget.used == 0
