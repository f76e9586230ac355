"""``POST /webhook``: verify, de-duplicate and enqueue a delivery, then answer at once.

A plain ASGI app that ``perfbot.app`` serves ahead of Starlette's middleware and router,
rather than a Starlette request handler: every delivery GitHub sends passes through
here, and the Request, the Response, the router and the middleware per delivery cost a
quarter of the whole ingest (``bench/ingest.py``). So it answers an unexpected error
with a 500 itself, as Starlette's error middleware would.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

from perfbot.manifest import EVENTS
from perfbot.metrics import Metrics
from perfbot.settings import Settings
from perfbot.store import Store
from perfbot.webhooks import (
    MAX_BODY_BYTES,
    PayloadTooLarge,
    WebhookError,
    job_for,
    parse_delivery,
    verify_signature,
)

log = logging.getLogger("perfbot.app")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# The only request headers ingest reads; the rest are never decoded.
_HEADERS = frozenset(
    {b"x-github-event", b"x-github-delivery", b"x-hub-signature-256", b"content-length"}
)

# Event names a metric label may carry: those perfbot subscribes to, those every App gets,
# and ping. A request that fails the signature check could name anything, and every new
# label value is a new time series kept for the life of the process.
KNOWN_EVENTS = frozenset({*EVENTS, "installation", "installation_repositories", "ping"})


def _answer(status: int, body: bytes) -> tuple[Message, Message]:
    start = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    return start, {"type": "http.response.body", "body": body}


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
        services: Callable[[], tuple[Settings, Store, Metrics, Callable[[], None]]],
        clock: Callable[[], float],
    ) -> None:
        self._services = services
        self._clock = clock
        self._counters: dict[tuple[str, str], Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers: dict[bytes, str] = {}
        for name, value in scope["headers"]:
            if name in _HEADERS and name not in headers:  # the first of repeated headers
                headers[name] = value.decode("latin-1")
        try:
            answer = await self._answer(headers, receive)
        except Exception:
            # Served ahead of Starlette's error middleware: this is that middleware's job.
            log.exception(
                "delivery failed", extra={"delivery": headers.get(b"x-github-delivery", "")[:100]}
            )
            answer = _FAILED
        if answer is not None:
            await _send(send, answer)

    async def _answer(
        self, headers: dict[bytes, str], receive: Receive
    ) -> tuple[Message, Message] | None:
        """The answer to one delivery, or None when the sender hung up before the end."""
        settings, store, metrics, on_enqueue = self._services()
        event = headers.get(b"x-github-event", "unknown")
        try:
            body = await _read_body(receive, headers.get(b"content-length", ""))
            if body is None:
                return None
            verify_signature(settings.webhook_secret, body, headers.get(b"x-hub-signature-256"))
            delivery = parse_delivery(
                {
                    "x-github-delivery": headers.get(b"x-github-delivery", ""),
                    "x-github-event": event,
                },
                body,
            )
        except WebhookError as exc:
            label = event if event in KNOWN_EVENTS else "other"
            self._count(metrics, label, f"rejected_{exc.status}")
            log.warning(
                "delivery rejected (%s): %s",
                exc.status,
                exc,
                extra={"delivery": headers.get(b"x-github-delivery", "")[:100]},
            )
            return _answer(exc.status, orjson.dumps({"error": str(exc)}))
        if delivery.event == "ping":
            self._count(metrics, "ping", "ping")
            return _PONG
        job = job_for(delivery)
        repo = delivery.repository
        if job is not None and repo is not None and settings.repo_disabled(repo):
            job = None  # the operator denies the repository: not even a job to look at
        fresh = await store.record_delivery(
            delivery.id, delivery.event, delivery.action, job, self._clock()
        )
        outcome = "duplicate" if not fresh else "queued" if job is not None else "ignored"
        # Signed by GitHub, so the event name is GitHub's own: a bounded set of labels.
        self._count(metrics, delivery.event[:50], outcome)
        if fresh and job is not None:
            on_enqueue()
        return _ANSWERS[outcome]

    def _count(self, metrics: Metrics, event: str, outcome: str) -> None:
        # prometheus-client's labels() costs more than the increment: keep the children.
        key = (event, outcome)
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = metrics.deliveries.labels(event, outcome)
        counter.inc()


async def _read_body(receive: Receive, declared: str) -> bytes | None:
    """The request body, or None when the client disconnected; PayloadTooLarge past 25 MB."""
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise PayloadTooLarge("the body is larger than GitHub's 25 MB payload limit")
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise PayloadTooLarge("the body is larger than GitHub's 25 MB payload limit")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _send(send: Send, answer: tuple[Message, Message]) -> None:
    start, body = answer
    await send(start)
    await send(body)
