"""How perfbot talks to GitHub: githubkit over the shared wire, errors mapped once.

* One wire (``wire``) under every request of the process: shared connection pools
  (``pools``), the call's deadline, the metrics, the API version and the dry
  run's gate; githubkit's clients reach it through ``httpx_edge.HttpxEdge``.
* A timeout on every call and a deadline for each request to be answered; GETs are
  retried a few times on 5xx and timeouts, never a POST or PATCH, which the job queue
  retries as a whole (the handlers are idempotent).
* Rate limits become ``RateLimited(retry_after)`` so the job goes back to the queue
  with that delay instead of blocking a worker.
* The artifact download does not follow GitHub's 302 with the client that holds the
  token: the storage URL is fetched straight through the storage's wire, with no
  credential and no cookie, and neither the token nor the signed URL is ever logged.
* Every request to the API names one REST API version, ``API_VERSION``
  (``wire.ApiVersioned``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Final, TypeVar

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

from perfbot.github import wire
from perfbot.github.errors import AuthFailed, GitHubError, GitHubUnavailable, RateLimited
from perfbot.github.httpx_edge import HttpxEdge
from perfbot.github.wire import Wire, WireError

T = TypeVar("T")


CALL_TIMEOUT = httpx.Timeout(wire.READ_SECONDS, connect=wire.CONNECT_SECONDS)
GET_RETRIES = 2
PAGE_SIZE = 100
USER_AGENT = "perfbot/0.1 (+https://github.com/apps)"
API_VERSION: Final = wire.API_VERSION
API_VERSION_HEADER: Final = wire.API_VERSION_HEADER

# What tests and the Actions path pass in place of the network: httpx's transport interface,
# named here so that no module outside perfbot.github imports httpx.
Transport = httpx.AsyncBaseTransport


AuthT = TypeVar("AuthT", AppAuthStrategy, TokenAuthStrategy)


def _client(auth: AuthT, base_url: str, api: Wire) -> GitHub[AuthT]:
    """githubkit as perfbot uses it over the API's wire ``api``: no redirects followed, no
    retries or HTTP cache of its own (perfbot decides what is retried), a timeout on every
    call."""
    return GitHub(
        auth,
        base_url=base_url.rstrip("/") + "/",
        user_agent=USER_AGENT,
        timeout=CALL_TIMEOUT,
        follow_redirects=False,
        async_transport=HttpxEdge(api),
        http_cache=False,
        auto_retry=False,
        # perfbot builds its request bodies itself: validating each one against the
        # schema again costs CPU on every write (measured: ≈ 0.4 ms per event).
        rest_api_validate_body=False,
        # Tokens are cached per client object, never process-wide: two Apps (or two
        # GitHub servers) in one process must not see each other's tokens.
        cache_strategy=MemCacheStrategy(),
    )


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
    except (RequestTimeout, TimeoutError):
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
    except (GitHubException, httpx.HTTPError, WireError) as exc:
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
