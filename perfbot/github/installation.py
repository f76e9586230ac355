"""Every GitHub call perfbot makes, through githubkit, as an App and its installations.

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
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any, Literal, TypeVar

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
from githubkit_schemas.latest import models
from httpx_aiohttp import AiohttpTransport
from pydantic import BaseModel

from perfbot.errors import PerfbotError
from perfbot.metrics import Metrics
from perfbot.shared import SharedCalls

log = logging.getLogger(__name__)
T = TypeVar("T")

CALL_TIMEOUT = httpx.Timeout(15.0, connect=5.0)
# Connect, send and the first bytes of the answer, whatever each step took on its own.
CALL_DEADLINE_SECONDS = 30.0
GET_RETRIES = 2
PAGE_SIZE = 100
USER_AGENT = "perfbot/0.1 (+https://github.com/apps)"


class GitHubError(PerfbotError):
    """A GitHub call failed; ``retryable`` says whether the job should be tried again."""

    retryable = False

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GitHubUnavailable(GitHubError):
    """5xx, a timeout or a connection error: try again later."""

    retryable = True


class RateLimited(GitHubError):
    """A primary or secondary rate limit: try again after ``retry_after`` seconds."""

    retryable = True

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message, 403)
        self.retry_after = retry_after


class AuthFailed(GitHubError):
    """401: a wrong key, a revoked installation or a skewed clock. Retried (with backoff)
    so that deliveries survive until the operator fixes the credentials."""

    retryable = True


class ArtifactGone(GitHubError):
    """The artifact expired or was deleted (404/410)."""


@dataclass(frozen=True, slots=True)
class ArtifactInfo:
    id: int
    name: str
    size_in_bytes: int
    expired: bool
    digest: str | None
    run_id: int | None
    created_at: str


@dataclass(frozen=True, slots=True)
class PullInfo:
    number: int
    state: str
    head_sha: str
    head_ref: str
    head_repo_id: int | None
    base_repo_id: int
    base_ref: str
    base_sha: str
    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CommentInfo:
    id: int
    body: str
    user_login: str
    app_id: int | None


@dataclass(frozen=True, slots=True)
class WorkflowRunInfo:
    id: int
    name: str
    path: str
    status: str
    head_sha: str
    event: str


@dataclass(frozen=True, slots=True)
class HookDelivery:
    """One attempt in the App webhook's delivery log (a redelivery is another attempt)."""

    id: int  # of this attempt: what a redelivery is asked for
    guid: str  # the X-GitHub-Delivery header, shared by every attempt of one event
    delivered_at: float  # UNIX seconds
    ok: bool  # status "OK" with a 2xx status code
    event: str
    action: str | None


# Repository roles from the least to the most powerful (collaborator-permission API).
ROLES = ("none", "read", "triage", "write", "maintain", "admin")
CHECK_RUN_TEXT_LIMIT = 65_535
Reaction = Literal["eyes", "rocket", "confused"]
Conclusion = Literal["success", "neutral", "failure"]


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
        async_transport=transport,
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


