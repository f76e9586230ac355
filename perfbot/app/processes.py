"""uvicorn as perfbot runs it (``server_config``), in one process or several.

Several ``perfbot serve`` processes share one port (``PERFBOT_PROCESSES`` > 1): uvicorn's
supervisor binds the socket once and starts the processes; each builds its app from the
environment (``perfbot.app.server.app_from_environment``). The processes share the store
(SQLite in WAL mode, or PostgreSQL), which already serialises the jobs of one pull
request and hands each job to one worker, so they need nothing else in common.

Anyone can connect, so the server's own limits are chosen, not defaults: what a request
may hold before perfbot's ingest sees it (``BoundedHttpTools``: its head), how many
connections there may be, and who makes room when there are too many: the connection
or request that has waited longest on its sender, never one whose request has arrived
whole (``server_config``). The body is ingest's (``perfbot.app.ingest``); a webhook
request whose body comes with its head is answered by the protocol itself, without ASGI
(``perfbot.app.fastpath``).
"""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import tempfile
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState
from uvicorn.supervisors import Multiprocess

from perfbot.app import fastpath
from perfbot.app.fastpath import FastCycle, WholeAnswerer, WholeRequest
from perfbot.app.server import LOG_LEVEL_VARIABLE, PerfbotApp
from perfbot.support.metrics import MULTIPROCESS_METRICS_VARIABLE

APP_FACTORY = "perfbot.app.server:app_from_environment"

# A request's line and headers: GitHub's are about 1.5 KB. h11 refuses a head over this
# itself (h11_max_incomplete_event_size); httptools has no limit at all (one connection
# sending headers without end grew a process by 150 MB), hence BoundedHttpTools.
MAX_HEAD_BYTES = 16 * 1024
# How long a connection may take to send a request's head, counted from the connection
# (or the previous answer): uvicorn itself waits for ever, so a connection that sends
# nothing, or a byte now and then, would hold one of the LIMIT_CONCURRENCY places.
HEAD_TIMEOUT_SECONDS = 10.0
# Requests one process serves at once; past it, the oldest request still waiting for
# its body is closed (503) to make room, and only when every request in flight has its
# body is the new one answered 503. GitHub's deliveries take about a millisecond each
# and arrive whole, so a few places carry thousands a second, and a sender that holds
# its body back holds its place only until the next request needs it. Each request may
# hold up to ~320 KB of socket and parser buffers before ingest reads it (uvicorn pauses
# reading past 64 KB), so 256 of them bound that to ~80 MB whatever the senders do.
# Connections without a request are not counted (BoundedHttpTools): uvicorn accepts
# every connection anyway, and counting idle ones let 256 of them refuse every delivery.
LIMIT_CONCURRENCY = 256
# Connections one process keeps open: past it, the one that has waited longest without
# sending a request (a new one, or a kept-alive one between requests) is closed. Each
# is a file descriptor and up to a 16 KiB head, so this bounds both whatever the rate of
# new connections; it stops FD_HEADROOM short of the process's descriptor limit
# (``ulimit -n``), whichever is lower, so the database and GitHub still get theirs.
MAX_CONNECTIONS = 2048
FD_HEADROOM = 256
# How long, and for how large a body, a webhook request whose body did not come in the
# read that ended its head waits for the rest on the fast path (``perfbot.app.fastpath``)
# before it goes uvicorn's way: a client that writes head and body apart, or a proxy that
# streams the body, sends the rest within a millisecond or two; every real delivery is
# tens of KB.
WHOLE_WAIT_SECONDS = 0.25
WHOLE_WAIT_BYTES = 64 * 1024
# uvicorn's default: a proxy or client that reuses its connection sends the next request
# within seconds; an idle one gives its place back after 5 s.
TIMEOUT_KEEP_ALIVE_SECONDS = 5
# uvicorn's default too (the kernel caps it at net.core.somaxconn): a burst of
# deliveries waits in the kernel's queue rather than being refused.
BACKLOG = 2048


class _Waiting:
    """The connections of one server that wait on their sender, oldest first: ``idle``
    ones have no request in flight, ``stalled`` ones a request whose body has not ended.
    Single-threaded (the event loop): no lock."""

    __slots__ = ("idle", "stalled")

    def __init__(self) -> None:
        self.idle: OrderedDict[BoundedHttpTools, None] = OrderedDict()
        self.stalled: OrderedDict[BoundedHttpTools, None] = OrderedDict()


# One per uvicorn server (its ServerState is shared by all of its connections).
_WAITING: weakref.WeakKeyDictionary[ServerState, _Waiting] = weakref.WeakKeyDictionary()


def connection_cap(descriptor_limit: int) -> int:
    """The connections a process keeps open under a descriptor limit (-1: unlimited)."""
    if descriptor_limit < 0:
        return MAX_CONNECTIONS
    return max(64, min(MAX_CONNECTIONS, descriptor_limit - FD_HEADROOM))


class BoundedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with its request head bounded in size and in time,
    and room made for new connections and requests at the expense of those that wait
    longest on their sender.

    Counted per ``data_received`` while the head is incomplete after it was fed, so a
    head that arrives whole with its body (every delivery) costs one attribute test; the
    waiting lists cost a few dictionary operations per request.
    """

    _in_head = False
    _head_bytes = 0
    _head_timer: asyncio.TimerHandle | None = None
    # The webhook request being read on the fast path (``perfbot.app.fastpath``), if any.
    _whole: WholeRequest | None = None

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        waiting = _WAITING.get(server_state)
        if waiting is None:
            waiting = _WAITING[server_state] = _Waiting()
        self._idle, self._stalled = waiting.idle, waiting.stalled
        self._max_connections: int = getattr(config, "perfbot_max_connections", MAX_CONNECTIONS)
        # perfbot's app as uvicorn loaded it (no middleware around it): its webhook may
        # be answered on the fast path.
        app = self.app
        self._webhook: WholeAnswerer | None = app.webhook if isinstance(app, PerfbotApp) else None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._idle[self] = None
        self._arm_head_timer()
        if len(self.connections) > self._max_connections:
            # The oldest without a request; failing that, the oldest request waiting for
            # its body; failing that (every request has its body), this new one.
            if len(self._idle) > 1:
                next(iter(self._idle))._evict()
            elif self._stalled:
                next(iter(self._stalled))._evict()
            else:
                self._evict()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        self._idle.pop(self, None)
        self._stalled.pop(self, None)
        super().connection_lost(exc)  # wakes a whole request's waiting task: nothing more
        whole, self._whole = self._whole, None
        if whole is not None and whole.timer is not None:
            whole.timer.cancel()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        whole = self._whole
        if whole is not None and whole.waiting is None:
            self._wait_for_rest(whole)
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
        self._idle.pop(self, None)
        if self._takes_whole():
            self._whole = WholeRequest(self.headers, self.parser.should_keep_alive())
            return
        self._start_cycle()

    def _start_cycle(self) -> None:
        """uvicorn's cycle for the request whose head has ended, its app's task started."""
        # uvicorn counts open connections against limit_concurrency, not only requests in
        # flight: 256 connections that sent nothing (each opened again once the head
        # timeout closed it) had every delivery answered 503. Here only requests count,
        # and at the limit the request that has waited longest for its body makes room:
        # 256 senders holding their bodies back refused every delivery for 10 s.
        limit = self.limit_concurrency
        if limit is not None and len(self.tasks) >= limit and self._stalled:
            next(iter(self._stalled))._evict()
            self.limit_concurrency = None
        elif limit is not None and len(self.tasks) < limit:
            self.limit_concurrency = None
        try:
            super().on_headers_complete()
        finally:
            self.limit_concurrency = limit
        self._stalled[self] = None  # until its body ends (usually in this same read)

    def on_body(self, body: bytes) -> None:
        whole = self._whole
        if whole is not None:
            whole.chunks.append(body)  # what one read holds, or up to WHOLE_WAIT_BYTES
            return
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._stalled.pop(self, None)
        whole = self._whole
        if whole is not None:
            self._whole = None
            if whole.waiting is None:
                self._answer_whole(whole)  # read whole in one read: answered now
            else:
                # Its timer would hand on the next request waiting on this connection.
                if whole.timer is not None:
                    whole.timer.cancel()
                whole.timer = whole.previous = None  # only a hand-over needs them
                whole.arrived(True)  # its task, waiting for the rest, answers it
            return
        super().on_message_complete()

    # -- the fast path (perfbot.app.fastpath) ----------------------------------------------

    def _takes_whole(self) -> bool:
        """Whether the request whose head has just ended goes the fast path."""
        if self._webhook is None:
            return False
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            return False  # behind an answer still being made (or queued): uvicorn queues it
        limit = self.limit_concurrency
        if limit is not None and len(self.tasks) >= limit:
            return False  # uvicorn's path makes room, or answers 503
        parser = self.parser  # an upgrade has an Upgrade header or is a CONNECT: not taken
        return fastpath.takes(
            parser.get_method(), self.url, parser.get_http_version(), self.headers
        )

    def _wait_for_rest(self, whole: WholeRequest) -> None:
        """The read ended before the body did: wait a moment for the rest (a client that
        writes its head and body apart, a proxy that streams the body), as a request of
        its own, counted and evictable as uvicorn's would be; else uvicorn's path."""
        webhook = self._webhook
        assert webhook is not None  # a whole request is only read with a webhook
        if (
            self.transport.is_closing()
            or not 0 <= whole.declared <= WHOLE_WAIT_BYTES
            # Refused before a byte of its body is read: nothing to wait for.
            or webhook.refuses_unread(whole.headers)
        ):
            self._read_on()
            return
        cycle = FastCycle(whole.keep_alive)
        whole.previous, self.cycle = self.cycle, cycle  # type: ignore[assignment]
        whole.waiting = self.loop.create_future()
        cycle.message_event = _Arrival(whole)  # uvicorn sets it when the connection is lost
        whole.task = self._start_fast(cycle, whole)
        whole.timer = self.loop.call_later(WHOLE_WAIT_SECONDS, self._read_on)
        self._stalled[self] = None  # waiting for its body, as uvicorn's request would

    def _read_on(self) -> None:
        """The body is still on its way (when the read ends and it is larger than
        ``WHOLE_WAIT_BYTES``, or ``WHOLE_WAIT_SECONDS`` later): the request is uvicorn's
        from here, with what it sent so far, as if uvicorn had read it itself."""
        whole, self._whole = self._whole, None
        if whole is None:
            return
        shut = False
        if whole.waiting is not None:
            # Its waiting task ends without a word, and stops counting at once.
            if whole.timer is not None:
                whole.timer.cancel()
            if whole.task is not None:
                self.tasks.discard(whole.task)
            cycle = self.cycle
            shut = isinstance(cycle, FastCycle) and not cycle.keep_alive  # a shutdown asked
            self.cycle = whole.previous
            whole.arrived(False)  # still in _stalled, where it waited: its place is kept
        if self.transport.is_closing():
            return  # the parser refused the rest (uvicorn answered 400 and closed)
        self._start_cycle()
        if shut:
            self.cycle.keep_alive = False
        if whole.chunks:
            super().on_body(b"".join(whole.chunks))

    def _answer_whole(self, whole: WholeRequest) -> None:
        cycle = FastCycle(whole.keep_alive)
        self.cycle = cycle  # type: ignore[assignment]  # what uvicorn's bookkeeping reads
        self._start_fast(cycle, whole)

    def _start_fast(self, cycle: FastCycle, whole: WholeRequest) -> asyncio.Task[None]:
        task = self.loop.create_task(self._answered(cycle, whole))
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)
        return task

    async def _answered(self, cycle: FastCycle, whole: WholeRequest) -> None:
        assert self._webhook is not None  # a whole request is only read with a webhook
        try:
            if whole.waiting is not None:
                arrived = await whole.waiting
                # Woken: the cycle, which stays the connection's, no longer holds the body.
                cycle.message_event = fastpath.NO_WAITER
                if not arrived:
                    return  # handed to uvicorn's path, or its sender is gone
            answer = await self._webhook.answer_whole(whole.headers, b"".join(whole.chunks))
            if not cycle.disconnected and self.flow.write_paused:
                await self.flow.drain()  # as uvicorn's send: a peer that reads nothing waits
        except BaseException:
            # As uvicorn's cycle does for its app: a 500 where nothing was answered (its
            # task cancelled past the shutdown's grace, say), never a silent connection.
            self.logger.exception("the webhook's answer failed")
            answer = fastpath.FAILED
            cycle.keep_alive = False
        if cycle.disconnected or self.transport.is_closing():
            return  # lost, or closed to make room: nobody to answer
        # keep_alive read now: a shutdown meanwhile asks for this answer to be the last.
        data, close = fastpath.encoded(answer, self.server_state.default_headers, cycle.keep_alive)
        self.transport.write(data)
        cycle.response_started = cycle.response_complete = True
        if close:
            self.transport.close()
        self.on_response_complete()

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
        self._stalled.pop(self, None)
        super().on_response_complete()
        if self.cycle.response_complete and not self.transport.is_closing():
            self._idle[self] = None  # kept alive for the next request: idle again, newest

    def _evict(self) -> None:
        """Close this connection to make room: a request it is sending is answered 503."""
        self._idle.pop(self, None)
        self._stalled.pop(self, None)
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            if not cycle.response_started:
                self.transport.write(_EVICTED)
            cycle.disconnected = True  # the app's reads end and its answer is dropped
        self.transport.close()

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


class _Arrival:
    """A waiting whole request's stand-in for uvicorn's message event: set when its
    connection is lost, it tells the waiting task that no more will come."""

    __slots__ = ("_whole",)

    def __init__(self, whole: WholeRequest) -> None:
        self._whole = whole

    def set(self) -> None:
        self._whole.arrived(False)


_HEAD_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n"
    b"connection: close\r\n\r\n"
)


_EVICTED = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nretry-after: 10\r\n"
    b"connection: close\r\n\r\n"
)


class _Config(uvicorn.Config):
    perfbot_max_connections = MAX_CONNECTIONS

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
    ``extra`` overrides any option (tests and benchmarks), and ``max_connections`` the
    connection cap (else MAX_CONNECTIONS, or less under a lower descriptor limit).
    """
    max_connections = extra.pop("max_connections", None)
    if max_connections is None:
        max_connections = connection_cap(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
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
    config = _Config(app, host=host, port=port, http=http, **{**options, **extra})
    config.perfbot_max_connections = int(max_connections)
    return config


def serve_processes(host: str, port: int, count: int, log_level: str) -> None:
    """Run ``count`` serving processes until interrupted (SIGINT or SIGTERM)."""
    with tempfile.TemporaryDirectory(prefix="perfbot-metrics-") as metrics_dir:
        # Inherited by the processes: /metrics sums the values of all of them.
        os.environ[MULTIPROCESS_METRICS_VARIABLE] = metrics_dir
        os.environ[LOG_LEVEL_VARIABLE] = log_level
        config = server_config(APP_FACTORY, host, port, factory=True, workers=count)
        Multiprocess(config, sockets=[config.bind_socket()]).run()
