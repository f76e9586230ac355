"""``POST /webhook``: verify, de-duplicate and enqueue a delivery, then answer at once.

A plain ASGI app that ``perfbot.app.server`` serves ahead of Starlette's middleware and router,
rather than a Starlette request handler: every delivery GitHub sends passes through
here, and the Request, the Response, the router and the middleware per delivery cost a
quarter of the whole ingest (``bench/ingest.py``). So it answers an unexpected error
with a 500 itself, as Starlette's error middleware would. A request whose body comes with
its head, or within a moment after it, does not even take the ASGI path: perfbot's
protocol hands its head and body to ``answer_whole`` (``perfbot.app.fastpath``), which
checks and answers it as ``__call__`` does once the body is read.

Anyone can send a body here, and a body is only known to be GitHub's once it has been
read in full and its HMAC checked. So what an unverified sender can hold is bounded
before that: a malformed signature header is refused before a byte of the body is read;
a declared size over ``PERFBOT_MAX_BODY_BYTES`` at once, a chunked body when it passes
it; the body must arrive within ``BODY_DEADLINE_SECONDS``; and the bytes held while
waiting for the rest of a body stay within a budget (``BodyBudget``), charged as they
arrive, not as declared, so a request that has sent only its head holds none of it.
The last part of a body is never charged: it is checked at once, with nothing awaited,
so a delivery that arrives whole (GitHub sends it at once) is never refused for want of
budget. Bodies of up to ``SMALL_BODY_BYTES`` so far may use a reserve that larger ones
cannot take, as large as all requests in flight could hold of it. Every refusal closes
the connection, so nothing the sender still sends is read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

import orjson

from perfbot.app.routes import job_for
from perfbot.app.settings import Settings
from perfbot.app.suspension import event_time
from perfbot.app.triage import (
    MALFORMED_SIGNATURE,
    BodyTimeout,
    Busy,
    PayloadTooLarge,
    SignatureMismatch,
    WebhookError,
    parse_delivery,
    signature_well_formed,
    verify_signature,
)
from perfbot.github.manifest import EVENTS
from perfbot.store import Store
from perfbot.support.metrics import Metrics

log = logging.getLogger("perfbot.app")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
# What the app's lifespan opened: the settings, the store, the metrics, the workers' wake-up.
_Services = tuple[Settings, Store, Metrics, Callable[[], None]]
# An answer: its ASGI start and body messages.
Answer = tuple[Message, Message]

# The only request headers ingest reads; the rest are never decoded.
_HEADERS = frozenset(
    {b"x-github-event", b"x-github-delivery", b"x-hub-signature-256", b"content-length"}
)

# Event names a metric label may carry: those perfbot subscribes to, those every App gets,
# and ping. A request that fails the signature check could name anything, and every new
# label value is a new time series kept for the life of the process.
KNOWN_EVENTS = frozenset({*EVENTS, "installation", "installation_repositories", "ping"})

# installation actions whose suspension ingest records itself, before answering: a job
# already running re-checks it before each write, and must see it at once, not when the
# delivery's own job runs. ``deleted`` counts as suspended (the handler does the same).
_SUSPENDS = {"suspend": True, "deleted": True, "unsuspend": False}

# GitHub gives up on a delivery after 10 s: a body still arriving after that is not one
# GitHub waits for.
BODY_DEADLINE_SECONDS = 10.0
# Every real delivery is tens of KB: while a body has sent no more than this, it may use a
# share of the budget (the reserve) that larger and chunked bodies past it cannot take.
SMALL_BODY_BYTES = 64 * 1024
# perfbot.app.processes.LIMIT_CONCURRENCY (256) requests and one more, each holding all it
# may of the reserve: at the limit, a new request closes the one waiting longest for its
# body, which gives its part back only when its task next runs, just after the new one's
# first read. So the reserve has room for a small body whatever the others hold (their
# parts past SMALL_BODY_BYTES take only LARGE_BODY_BUDGET). A test checks the constants.
SMALL_BODY_RESERVE = (256 + 1) * SMALL_BODY_BYTES
# The budget beside that share: at least two of the largest bodies at once.
LARGE_BODY_BUDGET = 32 * 1024 * 1024
# A full budget is a burst that clears within a deadline.
RETRY_AFTER_SECONDS = 10


class BodyBudget:
    """The bytes of unverified bodies one process holds while waiting for their rest.

    Bodies that have sent at most ``SMALL_BODY_BYTES`` may use all of it; past that they
    stop ``reserve`` short, so senders of large bodies cannot starve GitHub's
    deliveries. Single-threaded (the event loop): no lock.
    """

    __slots__ = ("_large_limit", "_total", "used")

    def __init__(self, large: int, reserve: int) -> None:
        self._large_limit = large
        self._total = large + reserve
        self.used = 0

    def take(self, size: int, small: bool) -> bool:
        if self.used + size > (self._total if small else self._large_limit):
            return False
        self.used += size
        return True

    def give(self, size: int) -> None:
        self.used -= size


def budget_for(max_body_bytes: int) -> BodyBudget:
    return BodyBudget(max(LARGE_BODY_BUDGET, 2 * max_body_bytes), SMALL_BODY_RESERVE)


def _answer(status: int, body: bytes, *extra: tuple[bytes, bytes]) -> Answer:
    start = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *extra,
        ],
    }
    return start, {"type": "http.response.body", "body": body}


# A refusal closes the connection (uvicorn closes it after a `connection: close` answer):
# the rest of a body perfbot did not read is never read, and the sender holds nothing.
_CLOSE = (b"connection", b"close")
_RETRY = (b"retry-after", str(RETRY_AFTER_SECONDS).encode())


# The answers to deliveries that pass the checks, built once: every delivery gets one.
_ANSWERS = {
    outcome: _answer(202, f'{{"status":"{outcome}"}}'.encode())
    for outcome in ("queued", "ignored", "duplicate")
}
_PONG = _answer(200, b'{"status":"pong"}')
# Nothing of the error itself: GitHub shows the answer in the App's delivery log.
_FAILED = _answer(500, b'{"error":"internal error: see the perfbot log"}')


class WebhookEndpoint:
    """The ASGI app of ``POST /webhook``.

    ``services`` returns what the app's lifespan opened: the settings, the store, the
    metrics, and the callback that wakes the workers.
    """

    def __init__(
        self,
        services: Callable[[], _Services],
        clock: Callable[[], float],
        *,
        body_deadline: float = BODY_DEADLINE_SECONDS,
        budget: BodyBudget | None = None,
    ) -> None:
        self._services = services
        self._clock = clock
        self._counters: dict[tuple[str, str], Any] = {}
        self._deadline = body_deadline
        self._budget = budget  # made from the settings at the first delivery unless given
        # The reads under way and when each must end; one sweep a second (while there are
        # any) cancels those past it. A timer per read cost 2 µs a delivery; this, 0.3.
        self._reading: dict[asyncio.Task[Any], float] = {}
        self._sweep_interval = min(1.0, body_deadline / 4)
        self._sweeper: tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle] | None = None
        # Reads the sweep cancelled (read where the read stops, to answer 408).
        self._expired: set[asyncio.Task[Any]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _read_headers(scope["headers"])
        try:
            answer = await self._answer(headers, receive)
        except Exception:
            answer = _failed(headers)
        if answer is not None:
            await _send(send, answer)

    async def answer_whole(self, raw_headers: list[tuple[bytes, bytes]], body: bytes) -> Answer:
        """The answer to a delivery whose body has arrived whole, the one ``__call__``
        would send (``perfbot.app.fastpath``: a request read whole without ASGI)."""
        headers = _read_headers(raw_headers)
        try:
            return await self._answer_whole(headers, body)
        except Exception:
            return _failed(headers)

    def refuses_unread(self, raw_headers: list[tuple[bytes, bytes]]) -> bool:
        """Whether a request with these headers is refused before a byte of its body is
        read (a missing or malformed signature header): the fast path then waits for no
        body, and hands the request to ``__call__`` at once."""
        try:
            _signature(_read_headers(raw_headers))
        except WebhookError:
            return True
        return False

    async def _answer_whole(self, headers: dict[bytes, str], body: bytes) -> Answer:
        services = self._services()
        event = headers.get(b"x-github-event", "unknown")
        try:
            signature = _signature(headers)
            limit = services[0].max_body_bytes
            if len(body) > limit:
                raise _too_large(limit)
            return await self._answer_body(services, headers, event, signature, body)
        except WebhookError as exc:
            return self._refused(services[2], event, headers, exc)

    async def _answer(self, headers: dict[bytes, str], receive: Receive) -> Answer | None:
        """The answer to one delivery, or None when the sender hung up before the end."""
        services = self._services()
        event = headers.get(b"x-github-event", "unknown")
        try:
            signature = _signature(headers)  # not one byte of the body read before
            body = await self._read_body(
                receive, headers.get(b"content-length"), services[0].max_body_bytes
            )
            if body is None:
                return None
            return await self._answer_body(services, headers, event, signature, body)
        except WebhookError as exc:
            return self._refused(services[2], event, headers, exc)

    async def _answer_body(
        self,
        services: _Services,
        headers: dict[bytes, str],
        event: str,
        signature: str,
        body: bytes,
    ) -> Answer:
        """The answer to a delivery read whole (raises WebhookError when it is refused)."""
        settings, store, metrics, on_enqueue = services
        verify_signature(settings.webhook_secret, body, signature)
        delivery = parse_delivery(
            {"x-github-delivery": headers.get(b"x-github-delivery", ""), "x-github-event": event},
            body,
        )
        if delivery.event == "ping":
            self._count(metrics, "ping", "ping")
            return _PONG
        # A repository the operator denies gets not even a job to look at.
        job = job_for(delivery, settings.repo_disabled)
        fresh = await store.record_delivery(
            delivery.id, delivery.event, delivery.action, job, self._clock()
        )
        if fresh and delivery.event == "installation" and delivery.action in _SUSPENDS:
            installation_id = delivery.installation_id
            if installation_id is not None:
                # Before the answer: a job running for this installation re-checks it
                # before each write. The queued job still runs (it forgets repositories).
                # In GitHub's order, not arrival's: a suspend redelivered after its
                # unsuspend is older, and changes nothing.
                await store.set_suspended(
                    installation_id,
                    _SUSPENDS[delivery.action],
                    self._clock(),
                    event_time(delivery.payload.get("installation")),
                    final=delivery.action == "deleted",
                )
        outcome = "duplicate" if not fresh else "queued" if job is not None else "ignored"
        # Signed by GitHub, so the event name is GitHub's own: a bounded set of labels.
        self._count(metrics, delivery.event[:50], outcome)
        if fresh and job is not None:
            on_enqueue()
        return _ANSWERS[outcome]

    def _refused(
        self, metrics: Metrics, event: str, headers: dict[bytes, str], exc: WebhookError
    ) -> Answer:
        label = event if event in KNOWN_EVENTS else "other"
        self._count(metrics, label, f"rejected_{exc.status}")
        log.warning(
            "delivery rejected (%s): %s",
            exc.status,
            exc,
            extra={"delivery": headers.get(b"x-github-delivery", "")[:100]},
        )
        extra = (_CLOSE, _RETRY) if exc.status == Busy.status else (_CLOSE,)
        return _answer(exc.status, orjson.dumps({"error": str(exc)}), *extra)

    async def _read_body(self, receive: Receive, declared: str | None, limit: int) -> bytes | None:
        """The body, or None when the client disconnected; raises PayloadTooLarge past
        ``limit``, Busy when the budget has no room, BodyTimeout past the deadline."""
        budget = self._budget
        if budget is None:
            budget = self._budget = budget_for(limit)
        # uvicorn refuses any other value; "²".isdigit() is true, so ASCII first. Nothing
        # of the budget yet: a body costs what it has sent, not what it declares.
        if (
            declared is not None
            and declared.isascii()
            and declared.isdigit()
            and int(declared) > limit
        ):
            raise _too_large(limit)
        held = 0
        task = asyncio.current_task()
        assert task is not None  # an ASGI app runs in a task
        loop = asyncio.get_running_loop()
        self._reading[task] = loop.time() + self._deadline
        if self._sweeper is None or self._sweeper[0] is not loop:
            self._sweeper = (loop, loop.call_later(self._sweep_interval, self._sweep))
        try:
            chunks: list[bytes] = []
            size = 0
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return None
                chunk: bytes = message.get("body", b"")
                size += len(chunk)
                if size > limit:  # a chunked body, or a declared one still arriving
                    raise _too_large(limit)
                if not message.get("more_body", False):
                    # The end: checked before anything else is awaited, so not charged.
                    if not chunks:
                        return chunk
                    chunks.append(chunk)
                    return b"".join(chunks)
                # Held while the rest comes: charged as it came.
                if not budget.take(len(chunk), size <= SMALL_BODY_BYTES):
                    raise Busy("too many webhook bodies are being received: retry shortly")
                held += len(chunk)
                chunks.append(chunk)
        except asyncio.CancelledError:
            # Ours alone: a cancellation from elsewhere too (shutdown) goes on as one.
            if task not in self._expired or task.uncancel() > 0:
                raise
            raise BodyTimeout(
                f"the body did not arrive within {self._deadline:g} seconds"
            ) from None
        finally:
            del self._reading[task]
            self._expired.discard(task)
            budget.give(held)

    def _sweep(self) -> None:
        """Cancel the reads past their deadline; again in a while, as long as any remain."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        for task, due in list(self._reading.items()):
            if due <= now and task not in self._expired:
                self._expired.add(task)
                task.cancel()
        if self._reading:
            self._sweeper = (loop, loop.call_later(self._sweep_interval, self._sweep))
        else:
            self._sweeper = None

    def _count(self, metrics: Metrics, event: str, outcome: str) -> None:
        # prometheus-client's labels() costs more than the increment: keep the children.
        key = (event, outcome)
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = metrics.deliveries.labels(event, outcome)
        counter.inc()


def _read_headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[bytes, str]:
    headers: dict[bytes, str] = {}
    for name, value in raw:
        if name in _HEADERS and name not in headers:  # the first of repeated headers
            headers[name] = value.decode("latin-1")
    return headers


def _signature(headers: dict[bytes, str]) -> str:
    """The signature header, or SignatureMismatch when it is missing or malformed."""
    signature = headers.get(b"x-hub-signature-256")
    if signature is None or not signature_well_formed(signature.strip()):
        raise SignatureMismatch(MALFORMED_SIGNATURE)
    return signature


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"the body is larger than this server's {limit} bytes")


def _failed(headers: dict[bytes, str]) -> Answer:
    # Served ahead of Starlette's error middleware: this is that middleware's job.
    log.exception(
        "delivery failed", extra={"delivery": headers.get(b"x-github-delivery", "")[:100]}
    )
    return _FAILED


async def _send(send: Send, answer: Answer) -> None:
    start, body = answer
    await send(start)
    await send(body)