class GitHubApp:
    """The App: its JWT-authenticated client and a client per installation."""

    def __init__(
        self,
        app_id: int,
        private_key: str,
        base_url: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        metrics: Metrics | None = None,
        max_connections: int = 32,
    ) -> None:
        self.app_id = app_id
        self._transport = _SharedTransport(transport or _pools(max_connections), metrics)
        # Storage gets pools of its own: in a pool shared by two hosts, a request waiting
        # for one host closes an idle connection to the other, and under load every
        # artifact download would cost two new connections.
        self._storage_transport = (
            self._transport if transport else _SharedTransport(_pools(max_connections), metrics)
        )
        self._github = _client(AppAuthStrategy(str(app_id), private_key), base_url, self._transport)
        self._bot_login: str | None = None
        self._asking_bot_login: SharedCalls[None, str] = SharedCalls()
        self._token_gates: dict[int, TokenGate] = {}

    def installation(self, installation_id: int) -> Installation:
        auth = self._github.auth.as_installation(installation_id)
        gate = self._token_gates.get(installation_id)
        if gate is None:
            gate = self._token_gates[installation_id] = TokenGate()
        return Installation(
            self._github.with_auth(auth),
            self._storage_transport,
            self.app_id,
            gate,
            installation_id=installation_id,
        )

    async def bot_login(self) -> str:
        """``<slug>[bot]``, the login of the App's comments (asked once, then cached).

        Jobs asking together share one request, and its failure: they don't queue up to
        ask one after another behind a GitHub that does not answer.
        """
        if self._bot_login is not None:
            return self._bot_login
        return await self._asking_bot_login.call(None, self._ask_bot_login)

    async def _ask_bot_login(self) -> str:
        response = await _call("GET", self._github.rest.apps.async_get_authenticated)
        app = response.parsed_data
        slug = app.slug if app is not None and app.slug else str(self.app_id)
        self._bot_login = f"{slug}[bot]"
        return self._bot_login

    async def list_hook_deliveries(self, since: float, max_pages: int) -> list[HookDelivery]:
        """The App webhook's delivery attempts since ``since`` (UNIX seconds), newest first.

        Follows the ``cursor`` of the Link header's ``next`` page and stops at the first
        attempt older than ``since`` or after ``max_pages`` pages.
        """
        attempts: list[HookDelivery] = []
        cursor: str | None = None
        for _ in range(max_pages):
            list_page = self._github.rest.apps.async_list_webhook_deliveries
            send = (
                partial(list_page, per_page=PAGE_SIZE, cursor=cursor)
                if cursor
                else partial(list_page, per_page=PAGE_SIZE)
            )
            response = await _call("GET", send)
            for item in response.parsed_data:
                delivered_at = item.delivered_at.timestamp()
                if delivered_at < since:
                    return attempts
                attempts.append(
                    HookDelivery(
                        id=item.id,
                        guid=item.guid,
                        delivered_at=delivered_at,
                        ok=item.status == "OK" and 200 <= item.status_code < 300,
                        event=item.event,
                        action=item.action,
                    )
                )
            next_url = response.raw_response.links.get("next", {}).get("url")
            cursor = httpx.URL(next_url).params.get("cursor") if next_url else None
            if not cursor:
                return attempts
        log.warning(
            "delivery log longer than %s pages: the older attempts were not read", max_pages
        )
        return attempts

    async def redeliver(self, delivery_id: int) -> None:
        """Ask GitHub to send the delivery attempt ``delivery_id`` again (never retried here)."""
        await _call(
            "POST", partial(self._github.rest.apps.async_redeliver_webhook_delivery, delivery_id)
        )

    async def close(self) -> None:
        await self._transport.close()
        if self._storage_transport is not self._transport:
            await self._storage_transport.close()


