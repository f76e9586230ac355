"""One HTTP/1.1 connection to GitHub: a request written whole, its answer parsed by
httptools (the C parser uvicorn reads requests with) as it arrives.

Only what perfbot's wire needs: no redirect is followed, no cookie kept, nothing retried
(the layers above decide that), and no request needs more than one answer at a time.
What a peer sends is bounded: the answer's head at ``MAX_HEAD_BYTES``, and a body that
nobody reads yet at ``BUFFER_HIGH_BYTES`` (reading pauses until the reader takes it).
Every way it can go wrong, short of a timeout, is a ``WireError`` that names no URL.
"""

from __future__ import annotations

import asyncio
from typing import Final

import httptools

from perfbot.github.wire import WireError

# An answer's status line and headers; GitHub's are a few KB.
MAX_HEAD_BYTES: Final = 64 * 1024
# Body bytes received and not yet read past which the socket is no longer read.
BUFFER_HIGH_BYTES: Final = 256 * 1024


class Connection(asyncio.Protocol):
    """The client's side of one connection; one answer read at a time (``expect``)."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.closed = False
        self._failure: WireError | None = None
        self._expecting = False
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        # Whether any byte of an answer to the request in flight arrived.
        self.answered_any = False
        self._head_bytes = 0  # bytes received before the answer's head ended
        self._clear()

    def _clear(self) -> None:
        self.status = 0
        self.headers: list[tuple[str, str]] = []
        self._header_bytes = 0
        self.head_done = False
        self.complete = False
        self.keep_alive = False
        self._until_close = False
        self._chunks: list[bytes] = []
        self._buffered = 0

    # What the pool calls ---------------------------------------------------------------------

    def expect(self, request: bytes) -> None:
        """Send ``request`` (its head and body) and start reading its answer."""
        if self._transport is None or self.closed:
            raise WireError("the connection is closed")
        self._clear()
        self._expecting = True
        self.answered_any = False
        self._head_bytes = 0
        self._transport.write(request)

    @property
    def reusable(self) -> bool:
        """Whether the last answer ended cleanly on a connection the peer keeps open."""
        return (
            self.complete
            and self.keep_alive
            and not self.closed
            and not self._paused
            and self._failure is None
        )

    async def wait(self, seconds: float) -> None:
        """Until more of the answer (its head, a part of its body, its end) arrives; a
        ``TimeoutError`` when nothing does within ``seconds``.

        A timer on the waiter of its own, not ``asyncio.timeout``: under uvloop a timer
        set and cancelled costs 2.3 µs, an ``asyncio.timeout`` entered and left 5.6 µs,
        twice a request."""
        if self._failure is not None:
            raise self._failure
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(seconds, _expire, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def take(self) -> list[bytes]:
        """The body's parts received since the last take (reading resumes)."""
        chunks, self._chunks, self._buffered = self._chunks, [], 0
        if self._paused and self._transport is not None and not self.closed:
            self._paused = False
            self._transport.resume_reading()
        return chunks

    def close(self, *, abort: bool = False) -> None:
        """Close the connection; ``abort``: at once, dropping what is still to be sent (a
        request given up on: the peer may never read the rest of its body)."""
        if self._expecting and not self.complete:
            # Our own close ends no answer (connection_lost then sees no error).
            self._fail("the connection was closed before the answer ended")
        if self._transport is not None:
            if abort:
                self._transport.abort()
            else:
                self._transport.close()
        self.closed = True

    # asyncio's callbacks ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._expecting and not self.complete:
            if exc is None and self.head_done and self._until_close and self._failure is None:
                # A body without a length ends with the connection (not with a reset).
                self.complete = True
                self._wake()
            else:
                self._fail("the connection closed before the answer ended")

    def data_received(self, data: bytes) -> None:
        if not self._expecting or self.complete:
            # Bytes nobody asked for: this connection can no longer be trusted.
            self._fail("the peer sent bytes outside an answer")
            self.close(abort=True)
            return
        self.answered_any = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail("the peer switched protocols")
            self.close(abort=True)
            return
        except httptools.HttpParserError as exc:
            # A callback's own refusal arrives wrapped (httptools keeps it as the context).
            refused = exc.__context__
            self._fail(
                str(refused)
                if isinstance(refused, WireError)
                else f"malformed HTTP answer ({type(exc).__name__})"
            )
            self.close(abort=True)
            return
        if not self.head_done:
            # Counted while the head lasts: httptools joins a header line's pieces itself
            # and calls on_header only once the line has ended, so a line that never ends
            # would otherwise grow without bound.
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._fail("the answer's head is too large")
                self.close(abort=True)

    # httptools' callbacks --------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.head_done:
            raise WireError("the peer sent a second answer to one request")
        self._clear()  # a 1xx answer's headers are not the final answer's

    def on_header(self, name: bytes, value: bytes) -> None:
        # The head as parsed (it may arrive in one read, past the count in data_received).
        self._header_bytes += len(name) + len(value) + 4
        if self._header_bytes > MAX_HEAD_BYTES:
            raise WireError("the answer's head is too large")
        self.headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if status < 200:
            return  # informational: the real answer follows
        self.status = status
        self.keep_alive = self._parser.should_keep_alive()
        codings = [
            value.strip().lower()
            for name, value in self.headers
            if name.lower() == "transfer-encoding"
        ]
        if codings and codings != ["chunked"]:
            # llhttp undoes the chunking only: a body in another transfer coding (gzip,
            # say) would pass as the body itself.
            raise WireError("the answer came in a transfer coding perfbot cannot undo")
        self._until_close = not codings and all(
            name.lower() != "content-length" for name, _ in self.headers
        )
        self.head_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered > BUFFER_HIGH_BYTES and not self._paused and self._transport:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self.head_done:
            self.complete = True
            self._expecting = False
            self._wake()

    # ------------------------------------------------------------------------------------------

    def _fail(self, why: str) -> None:
        if self._failure is None:
            self._failure = WireError(why)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            if self._failure is not None:
                waiter.set_exception(self._failure)
            else:
                waiter.set_result(None)


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError("no byte of the answer came in time"))
