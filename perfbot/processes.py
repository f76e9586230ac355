"""uvicorn as perfbot runs it (``server_config``), in one process or several.

Several ``perfbot serve`` processes share one port (``PERFBOT_PROCESSES`` > 1): uvicorn's
supervisor binds the socket once and starts the processes; each builds its app from the
environment (``perfbot.app.app_from_environment``). The processes share the store
(SQLite in WAL mode, or PostgreSQL), which already serialises the jobs of one pull
request and hands each job to one worker, so they need nothing else in common.

Anyone can connect, so the server's own limits are chosen, not defaults: what a request
may hold before perfbot's ingest sees it (``BoundedHttpTools``: its head), and how many
connections there may be (``server_config``). The body is ingest's (``perfbot.ingest``).
"""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.supervisors import Multiprocess

from perfbot.app import LOG_LEVEL_VARIABLE
from perfbot.metrics import MULTIPROCESS_METRICS_VARIABLE

APP_FACTORY = "perfbot.app:app_from_environment"

# A request's line and headers: GitHub's are about 1.5 KB. h11 refuses a head over this
# itself (h11_max_incomplete_event_size); httptools has no limit at all (one connection
# sending headers without end grew a process by 150 MB), hence BoundedHttpTools.
MAX_HEAD_BYTES = 16 * 1024
# How long a connection may take to send a request's head, counted from the connection
# (or the previous answer): uvicorn itself waits for ever, so a connection that sends
# nothing, or a byte now and then, would hold one of the LIMIT_CONCURRENCY places.
HEAD_TIMEOUT_SECONDS = 10.0
# Requests one process serves at once; past it, uvicorn answers 503. GitHub's deliveries
# take about a millisecond each, so a few carry thousands a second; each request may
# hold up to ~320 KB of socket and parser buffers before ingest reads it (uvicorn pauses
# reading past 64 KB), so 256 of them bound that to ~80 MB whatever the senders do.
# Connections without a request are not counted (BoundedHttpTools): uvicorn accepts
# every connection anyway, and counting idle ones let 256 of them refuse every delivery.
LIMIT_CONCURRENCY = 256
# uvicorn's default: a proxy or client that reuses its connection sends the next request
# within seconds; an idle one gives its place back after 5 s.
TIMEOUT_KEEP_ALIVE_SECONDS = 5
# uvicorn's default too (the kernel caps it at net.core.somaxconn): a burst of
# deliveries waits in the kernel's queue rather than being refused.
BACKLOG = 2048


class BoundedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with its request head bounded in size and in time.

    Counted per ``data_received`` while the head is incomplete after it was fed, so a
    head that arrives whole with its body (every delivery) costs one attribute test.
    """

    _in_head = False
    _head_bytes = 0
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_head:  # still no end of head: all of this was head
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
                self._in_head = False
                self.transport.write(_HEAD_TOO_LARGE)
                self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head, self._head_bytes = True, 0
        if self._head_timer is None:  # a request after a kept-alive answer
            self._arm_head_timer()

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._cancel_head_timer()
        # uvicorn counts open connections against limit_concurrency, not only requests in
        # flight: 256 connections that sent nothing (each opened again once the head
        # timeout closed it) had every delivery answered 503. Here only requests count;
        # a connection without one holds no more than its head, and that for 10 s.
        limit = self.limit_concurrency
        if limit is not None and len(self.tasks) < limit:
            self.limit_concurrency = None
        try:
            super().on_headers_complete()
        finally:
            self.limit_concurrency = limit

    def on_response_complete(self) -> None:
        # Answered before its body ended (a 404, 405, /healthz with a body): uvicorn would
        # keep the connection and drop the rest of the body as it comes, and each byte
        # re-arms nothing, so a byte every few seconds held a LIMIT_CONCURRENCY place for
        # ever. The rest of that body is not worth reading: close.
        cycle = self.cycle
        if cycle is not None and cycle.response_complete and cycle.more_body:
            cycle.keep_alive = False
            if not self.transport.is_closing():
                self.transport.close()
        super().on_response_complete()

    def _arm_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(HEAD_TIMEOUT_SECONDS, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        # Not between a head and its answer: that is ingest's time (its body deadline).
        if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
            self.transport.close()


_HEAD_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n"
    b"connection: close\r\n\r\n"
)


class _Config(uvicorn.Config):
    def bind_socket(self) -> socket.socket:
        sock = super().bind_socket()
        # uvicorn creates this socket with proto 0, so asyncio does not set TCP_NODELAY on
        # the connections it accepts; set here, every accepted connection inherits it.
        # Without it a response written in two parts waits 40 ms for a delayed ACK.
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock


def server_config(
    app: Callable[..., Any] | str, host: str, port: int, **extra: Any
) -> uvicorn.Config:
    """uvicorn as perfbot runs it, in one process or several.

    No proxy headers: perfbot logs no client address and trusts none (a delivery's
    signature is its only credential), and reading ``X-Forwarded-*`` cost every request.
    No ``Server`` header either. ``http`` "auto" or "httptools" is BoundedHttpTools;
    ``extra`` overrides any option (tests and benchmarks).
    """
    http = extra.pop("http", "auto")
    if http in ("auto", "httptools"):
        http = BoundedHttpTools
    options: dict[str, Any] = {
        "log_config": None,
        "access_log": False,
        "lifespan": "on",
        "proxy_headers": False,
        "server_header": False,
        "limit_concurrency": LIMIT_CONCURRENCY,
        "timeout_keep_alive": TIMEOUT_KEEP_ALIVE_SECONDS,
        "backlog": BACKLOG,
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
    }
    return _Config(app, host=host, port=port, http=http, **{**options, **extra})


def serve_processes(host: str, port: int, count: int, log_level: str) -> None:
    """Run ``count`` serving processes until interrupted (SIGINT or SIGTERM)."""
    with tempfile.TemporaryDirectory(prefix="perfbot-metrics-") as metrics_dir:
        # Inherited by the processes: /metrics sums the values of all of them.
        os.environ[MULTIPROCESS_METRICS_VARIABLE] = metrics_dir
        os.environ[LOG_LEVEL_VARIABLE] = log_level
        config = server_config(APP_FACTORY, host, port, factory=True, workers=count)
        Multiprocess(config, sockets=[config.bind_socket()]).run()