class TokenSession:
    """Calls made with a plain token (a workflow's ``GITHUB_TOKEN``) instead of as the App.

    ``perfbot comment`` uses it so that the Actions-only path runs the App's own handler;
    artifact downloads still reach the storage host without any credential.
    """

    def __init__(
        self, token: str, base_url: str, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._transport = _SharedTransport(
            transport or httpx.AsyncHTTPTransport(retries=0), metrics=None
        )
        github = _client(TokenAuthStrategy(token), base_url, self._transport)
        self.installation = Installation(github, self._transport, app_id=None)

    async def close(self) -> None:
        await self._transport.close()


class TokenGate:
    """Lets an installation's calls wait while one of them fetches its token.

    githubkit exchanges the App's JWT for an installation token on the first call that
    finds none cached, and so does every call that starts before that token arrives:
    after a restart, 64 workers meant 64 JWT signatures and 64 token exchanges for one
    installation. Here the first call goes alone and the others start once it has ended,
    however it ended: a failure leaves them to try for themselves, as they would have
    anyway, rather than queue one by one behind a GitHub that does not answer. The gate
    stays open for ``open_seconds`` (tokens live an hour). It knows nothing of the
    token's own expiry: when githubkit renews a token while the gate is open, the calls
    in flight then may each ask for one, at most once an hour.
    """

    def __init__(
        self, open_seconds: float = 30 * 60, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._open_seconds = open_seconds
        self._clock = clock
        self._open_until = float("-inf")
        self._lock = asyncio.Lock()

    async def call(self, send: Callable[[], Awaitable[T]]) -> T:
        if self._clock() >= self._open_until:
            async with self._lock:
                if self._clock() >= self._open_until:
                    try:
                        return await send()
                    finally:
                        self._open_until = self._clock() + self._open_seconds
        return await send()


class Installation:
    """The calls perfbot makes on behalf of one installation."""

    def __init__(
        self,
        github: GitHub[Any],
        storage: httpx.AsyncBaseTransport,
        app_id: int | None,
        token_gate: TokenGate | None = None,
        *,
        installation_id: int | None = None,
    ) -> None:
        self._gh = github
        self._storage = storage
        self.app_id = app_id
        # None: a plain token (``perfbot comment``), which no installation record covers.
        self.id = installation_id
        self._token_gate = token_gate

    async def _call(self, method: str, send: Callable[[], Awaitable[T]]) -> T:
        if self._token_gate is None:
            return await _call(method, send)
        return await self._token_gate.call(lambda: _call(method, send))

    async def __aenter__(self) -> Installation:
        """One HTTP client for all the calls of a job, instead of one per call."""
        await self._gh.__aenter__()  # type: ignore[no-untyped-call]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._gh.__aexit__()

    async def list_run_artifacts(self, owner: str, repo: str, run_id: int) -> list[ArtifactInfo]:
        async def page(number: int) -> list[models.Artifact]:
            response = await self._call(
                "GET",
                partial(
                    self._gh.rest.actions.async_list_workflow_run_artifacts,
                    owner,
                    repo,
                    run_id,
                    per_page=PAGE_SIZE,
                    page=number,
                ),
            )
            return response.parsed_data.artifacts

        # 1,000 artifacts is far beyond any measurement run.
        return [_artifact(a) for a in await _all_pages(page, max_pages=10)]

    async def download_artifact(
        self, owner: str, repo: str, artifact_id: int, max_bytes: int
    ) -> bytes:
        """The artifact's zip, refusing more than ``max_bytes``; raises ArtifactGone."""
        url = f"/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip"
        try:
            response = await self._call("GET", lambda: self._gh.arequest("GET", url))
        except GitHubError as exc:
            if exc.status in (404, 410):
                raise ArtifactGone(f"artifact {artifact_id} is gone ({exc.status})") from None
            raise
        if response.status_code != 302 or "location" not in response.headers:
            raise GitHubError(
                f"artifact {artifact_id}: expected a redirect to storage, got "
                f"{response.status_code}",
                response.status_code,
            )
        return await _with_get_retries(
            lambda: self._fetch_blob(response.headers["location"], max_bytes)
        )

    async def _fetch_blob(self, location: str, max_bytes: int) -> bytes:
        # Straight through the transport, not a client: no credential, no redirect, and
        # no cookie kept from one installation's download to the next.
        request = httpx.Request(
            "GET",
            location,
            headers={"user-agent": USER_AGENT},
            extensions={"timeout": CALL_TIMEOUT.as_dict()},
        )
        try:
            blob = await self._storage.handle_async_request(request)
            try:
                if blob.status_code >= 500:
                    raise GitHubUnavailable("artifact storage answered 5xx", blob.status_code)
                if blob.status_code != 200:
                    raise ArtifactGone(f"artifact storage answered {blob.status_code}")
                chunks, size = [], 0
                async for chunk in blob.aiter_bytes():
                    size += len(chunk)
                    if size > max_bytes:
                        raise GitHubError(f"artifact larger than {max_bytes} bytes")
                    chunks.append(chunk)
                return b"".join(chunks)
            finally:
                await blob.aclose()
        except (httpx.HTTPError, aiohttp.ClientError, TimeoutError) as exc:
            # An error's message may carry the signed URL: name only the kind. (aiohttp's
            # errors outside httpx-aiohttp's mapping arrive unmapped.)
            raise GitHubUnavailable(f"artifact download failed ({type(exc).__name__})") from None

    async def get_pull(self, owner: str, repo: str, number: int) -> PullInfo | None:
        try:
            response = await self._call(
                "GET", lambda: self._gh.rest.pulls.async_get(owner, repo, number)
            )
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        return _pull(response.parsed_data)

    async def pulls_for_commit(self, owner: str, repo: str, sha: str) -> list[PullInfo]:
        response = await self._call(
            "GET",
            lambda: self._gh.rest.repos.async_list_pull_requests_associated_with_commit(
                owner, repo, sha, per_page=100
            ),
        )
        return [_pull(pull) for pull in response.parsed_data]

    async def list_comments(self, owner: str, repo: str, number: int) -> list[CommentInfo]:
        async def page(page_number: int) -> list[models.IssueComment]:
            response = await self._call(
                "GET",
                partial(
                    self._gh.rest.issues.async_list_comments,
                    owner,
                    repo,
                    number,
                    per_page=PAGE_SIZE,
                    page=page_number,
                ),
            )
            return list(response.parsed_data)

        # 5,000 comments: stop somewhere on a runaway thread.
        return [_comment(c) for c in await _all_pages(page, max_pages=50)]

    async def create_comment(self, owner: str, repo: str, number: int, body: str) -> CommentInfo:
        response = await self._call(
            "POST",
            lambda: self._gh.rest.issues.async_create_comment(owner, repo, number, body=body),
        )
        return _comment(response.parsed_data)

    async def update_comment(
        self, owner: str, repo: str, comment_id: int, body: str
    ) -> CommentInfo | None:
        """The edited comment, or None when it no longer exists."""
        try:
            response = await self._call(
                "PATCH",
                lambda: self._gh.rest.issues.async_update_comment(
                    owner, repo, comment_id, body=body
                ),
            )
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        return _comment(response.parsed_data)

    async def add_reaction(self, owner: str, repo: str, comment_id: int, content: Reaction) -> None:
        """React to an issue comment (``eyes``, ``rocket``, ``confused``…); idempotent."""
        await self._call(
            "POST",
            lambda: self._gh.rest.reactions.async_create_for_issue_comment(
                owner, repo, comment_id, content=content
            ),
        )

    async def collaborator_role(self, owner: str, repo: str, username: str) -> str:
        """The user's role in ``ROLES`` (a custom role counts as its base permission)."""
        try:
            response = await self._call(
                "GET",
                lambda: self._gh.rest.repos.async_get_collaborator_permission_level(
                    owner, repo, username
                ),
            )
        except GitHubError as exc:
            if exc.status == 404:
                return "none"
            raise
        answer = response.parsed_data
        role = answer.role_name
        if role in ROLES:
            return role
        return answer.permission if answer.permission in ROLES else "none"

    async def get_run_json(self, owner: str, repo: str, run_id: int) -> dict[str, Any]:
        """One workflow run as GitHub sends it (the ``workflow_run`` of a delivery)."""
        response = await self._call(
            "GET", partial(self._gh.rest.actions.async_get_workflow_run, owner, repo, run_id)
        )
        try:
            data: object = response.json()
        except ValueError:
            raise GitHubError(f"GitHub's answer about run {run_id} is not JSON") from None
        if not isinstance(data, dict):
            raise GitHubError(f"GitHub answered run {run_id} with something else than a run")
        return data

    async def runs_for_head(self, owner: str, repo: str, head_sha: str) -> list[WorkflowRunInfo]:
        """The ``pull_request`` workflow runs of ``head_sha``, newest first."""

        async def page(number: int) -> list[models.WorkflowRun]:
            response = await self._call(
                "GET",
                partial(
                    self._gh.rest.actions.async_list_workflow_runs_for_repo,
                    owner,
                    repo,
                    head_sha=head_sha,
                    event="pull_request",
                    per_page=PAGE_SIZE,
                    page=number,
                ),
            )
            return response.parsed_data.workflow_runs

        runs = await _all_pages(page, max_pages=5)
        return [
            WorkflowRunInfo(
                id=run.id,
                name=run.name or "",
                path=run.path,
                status=run.status or "",
                head_sha=run.head_sha,
                event=run.event,
            )
            for run in sorted(runs, key=lambda r: r.id, reverse=True)
        ]

    async def rerun_workflow_run(self, owner: str, repo: str, run_id: int) -> None:
        await self._call(
            "POST", lambda: self._gh.rest.actions.async_re_run_workflow(owner, repo, run_id)
        )

    async def upsert_check_run(
        self,
        owner: str,
        repo: str,
        *,
        check_run_id: int | None,
        name: str,
        head_sha: str,
        conclusion: Conclusion,
        title: str,
        summary: str,
    ) -> int:
        """Create the check run, or complete the existing ``check_run_id``; returns its id.

        A stored id that no longer exists (404) is replaced by a new check run.
        """
        title, summary = title[:1000] or name, summary[:CHECK_RUN_TEXT_LIMIT]
        if check_run_id is not None:
            try:
                response = await self._call(
                    "PATCH",
                    lambda: self._gh.rest.checks.async_update(
                        owner,
                        repo,
                        check_run_id,
                        status="completed",
                        conclusion=conclusion,
                        output={"title": title, "summary": summary},
                    ),
                )
                return int(response.parsed_data.id)
            except GitHubError as exc:
                if exc.status != 404:
                    raise
        created = await self._call(
            "POST",
            lambda: self._gh.rest.checks.async_create(
                owner,
                repo,
                name=name,
                head_sha=head_sha,
                status="completed",
                conclusion=conclusion,
                output={"title": title, "summary": summary},
            ),
        )
        return int(created.parsed_data.id)

    async def get_file(self, owner: str, repo: str, path: str) -> str | None:
        """A text file of the default branch, or None when it does not exist."""
        try:
            response = await self._call(
                "GET", lambda: self._gh.rest.repos.async_get_content(owner, repo, path)
            )
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        content = response.parsed_data
        if not isinstance(content, models.ContentFile):
            return None  # a directory, a symlink or a submodule is not a config file
        try:
            return base64.b64decode(content.content).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return "\x00"  # not text: the config reader reports it as invalid


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
            f"GitHub rate limit ({type(exc).__name__})", _seconds(exc.retry_after)
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


def _seconds(delay: timedelta) -> float:
    return max(1.0, min(delay.total_seconds(), 3600.0))


def _artifact(artifact: models.Artifact) -> ArtifactInfo:
    run = artifact.workflow_run if isinstance(artifact.workflow_run, BaseModel) else None
    return ArtifactInfo(
        id=artifact.id,
        name=artifact.name,
        size_in_bytes=artifact.size_in_bytes,
        expired=artifact.expired,
        digest=artifact.digest if isinstance(artifact.digest, str) else None,
        run_id=run.id if run is not None and isinstance(run.id, int) else None,
        created_at=artifact.created_at.isoformat() if artifact.created_at else "",
    )


def _pull(pull: models.PullRequest | models.PullRequestSimple) -> PullInfo:
    head_repo = pull.head.repo
    return PullInfo(
        number=pull.number,
        state=pull.state,
        head_sha=pull.head.sha,
        head_ref=pull.head.ref,
        head_repo_id=head_repo.id if head_repo is not None else None,
        base_repo_id=pull.base.repo.id,
        base_ref=pull.base.ref,
        base_sha=pull.base.sha,
        labels=tuple(label.name for label in pull.labels if label.name),
    )


def _comment(comment: models.IssueComment) -> CommentInfo:
    app = comment.performed_via_github_app
    if not isinstance(app, BaseModel):
        app = None  # absent (UNSET) or null: a human's comment
    return CommentInfo(
        id=comment.id,
        body=comment.body or "",
        user_login=comment.user.login if comment.user else "",
        app_id=app.id if app is not None else None,
    )
