"""The wire under every request perfbot sends to GitHub, whoever builds it.

A request is a ``Call`` (method, absolute URL, its path, headers, body) and its answer an
``Answer`` read whole (status, headers, body). Every layer is a ``Wire`` (``send``), and
each rule lives in one layer:

* ``Metered``: a deadline for each request to be answered (sent and its headers back,
  whatever each step took on its own: the pools have no write timeout, and a peer that stops
  reading a large body would hold the job forever; the body is bounded by the read
  timeout), and each answer counted for the metrics, by method and status only;
* ``ApiVersioned``: every API request names the one REST API version perfbot speaks,
  ``API_VERSION`` unless the operator chose another (``PERFBOT_GITHUB_API_VERSION``, for a
  GitHub Enterprise Server that does not serve it): githubkit's generated calls name their
  models' version, the token exchange and perfbot's own calls name none;
* ``dryrun_transport.WriteGate``: a dry run's writes stop there.

Under them a ``RawWire`` opens the request: perfbot's pools (``pools``) in production, an
httpx transport (``httpx_edge``) in tests and on the Actions path. githubkit's client
reaches the same layers through ``httpx_edge.HttpxEdge``; perfbot's hot calls (``direct``)
send their ``Call`` straight in, with no httpx request or response built.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Final, Protocol

from multidict import CIMultiDict

from perfbot.errors import PerfbotError
from perfbot.support.metrics import Metrics

# Seconds to connect, and to wait for each read of an answer.
CONNECT_SECONDS: Final = 5.0
READ_SECONDS: Final = 15.0
# Connect, send and the first bytes of the answer, whatever each step took on its own.
DEADLINE_SECONDS = 30.0
# The REST API version of every request: the one githubkit's models (githubkit_schemas'
# latest) describe, so that every answer is parsed by the models of its own version.
API_VERSION: Final = "2026-03-10"
API_VERSION_HEADER: Final = "X-GitHub-Api-Version"
# The versions perfbot can speak: what it reads of an answer is in both (2026-03-10 only
# removed fields, such as a pull's merge_commit_sha, that perfbot never reads), and
# githubkit's models of the newer one parse the older one's bodies.
API_VERSIONS: Final = ("2022-11-28", "2026-03-10")
# The encodings an answer may come in: what every wire undoes (the pools and httpx alike,
# with no optional package; httpx would ask for brotli or zstd once one is installed).
ACCEPT_ENCODING: Final = "gzip, deflate"


async def read_within(chunks: AsyncIterator[bytes], limit: int) -> tuple[bytes, bool]:
    """The body from ``chunks``, cut at ``limit`` bytes, and whether it was whole: an
    answer larger than the limit is never held whole in memory."""
    kept: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            kept.append(chunk[: len(chunk) - (size - limit)])
            return b"".join(kept), False
        kept.append(chunk)
    return b"".join(kept), True


class WireError(PerfbotError):
    """GitHub (or its storage) could not be reached, or its answer broke HTTP: the
    connection failed or closed mid-answer, or the answer was malformed. Names no URL."""

    retryable = True


class Call:
    """One request: ``path`` is the URL's path (what the gate and the dry run look at)."""

    __slots__ = ("body", "headers", "method", "path", "url")

    def __init__(
        self,
        method: str,
        url: str,
        path: str,
        headers: CIMultiDict[str],
        body: bytes | None = None,
    ) -> None:
        self.method = method
        self.url = url
        self.path = path
        self.headers = headers
        self.body = body


class Answer:
    """An answer read whole (``content`` decoded of its transfer's gzip); ``whole`` False:
    its body ran past the request's limit, and ``content`` is cut there."""

    __slots__ = ("content", "headers", "status_code", "whole")

    def __init__(
        self, status_code: int, headers: Mapping[str, str], content: bytes, whole: bool = True
    ) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content
        self.whole = whole


class Answered(Protocol):
    """What a reader of an answer looks at: an ``Answer``, or githubkit's ``Response``."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def content(self) -> bytes: ...


class Wire(Protocol):
    async def send(self, call: Call, limit: int | None = None) -> Answer:
        """The answer to ``call``; ``limit``: its body read up to that many bytes.

        Raises ``TimeoutError`` when no answer came in time, ``WireError`` (or, under an
        httpx transport, httpx's errors) when GitHub could not be reached."""
        ...

    async def close(self) -> None: ...


class Opened(Protocol):
    """An answer whose status and headers arrived, its body not yet read."""

    status_code: int
    headers: Mapping[str, str]

    async def read(self, limit: int | None) -> tuple[bytes, bool]:
        """The body, up to ``limit`` bytes; whether that was all of it."""
        ...

    async def release(self) -> None: ...


class RawWire(Protocol):
    async def open(self, call: Call) -> Opened: ...

    async def close(self) -> None: ...


class Metered:
    """A ``RawWire`` with the call's deadline and the metrics' count of each answer."""

    def __init__(self, raw: RawWire, metrics: Metrics | None) -> None:
        self._raw = raw
        self._metrics = metrics
        # The counter of each (method, status) seen, looked up once.
        self._counters: dict[tuple[str, str], Callable[[], None]] = {}

    async def send(self, call: Call, limit: int | None = None) -> Answer:
        try:
            async with asyncio.timeout(DEADLINE_SECONDS) as deadline:
                opened = await self._raw.open(call)
        except TimeoutError as exc:
            expired = deadline.expired()
            # asyncio's timeout raises from the CancelledError it turned into a timeout.
            cause = exc.__cause__
            named = exc if cause is None or isinstance(cause, asyncio.CancelledError) else cause
            self._count(call.method, "deadline" if expired else type(named).__name__)
            if expired:
                raise TimeoutError("no answer within the call's deadline") from None
            raise
        except Exception as exc:
            self._count(call.method, type(exc).__name__)
            raise
        try:
            self._count(call.method, str(opened.status_code))
            content, whole = await opened.read(limit)
        finally:
            await opened.release()
        return Answer(opened.status_code, opened.headers, content, whole)

    def _count(self, method: str, status: str) -> None:
        if self._metrics is None:
            return
        count = self._counters.get((method, status))
        if count is None:
            count = self._counters[method, status] = self._metrics.github_calls.labels(
                method, status
            ).inc
        count()

    async def close(self) -> None:
        await self._raw.close()


class ApiVersioned:
    """Names ``version`` on every request, in place of any other (the API's wire only: the
    artifact storage has no business with GitHub's API versions): one process, one version,
    whatever githubkit's models would have named."""

    def __init__(self, inner: Wire, version: str = API_VERSION) -> None:
        if version not in API_VERSIONS:
            raise ValueError(f"perfbot speaks no REST API version {version!r}")
        self._inner = inner
        self._version = version

    async def send(self, call: Call, limit: int | None = None) -> Answer:
        call.headers[API_VERSION_HEADER] = self._version
        return await self._inner.send(call, limit)

    async def close(self) -> None:
        await self._inner.close()
