"""How perfbot talks to GitHub: githubkit over shared connection pools, errors mapped once.

* Shared connection pools for the whole process, over aiohttp (githubkit opens an httpx
  client per call or per job; the shared transport underneath keeps connections alive).
* A timeout on every call and a deadline for each request to be answered; GETs are
  retried a few times on 5xx and timeouts, never a POST or PATCH, which the job queue
  retries as a whole (the handlers are idempotent).
* Rate limits become ``RateLimited(retry_after)`` so the job goes back to the queue
  with that delay instead of blocking a worker.
* The artifact download does not follow GitHub's 302 with the client that holds the
  token: the storage URL is fetched straight through the transport, with no credential
  and no cookie, and neither the token nor the signed URL is ever logged.
* Every request to the API names one REST API version, ``API_VERSION``: githubkit's
  generated calls name it themselves, and ``_ApiVersioned`` adds it to the two requests
  they do not make (the installation-token exchange inside githubkit's auth flow, and the
  artifact download), which GitHub would otherwise answer in its 2022-11-28 default.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Final, TypeVar

import aiohttp
import httpx
from githubkit import AppAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.cache import MemCacheStrategy
from githubkit.exception import (
    GitHubException,
    RateLimitExceeded,
    RequestError,
    RequestFailed,
    RequestTimeout,
)
from httpx_aiohttp import AiohttpTransport

from perfbot.github.errors import AuthFailed, GitHubError, GitHubUnavailable, RateLimited
from perfbot.support.metrics import Metrics

T = TypeVar("T")


CALL_TIMEOUT = httpx.Timeout(15.0, connect=5.0)
# Connect, send and the first bytes of the answer, whatever each step took on its own.
CALL_DEADLINE_SECONDS = 30.0
GET_RETRIES = 2
PAGE_SIZE = 100
USER_AGENT = "perfbot/0.1 (+https://github.com/apps)"
# The REST API version of every request: the one githubkit's models (githubkit_schemas'
# latest) describe, so that every answer is parsed by the models of its own version.
API_VERSION: Final = "2026-03-10"
API_VERSION_HEADER: Final = "X-GitHub-Api-Version"

# What tests and the Actions path pass in place of the network: httpx's transport interface,
# named here so that no module outside perfbot.github imports httpx.
Transport = httpx.AsyncBaseTransport


class _SharedTransport(httpx.AsyncBaseTransport):
    """One connection pool for every short-lived client githubkit creates.

    githubkit closes its per-call client after each request, which would close the
    pool with it; closing is therefore a no-op here and ``close()`` ends the pool.
    The transport also counts responses for the metrics, by method and status only.
    """

    def __init__(self, inner: httpx.AsyncBaseTransport, metrics: Metrics | None) -> None:
        self._inner = inner
        self._metrics = metrics

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            # A deadline for sending the request and receiving the headers: aiohttp has
            # no write timeout, and a peer that stops reading a large body would hold
            # the job forever. The body of a response is bounded by the read timeout.
            async with asyncio.timeout(CALL_DEADLINE_SECONDS):
                response = await self._inner.handle_async_request(request)
        except TimeoutError:
            self._count(request.method, "deadline")
            raise httpx.WriteTimeout("no answer within the call's deadline") from None
        except (httpx.HTTPError, aiohttp.ClientError) as exc:
            self._count(request.method, type(exc).__name__)
            raise
        self._count(request.method, str(response.status_code))
        return response

    def _count(self, method: str, status: str) -> None:
        if self._metrics is not None:
            self._metrics.github_calls.labels(method, status).inc()

    async def aclose(self) -> None:
        """Kept open on purpose: see the class docstring."""

    async def close(self) -> None:
        await self._inner.aclose()


class _ApiVersioned(httpx.AsyncBaseTransport):
    """Names ``API_VERSION`` on every request of a githubkit client that names none.

    Only the API client goes through it: the artifact storage is fetched straight through
    the shared transport, and storage has no business with GitHub's API versions.
    """

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if API_VERSION_HEADER not in request.headers:
            request.headers[API_VERSION_HEADER] = API_VERSION
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


AuthT = TypeVar("AuthT", AppAuthStrategy, TokenAuthStrategy)


def _client(auth: AuthT, base_url: str, transport: httpx.AsyncBaseTransport) -> GitHub[AuthT]:
    """githubkit as perfbot uses it: no redirects followed, no retries or HTTP cache of its
    own (perfbot decides what is retried), a timeout on every call."""
    return GitHub(
        auth,
        base_url=base_url.rstrip("/") + "/",
        user_agent=USER_AGENT,
        timeout=CALL_TIMEOUT,
        follow_redirects=False,
        async_transport=_ApiVersioned(transport),
        http_cache=False,
        auto_retry=False,
        # perfbot builds its request bodies itself: validating each one against the
        # schema again costs CPU on every write (measured: ≈ 0.4 ms per event).
        rest_api_validate_body=False,
        # Tokens are cached per client object, never process-wide: two Apps (or two
        # GitHub servers) in one process must not see each other's tokens.
        cache_strategy=MemCacheStrategy(),
    )


def _pools(max_connections: int) -> httpx.AsyncBaseTransport:
    """Connections to one GitHub host, kept alive and shared by every job of the process.

    aiohttp does the HTTP work under httpx's interface (githubkit speaks httpx): its C
    parser and connection pool cost about a third less CPU per call than httpcore's,
    measured end to end (bench/service.py), where the HTTP client was the largest cost.
    """

    def session() -> aiohttp.ClientSession:
        # No cookie jar: one session serves every installation and the App's own calls,
        # which must not carry each other's cookies. Certificates as httpx checks them.
        connector = aiohttp.TCPConnector(limit=max_connections, ssl=httpx.create_ssl_context())
        return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())

    return AiohttpTransport(client=session)


async def _all_pages(fetch: Callable[[int], Awaitable[list[T]]], max_pages: int) -> list[T]:
    items: list[T] = []
    for number in range(1, max_pages + 1):
        batch = await fetch(number)
        items.extend(batch)
        if len(batch) < PAGE_SIZE:
            break
    return items


async def _call(method: str, send: Callable[[], Awaitable[T]]) -> T:
    """One API call with errors mapped; GETs get a few quick retries."""
    if method == "GET":
        return await _with_get_retries(lambda: _mapped(send))
    return await _mapped(send)


async def _with_get_retries(send: Callable[[], Awaitable[T]]) -> T:
    for attempt in range(GET_RETRIES + 1):
        try:
            return await send()
        except GitHubUnavailable:
            if attempt == GET_RETRIES:
                raise
            await asyncio.sleep(0.2 * 2**attempt)
    raise AssertionError("unreachable")


async def _mapped(send: Callable[[], Awaitable[T]]) -> T:
    try:
        return await send()
    except RateLimitExceeded as exc:
        raise RateLimited(
            f"GitHub rate limit ({type(exc).__name__})",
            _seconds(exc.retry_after),
            _reset(exc.response.headers),
        ) from None
    except RequestFailed as exc:
        raise _status_error(exc.response.status_code, "call") from None
    except RequestTimeout:
        raise GitHubUnavailable("GitHub could not be reached or did not answer in time") from None
    except RequestError as exc:
        # A failed token exchange inside the auth flow arrives wrapped.
        if isinstance(exc.exc, RateLimitExceeded):
            raise RateLimited(
                f"GitHub rate limit on a token exchange ({type(exc.exc).__name__})",
                _seconds(exc.exc.retry_after),
            ) from None
        if isinstance(exc.exc, RequestFailed):
            raise _status_error(exc.exc.response.status_code, "token exchange") from None
        raise GitHubUnavailable(f"GitHub could not be reached ({type(exc).__name__})") from None
    except (GitHubException, httpx.HTTPError, aiohttp.ClientError, TimeoutError) as exc:
        raise GitHubUnavailable(f"GitHub could not be reached ({type(exc).__name__})") from None


def _status_error(status: int, what: str) -> GitHubError:
    if status == 401:
        return AuthFailed(
            f"GitHub refused the App's credentials (401) on a {what}: check PERFBOT_APP_ID, "
            "the private key and the server clock",
            status,
        )
    if status >= 500 or status == 429:
        return GitHubUnavailable(f"GitHub answered {status} to a {what}", status)
    return GitHubError(f"GitHub answered {status} to a {what}", status)


def _reset(headers: Mapping[str, str]) -> float | None:
    """The window's reset GitHub named (``x-ratelimit-reset``) when it gave no
    ``Retry-After``: a primary limit, which lasts until that moment."""
    if "retry-after" in headers:
        return None
    try:
        return float(headers["x-ratelimit-reset"])
    except (KeyError, ValueError):
        return None


def _seconds(delay: timedelta) -> float:
    return max(1.0, min(delay.total_seconds(), 3600.0))
