"""A stateful fake of the parts of GitHub that perfbot talks to.

Two ASGI apps: the REST API (``fake.api_app``) and the blob storage that artifact downloads
redirect to (``fake.storage_app``). They are separate origins on purpose, as on github.com: a
client that carried its token across the redirect is caught by the storage's request log.

Tests build state with the ``add_*`` helpers, point perfbot at ``fake.transport()`` (in-process)
or at ``serve(fake)`` (real loopback sockets), then assert on the state (``comments_on``,
``bot_comments``, ``check_runs``, ``reruns``…) and on the request log (``fake.requests``).

Every response body starts from a real GitHub payload under ``../shared/fixtures`` (octokit's
webhook examples and PyGithub's recorded REST responses), deep-copied with ids, urls and fields
overwritten. The fake serves the API version a request names (``X-GitHub-Api-Version``;
2022-11-28 without one, as GitHub does) in that version's shape: 2026-03-10 answers lack the
fields that version removed. Every answer matches GitHub's own OpenAPI description of its
version, and every webhook payload GitHub's webhook description: tests/conformance.py checks
each exchange of every test, tests/test_conformance.py the payloads (where GitHub's examples
and its description disagree, the fake follows the description: tests/CONFORMANCE.md).
Routes the fake does not know answer 501 and are listed in ``fake.unknown_routes``, so a new
call in perfbot shows up instead of passing by accident.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import functools
import hashlib
import hmac
import itertools
import json
import math
import random
import re
import secrets
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import Any, Final, Literal, TypeVar, cast
from urllib.parse import quote

import httpx
import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from githubkit import AppAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.paths import shared

Json = dict[str, Any]
AuthKind = Literal["jwt", "token"]
T = TypeVar("T")

DEFAULT_API_URL: Final = "http://api.fakegithub.test"
DEFAULT_STORAGE_URL: Final = "http://storage.fakegithub.test"
TOKEN_LIFETIME: Final = timedelta(hours=1)
# What perf-comment.yml grants its GITHUB_TOKEN, and who GitHub says wrote with it.
ACTIONS_TOKEN_PERMISSIONS: Final = {
    "actions": "read",
    "contents": "read",
    "metadata": "read",
    "pull_requests": "write",
}
ACTIONS_BOT_LOGIN: Final = "github-actions[bot]"
ACTIONS_APP_ID: Final = 15368
BLOB_URL_LIFETIME: Final = timedelta(seconds=60)
ARTIFACT_RETENTION: Final = timedelta(days=90)
COMMENT_BODY_LIMIT: Final = 65536
CHECK_RUN_TEXT_LIMIT: Final = 65535
SUPPORTED_API_VERSIONS: Final = frozenset({"2022-11-28", "2026-03-10"})
# What GitHub assumes for a request without X-GitHub-Api-Version.
DEFAULT_API_VERSION: Final = "2022-11-28"
LATEST_API_VERSION: Final = "2026-03-10"
DOCS: Final = "https://docs.github.com/rest"

# What a perfbot installation grants (github-platform.md §F). Tests narrow it per installation.
DEFAULT_PERMISSIONS: Final[Mapping[str, str]] = {
    "actions": "write",
    "checks": "write",
    "contents": "read",
    "issues": "write",
    "metadata": "read",
    "pull_requests": "read",
}
_LEVELS: Final = {"none": 0, "read": 1, "write": 2, "admin": 3}
# GitHub reports the repository *role* and a coarser *permission*; maintain and triage fold.
_ROLE_TO_PERMISSION: Final = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}
_REACTIONS: Final = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
_CHECK_STATUSES: Final = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
_CHECK_CONCLUSIONS: Final = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
)
_RUN_STATUSES: Final = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
# What ``fake.chaos()`` may do to an API request (see there).
ChaosKind = Literal["5xx", "secondary_rate_limit", "slow", "timeout"]
CHAOS_KINDS: Final[tuple[ChaosKind, ...]] = ("5xx", "secondary_rate_limit", "slow", "timeout")
_SECONDARY_LIMIT_MESSAGE: Final = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID FAKE:0000."
)


# ---------------------------------------------------------------------------------------------
# Templates: real payloads, read once at import, never written to.


def _load(relative: str) -> Json:
    return cast(Json, json.loads(shared(relative).read_text(encoding="utf-8")))


_RUN_TEMPLATE: Final[Json] = _load(
    "github-rest-pygithub-replay/get_run_3881497935_fork_pull_request.json"
)
_ARTIFACT_TEMPLATE: Final[Json] = _load(
    "github-rest-pygithub-replay/list_run_artifacts_5138169628.json"
)["artifacts"][0]
_WORKFLOW_RUN_EVENT: Final[Json] = _load(
    "octokit-webhooks/workflow_run/completed.with-pull-requests.payload.json"
)
_PULL_TEMPLATE: Final[Json] = _load("octokit-webhooks/pull_request/opened.payload.json")[
    "pull_request"
]
_COMMENT_EVENT: Final[Json] = _load(
    "octokit-webhooks/issue_comment/created.with-installation.payload.json"
)
_CHECK_RUN_EVENT: Final[Json] = _load("octokit-webhooks/check_run/rerequested.payload.json")
_CHECK_SUITE_EVENT: Final[Json] = _load("octokit-webhooks/check_suite/rerequested.payload.json")
_INSTALLATION_EVENT: Final[Json] = _load("octokit-webhooks/installation/suspend.payload.json")
_REPO_TEMPLATE: Final[Json] = _WORKFLOW_RUN_EVENT["repository"]  # octo-org/octo-repo, full form
_USER_TEMPLATE: Final[Json] = _WORKFLOW_RUN_EVENT["sender"]  # Codertocat
_ORG_TEMPLATE: Final[Json] = _WORKFLOW_RUN_EVENT["organization"]  # octo-org
_ISSUE_TEMPLATE: Final[Json] = _COMMENT_EVENT["issue"]
_COMMENT_TEMPLATE: Final[Json] = _COMMENT_EVENT["comment"]
_CHECK_RUN_TEMPLATE: Final[Json] = _CHECK_RUN_EVENT["check_run"]
_CHECK_SUITE_TEMPLATE: Final[Json] = _CHECK_SUITE_EVENT["check_suite"]  # the full form
_INSTALLATION_TEMPLATE: Final[Json] = _INSTALLATION_EVENT["installation"]
_APP_TEMPLATE: Final[Json] = _CHECK_RUN_TEMPLATE["app"]


def _rewritten(value: Any, replacements: Mapping[str, str]) -> Any:
    """A deep copy of ``value`` with substrings replaced in every string.

    The templates carry dozens of url fields (``forks_url``, ``git_refs_url``…); rewriting the
    template's names inside them is shorter and safer than listing each one.
    """
    if isinstance(value, str):
        for old, new in replacements.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {key: _rewritten(item, replacements) for key, item in value.items()}
    if isinstance(value, list):
        return [_rewritten(item, replacements) for item in value]
    return copy.deepcopy(value)


def _iso(moment: datetime) -> str:
    # githubkit parses InstallationToken.expires_at with exactly this format.
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node_id(kind: str, number: int) -> str:
    return f"{kind}_kw{base64.b64encode(str(number).encode()).decode().rstrip('=')}"


def _fake_sha(*parts: object) -> str:
    return hashlib.sha1(":".join(map(str, parts)).encode()).hexdigest()


def _git_blob_sha(data: bytes) -> str:
    # The sha git (and the contents API) reports for a file: sha1 over "blob <size>\0<data>".
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# ---------------------------------------------------------------------------------------------
# Keys


@dataclass(frozen=True)
class KeyPair:
    private_pem: str
    public_pem: str


@functools.cache
def rsa_keypair() -> KeyPair:
    """One RSA key pair for the whole test session: generating one costs tens of milliseconds."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    public = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    return KeyPair(private.decode(), public.decode())


# ---------------------------------------------------------------------------------------------
# State: plain mutable dataclasses that tests may read and change directly.


@dataclass(kw_only=True)
class Installation:
    id: int
    account_login: str
    account_type: str = "Organization"
    permissions: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PERMISSIONS))
    repository_selection: str = "selected"
    suspended: bool = False
    created_at: datetime = field(default_factory=lambda: datetime(2026, 1, 5, 9, 0, tzinfo=UTC))


@dataclass(kw_only=True)
class Pull:
    repo: str  # full name of the base repository
    number: int
    id: int
    head_sha: str
    head_ref: str
    head_repo_full_name: str
    head_repo_id: int
    state: str = "open"
    labels: list[str] = field(default_factory=list)
    title: str = "Improve throughput"
    user: str = "alice"
    base_ref: str = "main"
    base_sha: str = ""
    merged: bool = False
    draft: bool = False
    created_at: datetime
    merge_commit_sha: str | None = None  # set by ``merge_pull`` (not sent in 2026-03-10)

    @property
    def is_fork(self) -> bool:
        return self.head_repo_full_name.lower() != self.repo.lower()


@dataclass(kw_only=True)
class Issue:
    """A plain issue (a pull request is an issue too, but lives in ``Repo.pulls``)."""

    repo: str  # full name
    number: int
    id: int
    title: str
    body: str | None = None
    state: str = "open"
    state_reason: str | None = None  # completed, not_planned, duplicate, reopened
    labels: list[str] = field(default_factory=list)
    user: str = "alice"
    user_type: str = "User"
    app_id: int | None = None  # performed_via_github_app: opened by an App
    locked: bool = False
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None = None
    closed_by: str | None = None


@dataclass(kw_only=True)
class Commit:
    sha: str
    message: str
    parents: list[str]
    author: str = "alice"
    date: datetime
    pull: int | None = None  # the pull request whose merge brought it (commits/{sha}/pulls)


@dataclass(kw_only=True)
class Repo:
    full_name: str
    id: int
    installation_id: int
    default_branch: str = "main"
    private: bool = False
    has_issues: bool = True  # False: issues turned off in the repository's settings
    last_number: int = 0  # of the newest issue or pull request, deleted ones included
    files: dict[str, str | bytes] = field(default_factory=dict)  # on the default branch
    refs: dict[str, dict[str, str | bytes]] = field(default_factory=dict)  # other branches/shas
    collaborators: dict[str, str] = field(default_factory=dict)  # lower-case login → role
    pulls: dict[int, Pull] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)  # plain issues (pulls are issues too)
    commits: dict[str, Commit] = field(default_factory=dict)  # sha → commit, oldest first
    branches: dict[str, str] = field(default_factory=dict)  # name → head sha

    @property
    def owner(self) -> str:
        return self.full_name.split("/")[0]

    @property
    def name(self) -> str:
        return self.full_name.split("/")[1]


@dataclass(kw_only=True)
class Run:
    repo: str
    id: int
    head_sha: str
    head_branch: str
    head_repo_full_name: str
    head_repo_id: int
    event: str = "pull_request"
    name: str = "net-perf"
    path: str = ".github/workflows/net-perf.yml"
    status: str = "completed"
    conclusion: str | None = "success"
    run_attempt: int = 1
    run_number: int = 1
    workflow_id: int
    check_suite_id: int
    actor: str
    display_title: str = "Improve throughput"
    # None: derived when rendered, like GitHub: open same-repo PRs whose head sha or head branch
    # matches; always [] for a fork's run. A list overrides it (e.g. a foreign PR, as in the
    # octokit example).
    pull_requests: list[Pull] | None = None
    created_at: datetime
    updated_at: datetime

    @property
    def is_fork(self) -> bool:
        return self.head_repo_full_name.lower() != self.repo.lower()


@dataclass(kw_only=True)
class Artifact:
    id: int
    repo: str
    run_id: int
    name: str
    data: bytes
    expired: bool = False
    created_at: datetime

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()


@dataclass(kw_only=True)
class Reaction:
    id: int
    content: str
    user: str
    created_at: datetime


@dataclass(kw_only=True)
class Comment:
    id: int
    repo: str
    issue_number: int
    body: str
    user: str
    user_type: str = "User"
    app_id: int | None = None  # performed_via_github_app.id
    created_at: datetime
    updated_at: datetime
    deleted: bool = False
    edits: int = 0
    previous_body: str = ""  # before the last edit (an ``edited`` delivery's ``changes``)
    reactions: list[Reaction] = field(default_factory=list)


@dataclass(kw_only=True)
class CheckRun:
    id: int
    repo: str
    name: str
    head_sha: str
    status: str = "queued"
    conclusion: str | None = None
    app_id: int
    check_suite_id: int
    external_id: str = ""
    details_url: str | None = None  # None: GitHub shows the check run's own page
    output: dict[str, str | None] = field(default_factory=dict)  # title, summary, text
    started_at: datetime | None = None
    completed_at: datetime | None = None


@dataclass(kw_only=True)
class Delivery:
    """One item of the App's webhook delivery log (GET /app/hook/deliveries)."""

    id: int
    guid: str
    event: str
    action: str | None
    status_code: int
    installation_id: int | None
    repository_id: int | None
    redelivery: bool = False
    delivered_at: datetime
    duration: float = 0.31

    @property
    def status(self) -> str:
        return (
            "OK" if 200 <= self.status_code < 300 else f"Invalid HTTP Response: {self.status_code}"
        )


@dataclass(kw_only=True)
class Token:
    value: str
    installation_id: int
    expires_at: datetime
    permissions: dict[str, str]
    repository_ids: frozenset[int] | None  # None: every repository of the installation
    # Who writes with this token: None is the App (fake.bot_login, fake.app_id); a
    # workflow's GITHUB_TOKEN writes as github-actions[bot] of the Actions App.
    author: tuple[str, int] | None = None

    def allows(self, alternatives: Sequence[str], level: str) -> bool:
        needed = _LEVELS[level]
        return any(_LEVELS[self.permissions.get(name, "none")] >= needed for name in alternatives)


@dataclass(kw_only=True)
class Blob:
    token: str
    artifact_id: int
    data: bytes
    expires_at: datetime


@dataclass(kw_only=True)
class RecordedRequest:
    """One API request. Appended on arrival; ``status`` stays 0 if it was never answered
    (the client gave up during a hang)."""

    method: str
    path: str
    query: dict[str, str]
    status: int
    auth: AuthKind | None  # the kind of *valid* credential it carried
    duration: float
    installation_id: int | None = None
    body: Any = None
    api_version: str | None = None  # the X-GitHub-Api-Version header as sent (None: absent)
    user_agent: str = ""
    # The answer as sent: its media type and bytes (empty for a redirect or no content).
    response_type: str = ""
    response_body: bytes = b""
    # When it arrived, on the fake's clock (``fake.now``: a test's own clock when it sets one).
    at: float = 0.0

    @property
    def served_version(self) -> str:
        """The API version the answer was given in (GitHub's default without a header)."""
        return self.api_version or DEFAULT_API_VERSION


ExchangeObserver = Callable[["FakeGitHub", RecordedRequest], None]
# Told of every API exchange any fake answers, once answered (see ``observing``).
_observers: list[ExchangeObserver] = []


@contextmanager
def observing(observer: ExchangeObserver) -> Iterator[None]:
    """While inside, ``observer`` sees every API exchange of every FakeGitHub, answered.

    The conformance check (``tests/conformance.py``) watches each test this way.
    """
    _observers.append(observer)
    try:
        yield
    finally:
        _observers.remove(observer)


@dataclass(kw_only=True)
class StorageRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    status: int


@dataclass(kw_only=True)
class _Knob:
    kind: Literal["fail", "secondary", "primary", "hang"]
    remaining: int
    path_contains: str
    status: int = 502
    retry_after: int = 1
    seconds: float = 0.0

    def matches(self, path: str) -> bool:
        if self.path_contains:
            return self.path_contains in path
        # An unqualified knob aims at perfbot's own API calls: not the token exchange that
        # githubkit slips in before them, not the storage hop.
        return not _is_token_path(path) and not path.startswith("/blobs/")


@dataclass(kw_only=True)
class Hold:
    """Matching requests wait until the test calls ``release()``: a hang that ends when the
    test has done what it wanted done meanwhile (close the PR, suspend the installation).

    Thread-safe, so it works with the in-process transport and with served sockets alike.
    """

    path_contains: str
    remaining: int
    method: str | None  # None: any method
    timeout: float  # released anyway after this long, so a forgetful test cannot hang
    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        self.released.set()

    async def wait(self) -> None:
        self.reached.set()
        deadline = time.monotonic() + self.timeout
        while not self.released.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.005)


@dataclass(kw_only=True)
class _Chaos:
    rate: float
    kinds: tuple[ChaosKind, ...]
    rng: random.Random
    slow_seconds: float
    hang_seconds: float


def _is_token_path(path: str) -> bool:
    return path.startswith("/app/installations/") and path.endswith("/access_tokens")


# What is being rendered: an answer in one REST API version (set around each route
# handler), or else a webhook payload. Deliveries carry no API version: GitHub's webhook
# description (@octokit/openapi-webhooks) still has every field 2026-03-10 removed.
WEBHOOKS: Final = "webhooks"
_rendering: ContextVar[str] = ContextVar("rendering", default=WEBHOOKS)


def _legacy() -> bool:
    """Whether what is being rendered still has the fields that REST API version
    2026-03-10 removed (``merge_commit_sha`` and ``assignee`` of pulls and issues, a
    repository's ``has_downloads``, ``master_branch``, ``use_squash_pr_title_as_default``):
    a 2022-11-28 answer, or a webhook payload."""
    return _rendering.get() in (DEFAULT_API_VERSION, WEBHOOKS)


# ---------------------------------------------------------------------------------------------
# The fake


class FakeGitHub:
    """GitHub's state for one test, and the two ASGI apps that serve it."""

    def __init__(
        self,
        app_id: int = 4242,
        app_slug: str = "perfbot-test",
        public_key_pem: str | bytes | None = None,
        api_url: str = DEFAULT_API_URL,
        storage_url: str = DEFAULT_STORAGE_URL,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.app_id = app_id
        self.app_slug = app_slug
        self.public_key_pem = public_key_pem or rsa_keypair().public_pem
        self.api_url = api_url.rstrip("/")
        self.storage_url = storage_url.rstrip("/")
        # Moved by advance(); replace ``now`` entirely for full control. It decides token and
        # blob-URL expiry and every timestamp; JWTs are checked against the real clock because
        # the client signs them with the real clock.
        self.clock_offset = timedelta(0)
        self.now: Callable[[], datetime] = now or self._wall_clock

        self.installations: dict[int, Installation] = {}
        self.repos: dict[str, Repo] = {}  # lower-case full name → repo
        self.runs: dict[int, Run] = {}
        self.artifacts: dict[int, Artifact] = {}
        self.comments: dict[int, Comment] = {}
        self.check_runs: dict[int, CheckRun] = {}
        self.deliveries: list[Delivery] = []
        self.tokens: dict[str, Token] = {}
        self.blobs: dict[str, Blob] = {}

        self.requests: list[RecordedRequest] = []
        self.storage_requests: list[StorageRequest] = []
        self.unknown_routes: list[str] = []  # "METHOD /path"
        self.reruns: list[int] = []  # run ids, one entry per POST …/rerun accepted
        self.redeliveries: list[int] = []  # delivery ids, one per POST …/attempts accepted
        self.foreign_comment_edits: list[int] = []  # ids of comments edited but not ours
        # The App-manifest flow: one-time code → manifest, and the Apps handed out for codes.
        self.manifest_codes: dict[str, Json] = {}
        self.converted_apps: list[Json] = []

        self.latency = 0.0  # seconds slept before every API response
        # An installation's requests an hour (x-ratelimit-limit); a test lowers it to see
        # perfbot slow down as x-ratelimit-remaining runs low.
        self.rate_limit = 5000
        self.primary_resets: list[int] = []  # the resets primary_rate_limit_next sent
        self._calls_per_installation: Counter[int] = Counter()  # for x-ratelimit-used
        self._knobs: list[_Knob] = []
        self._holds: list[Hold] = []
        self._chaos: _Chaos | None = None
        self.chaos_injected: Counter[str] = Counter()  # kind → requests it hit, since chaos()
        self._ids = itertools.count(10_001)
        self._stable_ids: dict[str, int] = {}

        methods = ["GET", "POST", "PATCH", "PUT", "DELETE"]
        self.api_app = Starlette(routes=[Route("/{path:path}", self._serve_api, methods=methods)])
        self.storage_app = Starlette(
            routes=[Route("/{path:path}", self._serve_storage, methods=methods)]
        )

    # -- time and ids ---------------------------------------------------------------------------

    def _wall_clock(self) -> datetime:
        return datetime.now(UTC) + self.clock_offset

    def advance(self, seconds: float) -> None:
        """Move the fake's clock (when ``now`` is the default one)."""
        self.clock_offset += timedelta(seconds=seconds)

    def next_id(self) -> int:
        return next(self._ids)

    def stable_id(self, key: str) -> int:
        """The same id every time for the same user, label or foreign repository."""
        if key not in self._stable_ids:
            self._stable_ids[key] = self.next_id()
        return self._stable_ids[key]

    # -- building state ---------------------------------------------------------------------

    def add_installation(
        self,
        installation_id: int,
        account_login: str,
        *,
        account_type: str = "Organization",
        permissions: Mapping[str, str] | None = None,
    ) -> Installation:
        installation = Installation(
            id=installation_id,
            account_login=account_login,
            account_type=account_type,
            permissions=dict(permissions or DEFAULT_PERMISSIONS),
        )
        self.installations[installation_id] = installation
        return installation

    def add_repo(
        self,
        full_name: str,
        repo_id: int,
        installation_id: int,
        default_branch: str = "main",
        files: Mapping[str, str | bytes] | None = None,
        *,
        private: bool = False,
    ) -> Repo:
        if installation_id not in self.installations:
            raise KeyError(f"add_installation({installation_id}, …) first")
        repo = Repo(
            full_name=full_name,
            id=repo_id,
            installation_id=installation_id,
            default_branch=default_branch,
            private=private,
            files=dict(files or {}),
        )
        self.repos[full_name.lower()] = repo
        self._stable_ids[f"repo:{full_name.lower()}"] = repo_id
        return repo

    def repo(self, ref: Repo | str) -> Repo:
        return ref if isinstance(ref, Repo) else self.repos[ref.lower()]

    def add_collaborator(self, repo: Repo | str, login: str, role: str = "write") -> None:
        if role not in _ROLE_TO_PERMISSION:
            raise ValueError(f"unknown role {role!r}")
        self.repo(repo).collaborators[login.lower()] = role

    def add_issue(
        self,
        repo: Repo | str,
        number: int | None = None,
        title: str | None = None,
        body: str | None = None,
        *,
        labels: Sequence[str] = (),
        login: str = "alice",
        state: str = "open",
        app_id: int | None = None,
    ) -> Issue:
        """A plain issue: ``number`` (the repository's next one when None), opened by
        ``login`` (perfbot itself with ``app_id=fake.app_id`` and ``login=fake.bot_login``)."""
        target = self.repo(repo)
        number = number if number is not None else self.next_issue_number(target)
        if number in target.pulls or number in target.issues:
            raise ValueError(f"{target.full_name}#{number} exists")
        moment = self.now()
        issue = Issue(
            repo=target.full_name,
            number=number,
            id=self.next_id(),
            title=title or f"Issue {number}",
            body=body,
            state=state,
            state_reason="completed" if state == "closed" else None,
            labels=list(labels),
            user=login,
            user_type="Bot" if login.endswith("[bot]") else "User",
            app_id=app_id,
            created_at=moment,
            updated_at=moment,
            closed_at=moment if state == "closed" else None,
        )
        target.issues[number] = issue
        return issue

    def next_issue_number(self, repo: Repo | str) -> int:
        """The number GitHub would give the repository's next issue or pull request."""
        target = self.repo(repo)
        # Never one of a deleted issue's: GitHub does not give a number twice.
        target.last_number = max([target.last_number, *target.pulls, *target.issues]) + 1
        return target.last_number

    def add_commit(
        self,
        repo: Repo | str,
        message: str,
        *,
        branch: str | None = None,
        sha: str | None = None,
        parents: Sequence[str] | None = None,
        author: str = "alice",
        pull: int | None = None,
    ) -> Commit:
        """A commit on ``branch`` (the default one), on top of its head unless ``parents``."""
        target = self.repo(repo)
        branch = branch or target.default_branch
        head = target.branches.get(branch)
        commit = Commit(
            sha=sha or _fake_sha("commit", target.full_name, len(target.commits), message),
            message=message,
            parents=list(parents if parents is not None else ([head] if head else [])),
            author=author,
            date=self.now(),
            pull=pull,
        )
        target.commits[commit.sha] = commit
        target.branches[branch] = commit.sha
        return commit

    def merge_pull(self, repo: Repo | str, number: int, *, squash: bool = True) -> Commit:
        """Merge pull request ``number`` into its base branch: one commit there (squashed,
        or a merge commit whose second parent is the head), which GitHub's
        ``commits/{sha}/pulls`` then answers with the pull request."""
        target = self.repo(repo)
        pull = target.pulls[number]
        base = target.branches.get(pull.base_ref)
        if squash:
            parents = [base] if base else []
            message = f"{pull.title} (#{number})"
        else:
            parents = [p for p in (base, pull.head_sha) if p]
            message = f"Merge pull request #{number} from {pull.head_repo_full_name}"
        commit = self.add_commit(
            target, message, branch=pull.base_ref, parents=parents, author=pull.user, pull=number
        )
        pull.merged, pull.state, pull.merge_commit_sha = True, "closed", commit.sha
        return commit

    def add_pull(
        self,
        repo: Repo | str,
        number: int,
        head_sha: str,
        head_ref: str,
        head_repo_full_name: str | None = None,
        head_repo_id: int | None = None,
        state: str = "open",
        labels: Sequence[str] = (),
        *,
        title: str = "Improve throughput",
        user: str = "alice",
        base_ref: str | None = None,
        merged: bool = False,
        draft: bool = False,
    ) -> Pull:
        base = self.repo(repo)
        head_name = head_repo_full_name or base.full_name
        pull = Pull(
            repo=base.full_name,
            number=number,
            id=self.next_id(),
            head_sha=head_sha,
            head_ref=head_ref,
            head_repo_full_name=head_name,
            head_repo_id=head_repo_id or self.stable_id(f"repo:{head_name.lower()}"),
            state=state,
            labels=list(labels),
            title=title,
            user=user,
            base_ref=base_ref or base.default_branch,
            base_sha=_fake_sha(base.full_name, base_ref or base.default_branch),
            merged=merged,
            draft=draft,
            created_at=self.now(),
        )
        base.pulls[number] = pull
        return pull

    def add_run(
        self,
        repo: Repo | str,
        run_id: int,
        head_sha: str,
        head_branch: str,
        head_repo: tuple[str, int] | None = None,
        *,
        event: str = "pull_request",
        name: str = "net-perf",
        path: str = ".github/workflows/net-perf.yml",
        status: str = "completed",
        conclusion: str | None = "success",
        pull_requests: Sequence[Pull] | None = None,
        run_attempt: int = 1,
        actor: str | None = None,
    ) -> Run:
        """A workflow run; ``head_repo`` = (full_name, id) of a fork, None for the repo itself."""
        base = self.repo(repo)
        head_name, head_id = head_repo or (base.full_name, base.id)
        moment = self.now()
        run = Run(
            repo=base.full_name,
            id=run_id,
            head_sha=head_sha,
            head_branch=head_branch,
            head_repo_full_name=head_name,
            head_repo_id=head_id,
            event=event,
            name=name,
            path=path,
            status=status,
            conclusion=conclusion,
            run_attempt=run_attempt,
            run_number=len(self.runs) + 1,
            workflow_id=self.stable_id(f"workflow:{base.full_name}:{path}"),
            check_suite_id=self.next_id(),
            actor=actor or head_name.split("/")[0],
            pull_requests=None if pull_requests is None else list(pull_requests),
            created_at=moment,
            updated_at=moment,
        )
        self.runs[run_id] = run
        return run

    def add_artifact(
        self, repo: Repo | str, run: Run | int, name: str, zip_bytes: bytes, expired: bool = False
    ) -> Artifact:
        run_id = run.id if isinstance(run, Run) else run
        artifact = Artifact(
            id=self.next_id(),
            repo=self.repo(repo).full_name,
            run_id=run_id,
            name=name,
            data=zip_bytes,
            expired=expired,
            created_at=self.now(),
        )
        self.artifacts[artifact.id] = artifact
        return artifact

    def add_comment(
        self,
        repo: Repo | str,
        number: int,
        body: str,
        login: str = "alice",
        user_type: str = "User",
        app_id: int | None = None,
    ) -> Comment:
        target = self.repo(repo)
        if number not in target.pulls and number not in target.issues:
            self.add_issue(target, number)
        moment = self.now()
        comment = Comment(
            id=self.next_id(),
            repo=target.full_name,
            issue_number=number,
            body=body,
            user=login,
            user_type=user_type,
            app_id=app_id,
            created_at=moment,
            updated_at=moment,
        )
        self.comments[comment.id] = comment
        return comment

    def add_bot_comment(self, repo: Repo | str, number: int, body: str) -> Comment:
        """A comment exactly as perfbot itself would have posted it."""
        return self.add_comment(repo, number, body, self.bot_login, "Bot", self.app_id)

    def delete_comment(self, comment_id: int) -> None:
        self.comments[comment_id].deleted = True

    def add_check_run(
        self,
        repo: Repo | str,
        name: str,
        head_sha: str,
        *,
        app_id: int | None = None,
        status: str = "completed",
        conclusion: str | None = "success",
    ) -> CheckRun:
        """A check run that already exists (by default perfbot's; another app's with app_id)."""
        moment = self.now()
        check = CheckRun(
            id=self.next_id(),
            repo=self.repo(repo).full_name,
            name=name,
            head_sha=head_sha,
            status=status,
            conclusion=conclusion,
            app_id=app_id or self.app_id,
            check_suite_id=self.next_id(),
            started_at=moment,
            completed_at=moment if status == "completed" else None,
        )
        self.check_runs[check.id] = check
        return check

    def add_delivery(
        self,
        event: str,
        action: str | None = None,
        *,
        status_code: int = 200,
        guid: str | None = None,
        installation_id: int | None = None,
        repository_id: int | None = None,
        redelivery: bool = False,
        delivered_at: datetime | None = None,
    ) -> Delivery:
        delivery = Delivery(
            id=self.next_id(),
            guid=guid or str(uuid.uuid4()),
            event=event,
            action=action,
            status_code=status_code,
            installation_id=installation_id,
            repository_id=repository_id,
            redelivery=redelivery,
            delivered_at=delivered_at or self.now(),
        )
        self.deliveries.append(delivery)
        return delivery

    def add_manifest_code(self, manifest: Mapping[str, Any]) -> str:
        """What github.com does when the operator confirms an App manifest: a one-time code.

        Refuses what GitHub refuses: a manifest without ``url`` or ``hook_attributes.url``.
        """
        hook = manifest.get("hook_attributes")
        if not manifest.get("url") or not isinstance(hook, dict) or not hook.get("url"):
            raise ValueError("a manifest needs url and hook_attributes.url")
        for name, level in dict(manifest.get("default_permissions") or {}).items():
            if level not in ("read", "write", "admin"):
                raise ValueError(f"permission {name}: {level!r} is not read, write or admin")
        code = secrets.token_hex(10)
        self.manifest_codes[code] = json.loads(json.dumps(manifest))
        return code

    def issue_token(self, installation_id: int, repository_ids: Sequence[int] | None = None) -> str:
        """An installation token, without the HTTP round-trip (for raw-httpx tests)."""
        installation = self.installations[installation_id]
        ids = None if repository_ids is None else frozenset(repository_ids)
        return self._issue_token(installation, dict(installation.permissions), ids).value

    def issue_actions_token(self, repo: Repo | str) -> str:
        """A workflow's ``GITHUB_TOKEN``: one repository, writing as github-actions[bot]."""
        found = self.repo(repo)
        installation = self.installations[found.installation_id]
        token = self._issue_token(
            installation, dict(ACTIONS_TOKEN_PERMISSIONS), frozenset({found.id})
        )
        token.author = (ACTIONS_BOT_LOGIN, ACTIONS_APP_ID)
        return token.value

    def _issue_token(
        self,
        installation: Installation,
        permissions: dict[str, str],
        repository_ids: frozenset[int] | None,
    ) -> Token:
        token = Token(
            value="ghs_" + secrets.token_urlsafe(27)[:36],
            installation_id=installation.id,
            expires_at=self.now() + TOKEN_LIFETIME,
            permissions=permissions,
            repository_ids=repository_ids,
        )
        self.tokens[token.value] = token
        return token

    # -- reading state -----------------------------------------------------------------------

    @property
    def bot_login(self) -> str:
        return f"{self.app_slug}[bot]"

    def comments_on(self, repo: Repo | str, number: int) -> list[Comment]:
        """The live comments of an issue or PR, oldest first."""
        name = self.repo(repo).full_name
        found = [
            c
            for c in self.comments.values()
            if c.repo == name and c.issue_number == number and not c.deleted
        ]
        return sorted(found, key=lambda c: c.id)

    def bot_comments(self, repo: Repo | str, number: int) -> list[Comment]:
        """The live comments that perfbot (this app id) authored, oldest first."""
        return [c for c in self.comments_on(repo, number) if c.app_id == self.app_id]

    def check_runs_for(self, repo: Repo | str, head_sha: str) -> list[CheckRun]:
        name = self.repo(repo).full_name
        found = (c for c in self.check_runs.values() if c.repo == name and c.head_sha == head_sha)
        return sorted(found, key=lambda c: c.id)

    def write_calls(self) -> list[RecordedRequest]:
        """Non-GET API requests, without the token exchange."""
        return [
            r
            for r in self.requests
            if r.method not in ("GET", "HEAD") and not _is_token_path(r.path)
        ]

    def rate_limited_calls(self) -> list[RecordedRequest]:
        """API requests that count against the installation's limit (not token creation,
        not a conditional request answered 304)."""
        return [r for r in self.requests if not _is_token_path(r.path) and r.status != 304]

    # -- failure knobs -----------------------------------------------------------------------

    def fail_next(self, count: int = 1, status: int = 502, path_contains: str = "") -> None:
        """Answer the next ``count`` matching requests with ``status``.

        An empty ``path_contains`` matches perfbot's API calls (not token creation, not the
        storage); name "access_tokens" or "/blobs/" to aim at those.
        """
        knob = _Knob(kind="fail", remaining=count, path_contains=path_contains, status=status)
        self._knobs.append(knob)

    def secondary_rate_limit_next(
        self, count: int = 1, retry_after: int = 1, path_contains: str = ""
    ) -> None:
        """403 with ``retry-after`` and GitHub's secondary-limit message, ``count`` times."""
        knob = _Knob(
            kind="secondary", remaining=count, path_contains=path_contains, retry_after=retry_after
        )
        self._knobs.append(knob)

    def primary_rate_limit_next(
        self, count: int = 1, reset_in: int = 30, path_contains: str = ""
    ) -> None:
        """403 as GitHub answers an installation whose hourly requests are spent, ``count``
        times: no ``retry-after``, ``x-ratelimit-remaining: 0`` and the window's reset
        ``reset_in`` seconds ahead (each reset sent is kept in ``primary_resets``)."""
        knob = _Knob(kind="primary", remaining=count, path_contains=path_contains, seconds=reset_in)
        self._knobs.append(knob)

    def hang_next(self, count: int, seconds: float, path_contains: str = "") -> None:
        """Sleep ``seconds`` before answering the next ``count`` matching requests."""
        self._knobs.append(
            _Knob(kind="hang", remaining=count, path_contains=path_contains, seconds=seconds)
        )

    def hold_next(
        self,
        path_contains: str,
        count: int = 1,
        *,
        method: str | None = None,
        timeout: float = 30.0,
    ) -> Hold:
        """Hold the next ``count`` requests whose path contains ``path_contains`` (the API or
        the storage, "/blobs/" for an artifact download) until ``release()``."""
        hold = Hold(path_contains=path_contains, remaining=count, method=method, timeout=timeout)
        self._holds.append(hold)
        return hold

    def chaos(
        self,
        rate: float = 0.2,
        *,
        seed: int = 0,
        kinds: Sequence[ChaosKind] = CHAOS_KINDS,
        slow_seconds: float = 1.0,
        hang_seconds: float = 20.0,
    ) -> None:
        """From now on a fraction ``rate`` of API requests misbehave, each in one of ``kinds``:

        * ``5xx``: 500, 502, 503 or 504, and nothing is carried out;
        * ``secondary_rate_limit``: 403 or 429 with ``retry-after: 1`` and GitHub's message;
        * ``slow``: answered normally after ``slow_seconds``;
        * ``timeout``: answered 504 after ``hang_seconds`` (set it beyond the client's
          timeout), and not carried out.

        Every API request counts, the token exchange included; the artifact storage and the
        webhooks a test sends are never touched. Deterministic: ``seed`` fixes the sequence of
        draws, one sequence per API request in the order they arrive. ``rate=0`` (or
        ``calm()``) stops it. ``chaos_injected`` counts what was done.
        """
        if not 0 <= rate <= 1 or not kinds or any(k not in CHAOS_KINDS for k in kinds):
            raise ValueError(f"chaos needs a rate in [0, 1] and kinds among {CHAOS_KINDS}")
        self._chaos = _Chaos(
            rate=rate,
            kinds=tuple(kinds),
            rng=random.Random(seed),
            slow_seconds=slow_seconds,
            hang_seconds=hang_seconds,
        )
        self.chaos_injected.clear()

    def calm(self) -> None:
        """Stop ``chaos()``: every later request is answered normally."""
        self._chaos = None

    async def _chaotic_answer(self, path: str) -> Response | None:
        chaos = self._chaos
        if chaos is None or chaos.rng.random() >= chaos.rate:
            return None
        kind = chaos.rng.choice(chaos.kinds)
        self.chaos_injected[kind] += 1
        if kind == "slow":
            await asyncio.sleep(chaos.slow_seconds)
            return None
        if kind == "timeout":
            await asyncio.sleep(chaos.hang_seconds)
            return _error_json(504, "Gateway Timeout (chaos: the request was not carried out)")
        if kind == "secondary_rate_limit":
            return _error_json(
                chaos.rng.choice((403, 429)),
                _SECONDARY_LIMIT_MESSAGE,
                headers={"retry-after": "1", "x-ratelimit-remaining": "4990"},
                documentation_url=f"{DOCS}/overview/rate-limits-for-the-rest-api"
                "#about-secondary-rate-limits",
            )
        status = chaos.rng.choice((500, 502, 503, 504))
        return _error_json(status, f"{HTTPStatus(status).phrase} (chaos)")

    def _take_knob(self, kind: str, path: str) -> _Knob | None:
        for knob in self._knobs:
            if knob.kind == kind and knob.remaining > 0 and knob.matches(path):
                knob.remaining -= 1
                return knob
        return None

    async def _delay(self, path: str, *, api: bool, method: str = "GET") -> None:
        if api and self.latency > 0:
            await asyncio.sleep(self.latency)
        if (hang := self._take_knob("hang", path)) is not None:
            await asyncio.sleep(hang.seconds)
        for hold in self._holds:
            if hold.remaining > 0 and hold.path_contains in path and hold.method in (None, method):
                hold.remaining -= 1
                await hold.wait()
                break

    def _injected_failure(self, path: str) -> Response | None:
        if (knob := self._take_knob("secondary", path)) is not None:
            return _error_json(
                403,
                _SECONDARY_LIMIT_MESSAGE,
                headers={"retry-after": str(knob.retry_after), "x-ratelimit-remaining": "4990"},
                documentation_url=f"{DOCS}/overview/rate-limits-for-the-rest-api"
                "#about-secondary-rate-limits",
            )
        if (knob := self._take_knob("primary", path)) is not None:
            reset = int(self.now().timestamp() + knob.seconds)
            self.primary_resets.append(reset)
            return _error_json(
                403,
                "API rate limit exceeded for installation. If you reach out to GitHub Support"
                " for help, please include the request ID.",
                headers={
                    "x-ratelimit-limit": str(self.rate_limit),
                    "x-ratelimit-remaining": "0",
                    "x-ratelimit-used": str(self.rate_limit),
                    "x-ratelimit-reset": str(reset),
                    "x-ratelimit-resource": "core",
                },
                documentation_url=f"{DOCS}/overview/rate-limits-for-the-rest-api"
                "#about-primary-rate-limits",
            )
        if (knob := self._take_knob("fail", path)) is not None:
            phrase = HTTPStatus(knob.status).phrase
            return _error_json(knob.status, f"{phrase} (injected by the fake)")
        return None

    # -- webhook payloads ------------------------------------------------------------------------

    def webhook_payload_workflow_run(self, run: Run, action: str = "completed") -> Json:
        """The ``workflow_run`` delivery GitHub would send to the App for ``run``."""
        return _workflow_run_event(self, run, action)

    def webhook_payload_issue_comment(
        self, comment: Comment, action: str = "created", sender: str | None = None
    ) -> Json:
        """The ``issue_comment`` delivery for ``comment`` (with ``issue.pull_request`` on PRs)."""
        return _issue_comment_event(self, comment, action, sender or comment.user)

    def webhook_payload_check_run(
        self,
        check_run: CheckRun,
        action: str = "rerequested",
        sender: str = "alice",
        requested_action: str | None = None,
    ) -> Json:
        """The ``check_run`` delivery (``rerequested`` when someone clicks "Re-run")."""
        return _check_run_event(self, check_run, action, sender, requested_action)

    def webhook_payload_issues(
        self,
        issue: Issue,
        action: str = "opened",
        sender: str | None = None,
        *,
        label: str | None = None,
        changes: Mapping[str, str] | None = None,
    ) -> Json:
        """The ``issues`` delivery for ``issue`` (``opened``, ``edited``, ``closed``,
        ``reopened``, ``labeled``…): ``label`` names the label of ``labeled``/``unlabeled``,
        ``changes`` the previous ``title``/``body`` of ``edited``."""
        return _issues_event(self, issue, action, sender or issue.user, label, changes)

    def webhook_payload_check_suite(
        self, check_run: CheckRun, action: str = "rerequested", sender: str = "alice"
    ) -> Json:
        """The ``check_suite`` delivery of ``check_run``'s suite ("Re-run all checks")."""
        return _check_suite_event(self, check_run, action, sender)

    def webhook_payload_installation(
        self,
        installation_id: int,
        action: str,
        repositories: Sequence[tuple[str, int]] = (),
        sender: str = "alice",
    ) -> Json:
        """The ``installation`` delivery (``created``, ``deleted``, ``suspend``,
        ``unsuspend``…), naming ``repositories`` ((full name, id) pairs) where GitHub does:
        on ``created`` and ``deleted``."""
        return _installation_event(self, installation_id, action, repositories, sender)

    def webhook_payload_installation_repositories(
        self,
        installation_id: int,
        action: str,
        added: Sequence[tuple[str, int]] = (),
        removed: Sequence[tuple[str, int]] = (),
        sender: str = "alice",
    ) -> Json:
        """The ``installation_repositories`` delivery: repositories ((full name, id)
        pairs) ``added`` to or ``removed`` from the installation."""
        return _installation_repositories_event(
            self, installation_id, action, added, removed, sender
        )

    def webhook_headers(
        self, event: str, body: bytes, secret: str, delivery: str | None = None
    ) -> dict[str, str]:
        """The headers of a signed delivery of ``body``, as GitHub sends them to the App."""
        sha256 = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        sha1 = hmac.new(secret.encode(), body, hashlib.sha1).hexdigest()
        return {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/fake",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-GitHub-Hook-ID": str(self.stable_id("hook")),
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": str(self.app_id),
            "X-Hub-Signature-256": f"sha256={sha256}",
            "X-Hub-Signature": f"sha1={sha1}",
        }

    # -- serving -----------------------------------------------------------------------------

    def transport(self) -> FakeTransport:
        """An httpx transport that answers ``api_url`` and ``storage_url`` in-process."""
        return FakeTransport(self)

    def _identify(self, header: str | None) -> _Credential:
        """Which valid credential the Authorization header carries (no side effects)."""
        if not header:
            return _Credential(None, None, "Requires authentication")
        scheme, _, value = header.partition(" ")
        scheme, value = scheme.lower(), value.strip()
        if scheme not in ("bearer", "token") or not value:
            return _Credential(None, None, "Bad credentials")
        if scheme == "bearer" and value.count(".") == 2:
            problem = self._jwt_problem(value)
            return _Credential(None if problem else "jwt", None, problem or "")
        token = self.tokens.get(value)
        if token is None or token.expires_at <= self.now():
            return _Credential(None, None, "Bad credentials")
        return _Credential("token", token, "")

    def _jwt_problem(self, raw: str) -> str | None:
        """Why GitHub would refuse this App JWT, or None. Uses the real clock (see __init__)."""
        try:
            claims = jwt.decode(
                raw,
                self.public_key_pem,
                algorithms=["RS256"],
                issuer=str(self.app_id),
                options={"require": ["iat", "exp", "iss"]},
            )
        except jwt.ExpiredSignatureError:
            return (
                "'Expiration time' claim ('exp') must be a numeric value representing the "
                "future time at which the assertion expires"
            )
        except jwt.InvalidIssuerError:
            return "'Issuer' claim ('iss') must be the App's id"
        except jwt.PyJWTError:
            return "A JSON web token could not be decoded"
        if int(claims["exp"]) > time.time() + 600 + 30:
            return "'Expiration time' claim ('exp') is too far in the future"
        return None

    async def _serve_api(self, request: Request) -> Response:
        started = time.perf_counter()
        raw = await request.body()
        credential = self._identify(request.headers.get("authorization"))
        record = RecordedRequest(
            method=request.method,
            path=request.url.path,
            query=dict(request.query_params),
            status=0,
            auth=credential.kind,
            duration=0.0,
            installation_id=credential.token.installation_id if credential.token else None,
            body=_recorded_body(raw),
            api_version=request.headers.get("x-github-api-version"),
            user_agent=request.headers.get("user-agent", ""),
            at=self.now().timestamp(),
        )
        self.requests.append(record)
        if record.installation_id is not None and not _is_token_path(record.path):
            self._calls_per_installation[record.installation_id] += 1
        try:
            response = await self._answer(request, raw, credential)
        finally:
            record.duration = time.perf_counter() - started
        record.status = response.status_code
        record.response_type = response.headers.get("content-type", "")
        record.response_body = bytes(response.body)
        for observer in _observers:
            observer(self, record)
        return response

    async def _answer(self, request: Request, raw: bytes, credential: _Credential) -> Response:
        path = request.url.path
        await self._delay(path, api=True, method=request.method)
        if (chaotic := await self._chaotic_answer(path)) is not None:
            return chaotic
        if (injected := self._injected_failure(path)) is not None:
            return injected
        route, params = _match(request.method, path)
        if route is None:
            self.unknown_routes.append(f"{request.method} {path}")
            return _error_json(501, f"fake GitHub does not implement {request.method} {path}")
        version = request.headers.get("x-github-api-version", DEFAULT_API_VERSION)
        rendering = _rendering.set(version)
        try:
            call = self._authorize(route, params, request, raw, credential)
            response = route.handler(call)
        except _HttpError as error:
            response = error.response()
        finally:
            _rendering.reset(rendering)
        if request.method == "GET" and response.status_code == 200:
            response = self._validated(request, route, response, credential)
        self._decorate(response, request, route, credential)
        return response

    def _validated(
        self, request: Request, route: _Route, response: Response, credential: _Credential
    ) -> Response:
        """The answer with its ``ETag``; a 304 instead where the operation documents one and
        ``If-None-Match`` names the answer's current ETag (GitHub does not count a 304
        against the rate limit, nor does the fake)."""
        etag = f'W/"{hashlib.sha256(bytes(response.body)).hexdigest()[:40]}"'
        response.headers["etag"] = etag
        asked = request.headers.get("if-none-match", "")
        if route.handler not in _CONDITIONAL or etag not in (t.strip() for t in asked.split(",")):
            return response
        if credential.token is not None:
            self._calls_per_installation[credential.token.installation_id] -= 1
        return Response(status_code=304, headers={"etag": etag})

    def _authorize(
        self,
        route: _Route,
        params: dict[str, str],
        request: Request,
        raw: bytes,
        credential: _Credential,
    ) -> _Call:
        version = request.headers.get("x-github-api-version", DEFAULT_API_VERSION)
        if version not in SUPPORTED_API_VERSIONS:
            raise _HttpError(400, f"Unsupported 'X-GitHub-Api-Version': '{version}'")
        body = _parse_body(raw)
        if route.public:
            return _Call(self, request, params, body, None, None)
        if route.auth == "jwt":
            if credential.kind != "jwt":
                raise _HttpError(401, credential.problem or "A JSON web token could not be decoded")
            return _Call(self, request, params, body, None, None)
        if credential.token is None:
            raise _HttpError(
                401, credential.problem or "This route needs an installation token, not a JWT"
            )
        repo = self._visible_repo(params, credential.token)
        if not credential.token.allows(route.permissions, route.level):
            raise _HttpError(403, "Resource not accessible by integration")
        return _Call(self, request, params, body, credential.token, repo)

    def _visible_repo(self, params: Mapping[str, str], token: Token) -> Repo:
        """The repository of the URL, or 404 as GitHub answers for one the token cannot see."""
        repo = self.repos.get(f"{params['owner']}/{params['repo']}".lower())
        if (
            repo is None
            or repo.installation_id != token.installation_id
            or (token.repository_ids is not None and repo.id not in token.repository_ids)
        ):
            raise _HttpError(404, "Not Found")
        return repo

    def _decorate(
        self, response: Response, request: Request, route: _Route, credential: _Credential
    ) -> None:
        headers = response.headers
        headers["x-github-request-id"] = f"FAKE:{len(self.requests):06d}"
        headers["x-github-api-version-selected"] = request.headers.get(
            "x-github-api-version", DEFAULT_API_VERSION
        )
        if route.permissions:
            # GitHub's format: "; " between alternatives, "," inside one set.
            headers["x-accepted-github-permissions"] = "; ".join(
                f"{name}={route.level}" for name in route.permissions
            )
        if credential.token is not None:
            used = self._calls_per_installation[credential.token.installation_id]
            reset = int(self.now().timestamp()) + 3600
            headers["x-ratelimit-limit"] = str(self.rate_limit)
            headers["x-ratelimit-used"] = str(used)
            headers["x-ratelimit-remaining"] = str(max(0, self.rate_limit - used))
            headers["x-ratelimit-reset"] = str(reset)
            headers["x-ratelimit-resource"] = "core"

    async def _serve_storage(self, request: Request) -> Response:
        record = StorageRequest(
            method=request.method,
            path=request.url.path,
            headers={key.lower(): value for key, value in request.headers.items()},
            status=0,
        )
        self.storage_requests.append(record)
        await self._delay(request.url.path, api=False, method=request.method)
        response = self._injected_failure(request.url.path) or self._blob_response(request)
        record.status = response.status_code
        return response

    def _blob_response(self, request: Request) -> Response:
        match = re.fullmatch(r"/blobs/([A-Za-z0-9_-]+)", request.url.path)
        if request.method != "GET" or match is None:
            return Response("BlobNotFound", status_code=404, media_type="text/plain")
        if "authorization" in request.headers:
            # The URL is already signed; a signed-URL store refuses a second credential, and
            # a GitHub token has no business leaving api.github.com anyway.
            return Response(
                "InvalidAuthenticationInfo: signed URL used with an Authorization header",
                status_code=400,
                media_type="text/plain",
            )
        blob = self.blobs.get(match.group(1))
        if blob is None:
            return Response("BlobNotFound", status_code=404, media_type="text/plain")
        if blob.expires_at <= self.now():
            return Response(
                "AuthenticationFailed: signed expiry time has passed",
                status_code=403,
                media_type="text/plain",
            )
        artifact = self.artifacts.get(blob.artifact_id)
        filename = f"{artifact.name if artifact else 'artifact'}.zip"
        return Response(
            blob.data,
            media_type="application/zip",
            headers={"content-disposition": f"attachment; filename={filename}"},
        )


# ---------------------------------------------------------------------------------------------
# HTTP plumbing


@dataclass(frozen=True)
class _Credential:
    kind: AuthKind | None
    token: Token | None
    problem: str  # the 401 message when kind is None


@dataclass(frozen=True)
class _Call:
    """What a route handler needs: the fake, the request and its checked parts."""

    fake: FakeGitHub
    request: Request
    params: dict[str, str]
    body: Any
    token: Token | None
    repo_or_none: Repo | None

    @property
    def repo(self) -> Repo:
        assert self.repo_or_none is not None, "a /repos route always resolves its repository"
        return self.repo_or_none

    @property
    def query(self) -> Mapping[str, str]:
        return self.request.query_params

    def int_param(self, name: str) -> int:
        return int(self.params[name])


class _HttpError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        errors: list[Json] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors
        self.headers = dict(headers or {})

    def response(self) -> Response:
        return _error_json(self.status, self.message, errors=self.errors, headers=self.headers)


def _invalid(resource: str, field_name: str, message: str) -> _HttpError:
    """GitHub's 422 shape: "Validation Failed" with one error naming the field."""
    error = {"resource": resource, "code": "unprocessable", "field": field_name, "message": message}
    return _HttpError(422, "Validation Failed", errors=[error])


def _json(content: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return JSONResponse(content, status_code=status, headers=dict(headers or {}))


def _error_json(
    status: int,
    message: str,
    *,
    errors: list[Json] | None = None,
    headers: Mapping[str, str] | None = None,
    documentation_url: str = DOCS,
) -> Response:
    content: Json = {"message": message, "documentation_url": documentation_url}
    if errors is not None:
        content["errors"] = errors
    content["status"] = str(status)
    return _json(content, status, headers)


def _parse_body(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError as error:
        raise _HttpError(400, "Problems parsing JSON") from error


def _recorded_body(raw: bytes) -> Any:
    """The body for the request log: its JSON, or its text when it is not JSON."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def _body_dict(call: _Call) -> Json:
    if call.body is None:
        return {}
    if not isinstance(call.body, dict):
        raise _HttpError(400, "Problems parsing JSON")
    return cast(Json, call.body)


def _int_query(call: _Call, name: str, default: int, low: int, high: int | None) -> int:
    text = call.query.get(name)
    if text is None:
        return default
    if not text.isdigit():
        raise _HttpError(422, f"Invalid value for '{name}': {text!r}")
    value = max(low, int(text))
    return value if high is None else min(high, value)


def _paginate(call: _Call, items: Sequence[T]) -> tuple[list[T], dict[str, str]]:
    """One page of ``items`` and the ``Link`` header GitHub would send with it."""
    per_page = _int_query(call, "per_page", 30, 1, 100)
    page = _int_query(call, "page", 1, 1, None)
    last = max(1, math.ceil(len(items) / per_page))
    url = call.request.url
    links: list[str] = []
    if page > 1:
        links.append(f'<{url.include_query_params(page=min(page - 1, last))}>; rel="prev"')
    if page < last:
        links.append(f'<{url.include_query_params(page=page + 1)}>; rel="next"')
        links.append(f'<{url.include_query_params(page=last)}>; rel="last"')
    if page > 1:
        links.append(f'<{url.include_query_params(page=1)}>; rel="first"')
    chunk = list(items[(page - 1) * per_page : page * per_page])
    return chunk, ({"link": ", ".join(links)} if links else {})


Handler = Callable[[_Call], Response]


@dataclass(frozen=True)
class _Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    auth: AuthKind
    permissions: tuple[str, ...]  # any one of them suffices
    level: str
    public: bool = False  # answered without any credential (the manifest code exchange)


_PARAM_PATTERNS: Final = {None: "[^/]+", "int": "[0-9]+", "path": ".+"}


def _compile(template: str) -> re.Pattern[str]:
    """``/repos/{owner}/{repo}/pulls/{number:int}`` → an anchored regex with named groups."""
    parts = re.split(r"\{(\w+)(?::(int|path))?\}", template)
    regex = re.escape(parts[0])
    for index in range(1, len(parts), 3):
        name, kind, literal = parts[index], parts[index + 1], parts[index + 2]
        regex += f"(?P<{name}>{_PARAM_PATTERNS[kind]})" + re.escape(literal)
    return re.compile(regex)


def _route(
    method: str,
    template: str,
    handler: Handler,
    *permissions: str,
    level: str = "read",
) -> _Route:
    auth: AuthKind = "jwt" if template.startswith("/app") else "token"
    return _Route(method, _compile(template), handler, auth, permissions, level)


def _match(method: str, path: str) -> tuple[_Route | None, dict[str, str]]:
    for route in _ROUTES:
        if route.method == method and (found := route.pattern.fullmatch(path)):
            return route, found.groupdict()
    return None, {}


# ---------------------------------------------------------------------------------------------
# Rendering: state → the JSON GitHub would send


def _user_json(fake: FakeGitHub, login: str, user_type: str = "User") -> Json:
    replacements = {"https://api.github.com": fake.api_url, "Codertocat": quote(login, safe="")}
    user = cast(Json, _rewritten(_USER_TEMPLATE, replacements))
    user_id = fake.stable_id(f"user:{login.lower()}")
    user.update(
        login=login,
        id=user_id,
        node_id=_node_id("U", user_id),
        avatar_url=f"https://avatars.githubusercontent.com/u/{user_id}?v=4",
        type=user_type,
        site_admin=False,
    )
    return user


def _owner_type(fake: FakeGitHub, login: str) -> str:
    for installation in fake.installations.values():
        if installation.account_login.lower() == login.lower():
            return installation.account_type
    return "User"


def _repo_json(
    fake: FakeGitHub,
    full_name: str,
    repo_id: int,
    *,
    private: bool = False,
    default_branch: str = "main",
    fork: bool = False,
) -> Json:
    """A full repository object (valid as Repository and as MinimalRepository)."""
    repo = cast(
        Json,
        _rewritten(
            _REPO_TEMPLATE,
            {"https://api.github.com": fake.api_url, "octo-org/octo-repo": full_name},
        ),
    )
    owner, name = full_name.split("/")
    repo.update(
        id=repo_id,
        node_id=_node_id("R", repo_id),
        name=name,
        full_name=full_name,
        private=private,
        visibility="private" if private else "public",
        fork=fork,
        default_branch=default_branch,
        owner=_user_json(fake, owner, _owner_type(fake, owner)),
        description=None,
    )
    if _legacy():
        repo["master_branch"] = default_branch
    else:
        for removed in ("has_downloads", "master_branch", "use_squash_pr_title_as_default"):
            repo.pop(removed, None)
    return repo


def _known_repo_json(fake: FakeGitHub, repo: Repo) -> Json:
    return _repo_json(
        fake, repo.full_name, repo.id, private=repo.private, default_branch=repo.default_branch
    )


def _head_repo_json(fake: FakeGitHub, base: Repo, full_name: str, repo_id: int) -> Json:
    if full_name.lower() == base.full_name.lower():
        return _known_repo_json(fake, base)
    known = fake.repos.get(full_name.lower())
    if known is not None:
        return _known_repo_json(fake, known)
    return _repo_json(fake, full_name, repo_id, default_branch=base.default_branch, fork=True)


def _app_json(fake: FakeGitHub, app_id: int | None = None, slug: str | None = None) -> Json:
    """The Integration object of this App (or of another one, for foreign bot comments)."""
    app = copy.deepcopy(_APP_TEMPLATE)
    app_id = app_id or fake.app_id
    slug = slug or (fake.app_slug if app_id == fake.app_id else f"app-{app_id}")
    moment = _iso(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    app.update(
        id=app_id,
        slug=slug,
        client_id=f"Iv1.{_fake_sha(app_id)[:16]}",
        node_id=_node_id("A", app_id),
        owner=_user_json(fake, "perfbot-dev", "Organization"),
        name=slug.replace("-", " ").title(),
        description="Network-performance comparisons on pull requests (fake)",
        external_url="https://perfbot.example",
        html_url=f"https://github.com/apps/{slug}",
        created_at=moment,
        updated_at=moment,
        permissions=dict(DEFAULT_PERMISSIONS),
        events=["check_run", "issue_comment", "pull_request", "workflow_run"],
        installations_count=len(fake.installations),
    )
    return app


def _label_json(fake: FakeGitHub, repo: str, name: str) -> Json:
    label_id = fake.stable_id(f"label:{repo.lower()}:{name}")
    return {
        "id": label_id,
        "node_id": _node_id("LA", label_id),
        "url": f"{fake.api_url}/repos/{repo}/labels/{quote(name)}",
        "name": name,
        # A string: pull-request-simple's labels have no null description (GitHub's own
        # answers do send null for a label without one; tests/CONFORMANCE.md).
        "description": "",
        "color": "ededed",
        "default": False,
        "archived_by": None,  # required (and always null) in the 2026-03-10 schema
    }


def _pull_side_json(
    fake: FakeGitHub, base: Repo, ref: str, sha: str, full_name: str, repo_id: int
) -> Json:
    owner = full_name.split("/", maxsplit=1)[0]
    return {
        "label": f"{owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": _user_json(fake, owner, _owner_type(fake, owner)),
        "repo": _head_repo_json(fake, base, full_name, repo_id),
    }


_SIMPLE_PULL_OMITS: Final = (
    "merged",
    "mergeable",
    "rebaseable",
    "mergeable_state",
    "merged_by",
    "comments",
    "review_comments",
    "maintainer_can_modify",
    "commits",
    "additions",
    "deletions",
    "changed_files",
)


def _pull_json(fake: FakeGitHub, pull: Pull, *, simple: bool = False) -> Json:
    """PullRequest, or PullRequestSimple (the list form) with ``simple``."""
    base = fake.repo(pull.repo)
    api = f"{fake.api_url}/repos/{base.full_name}"
    html = f"https://github.com/{base.full_name}/pull/{pull.number}"
    obj = copy.deepcopy(_PULL_TEMPLATE)
    closed = pull.state == "closed"
    stamp = _iso(pull.created_at)
    obj.update(
        url=f"{api}/pulls/{pull.number}",
        id=pull.id,
        node_id=_node_id("PR", pull.id),
        html_url=html,
        diff_url=f"{html}.diff",
        patch_url=f"{html}.patch",
        issue_url=f"{api}/issues/{pull.number}",
        number=pull.number,
        state=pull.state,
        title=pull.title,
        user=_user_json(fake, pull.user),
        body="",
        created_at=stamp,
        updated_at=stamp,
        closed_at=stamp if closed else None,
        merged_at=stamp if pull.merged else None,
        assignees=[],
        requested_reviewers=[],
        labels=[_label_json(fake, base.full_name, name) for name in pull.labels],
        commits_url=f"{api}/pulls/{pull.number}/commits",
        review_comments_url=f"{api}/pulls/{pull.number}/comments",
        review_comment_url=f"{api}/pulls/comments{{/number}}",
        comments_url=f"{api}/issues/{pull.number}/comments",
        statuses_url=f"{api}/statuses/{pull.head_sha}",
        head=_pull_side_json(
            fake, base, pull.head_ref, pull.head_sha, pull.head_repo_full_name, pull.head_repo_id
        ),
        base=_pull_side_json(fake, base, pull.base_ref, pull.base_sha, base.full_name, base.id),
        author_association="CONTRIBUTOR" if pull.is_fork else "MEMBER",
        draft=pull.draft,
        merged=pull.merged,
        comments=len(fake.comments_on(base, pull.number)),
    )
    obj["_links"] = {
        "self": {"href": f"{api}/pulls/{pull.number}"},
        "html": {"href": html},
        "issue": {"href": f"{api}/issues/{pull.number}"},
        "comments": {"href": f"{api}/issues/{pull.number}/comments"},
        "review_comments": {"href": f"{api}/pulls/{pull.number}/comments"},
        "review_comment": {"href": f"{api}/pulls/comments{{/number}}"},
        "commits": {"href": f"{api}/pulls/{pull.number}/commits"},
        "statuses": {"href": f"{api}/statuses/{pull.head_sha}"},
    }
    if _legacy():
        obj.update(merge_commit_sha=_fake_sha("merge", pull.id), assignee=None)
    else:
        obj.pop("merge_commit_sha", None)
        obj.pop("assignee", None)
    if simple:
        for key in _SIMPLE_PULL_OMITS:
            obj.pop(key, None)
    return obj


def _pull_minimal_json(fake: FakeGitHub, pull: Pull) -> Json:
    """The short PR form of ``workflow_run.pull_requests`` and ``check_run.pull_requests``."""
    base = fake.repo(pull.repo)

    def side(ref: str, sha: str, full_name: str, repo_id: int) -> Json:
        url = f"{fake.api_url}/repos/{full_name}"
        repo = {"id": repo_id, "url": url, "name": full_name.split("/")[1]}
        return {"ref": ref, "sha": sha, "repo": repo}

    return {
        "url": f"{fake.api_url}/repos/{base.full_name}/pulls/{pull.number}",
        "id": pull.id,
        "number": pull.number,
        "head": side(pull.head_ref, pull.head_sha, pull.head_repo_full_name, pull.head_repo_id),
        "base": side(pull.base_ref, pull.base_sha, base.full_name, base.id),
    }


def _run_pull_requests(fake: FakeGitHub, run: Run) -> list[Pull]:
    if run.pull_requests is not None:
        return run.pull_requests
    if run.is_fork:
        return []  # GitHub leaves it empty for fork PRs (actions/runner#3444)
    return [
        p
        for p in fake.repo(run.repo).pulls.values()
        if p.state == "open"
        and not p.is_fork
        and (p.head_sha == run.head_sha or p.head_ref == run.head_branch)
    ]


def _run_json(fake: FakeGitHub, run: Run) -> Json:
    base = fake.repo(run.repo)
    api = f"{fake.api_url}/repos/{base.full_name}"
    url = f"{api}/actions/runs/{run.id}"
    obj = copy.deepcopy(_RUN_TEMPLATE)
    obj.update(
        id=run.id,
        name=run.name,
        node_id=_node_id("WFR", run.id),
        head_branch=run.head_branch,
        head_sha=run.head_sha,
        path=run.path,
        display_title=run.display_title,
        run_number=run.run_number,
        event=run.event,
        status=run.status,
        conclusion=run.conclusion,
        workflow_id=run.workflow_id,
        check_suite_id=run.check_suite_id,
        check_suite_node_id=_node_id("CS", run.check_suite_id),
        url=url,
        html_url=f"https://github.com/{base.full_name}/actions/runs/{run.id}",
        pull_requests=[_pull_minimal_json(fake, p) for p in _run_pull_requests(fake, run)],
        created_at=_iso(run.created_at),
        updated_at=_iso(run.updated_at),
        actor=_user_json(fake, run.actor),
        triggering_actor=_user_json(fake, run.actor),
        run_attempt=run.run_attempt,
        run_started_at=_iso(run.updated_at),
        jobs_url=f"{url}/jobs",
        logs_url=f"{url}/logs",
        check_suite_url=f"{api}/check-suites/{run.check_suite_id}",
        artifacts_url=f"{url}/artifacts",
        cancel_url=f"{url}/cancel",
        rerun_url=f"{url}/rerun",
        previous_attempt_url=(
            f"{url}/attempts/{run.run_attempt - 1}" if run.run_attempt > 1 else None
        ),
        workflow_url=f"{api}/actions/workflows/{run.workflow_id}",
        repository=_known_repo_json(fake, base),
        head_repository=_head_repo_json(fake, base, run.head_repo_full_name, run.head_repo_id),
    )
    obj["head_commit"].update(
        id=run.head_sha, tree_id=_fake_sha("tree", run.head_sha), message=run.display_title
    )
    return obj


def _artifact_json(fake: FakeGitHub, artifact: Artifact) -> Json:
    run = fake.runs.get(artifact.run_id)
    url = f"{fake.api_url}/repos/{artifact.repo}/actions/artifacts/{artifact.id}"
    expires = artifact.created_at + ARTIFACT_RETENTION
    if artifact.expired:
        expires = min(expires, fake.now() - timedelta(seconds=1))
    obj = copy.deepcopy(_ARTIFACT_TEMPLATE)
    obj.update(
        id=artifact.id,
        node_id=_node_id("AR", artifact.id),
        name=artifact.name,
        size_in_bytes=len(artifact.data),
        url=url,
        archive_download_url=f"{url}/zip",
        expired=artifact.expired,
        digest=artifact.digest,
        created_at=_iso(artifact.created_at),
        updated_at=_iso(artifact.created_at),
        expires_at=_iso(expires),
        workflow_run=None
        if run is None
        else {
            "id": run.id,
            "repository_id": fake.repo(run.repo).id,
            "head_repository_id": run.head_repo_id,
            "head_branch": run.head_branch,
            "head_sha": run.head_sha,
        },
    )
    return obj


def _author_association(fake: FakeGitHub, comment: Comment) -> str:
    return _association(fake, fake.repo(comment.repo), comment.user, comment.user_type)


def _reaction_counts(comment: Comment, url: str) -> Json:
    counts: Json = {"url": f"{url}/reactions", "total_count": len(comment.reactions)}
    for content in _REACTIONS:
        counts[content] = sum(1 for r in comment.reactions if r.content == content)
    return counts


def _comment_json(fake: FakeGitHub, comment: Comment) -> Json:
    repo = fake.repo(comment.repo)
    kind = "pull" if comment.issue_number in repo.pulls else "issues"
    url = f"{fake.api_url}/repos/{repo.full_name}/issues/comments/{comment.id}"
    app = None
    if comment.app_id is not None:
        app = _app_json(fake, comment.app_id, comment.user.removesuffix("[bot]"))
    obj = copy.deepcopy(_COMMENT_TEMPLATE)
    obj.update(
        url=url,
        html_url=f"https://github.com/{repo.full_name}/{kind}/{comment.issue_number}"
        f"#issuecomment-{comment.id}",
        issue_url=f"{fake.api_url}/repos/{repo.full_name}/issues/{comment.issue_number}",
        id=comment.id,
        node_id=_node_id("IC", comment.id),
        user=_user_json(fake, comment.user, comment.user_type),
        created_at=_iso(comment.created_at),
        updated_at=_iso(comment.updated_at),
        author_association=_author_association(fake, comment),
        performed_via_github_app=app,
        body=comment.body,
        reactions=_reaction_counts(comment, url),
    )
    return obj


def _reaction_json(fake: FakeGitHub, reaction: Reaction) -> Json:
    user_type = "Bot" if reaction.user.endswith("[bot]") else "User"
    return {
        "id": reaction.id,
        "node_id": _node_id("REA", reaction.id),
        "user": _user_json(fake, reaction.user, user_type),
        "content": reaction.content,
        "created_at": _iso(reaction.created_at),
    }


def _check_run_json(fake: FakeGitHub, check: CheckRun) -> Json:
    api = f"{fake.api_url}/repos/{check.repo}"
    url = f"{api}/check-runs/{check.id}"
    obj = copy.deepcopy(_CHECK_RUN_TEMPLATE)
    repo = fake.repo(check.repo)
    pulls = [
        _pull_minimal_json(fake, p)
        for p in repo.pulls.values()
        if p.head_sha == check.head_sha and p.state == "open" and not p.is_fork
    ]
    obj.update(
        id=check.id,
        head_sha=check.head_sha,
        node_id=_node_id("CR", check.id),
        external_id=check.external_id,
        url=url,
        html_url=f"https://github.com/{check.repo}/runs/{check.id}",
        details_url=check.details_url or f"https://github.com/{check.repo}/runs/{check.id}",
        status=check.status,
        conclusion=check.conclusion,
        started_at=_iso(check.started_at) if check.started_at else None,
        completed_at=_iso(check.completed_at) if check.completed_at else None,
        output={
            "title": check.output.get("title"),
            "summary": check.output.get("summary"),
            "text": check.output.get("text"),
            "annotations_count": 0,
            "annotations_url": f"{url}/annotations",
        },
        name=check.name,
        check_suite={"id": check.check_suite_id},
        app=_app_json(fake, check.app_id),
        pull_requests=pulls,
    )
    return obj


def _delivery_json(delivery: Delivery) -> Json:
    return {
        "id": delivery.id,
        "guid": delivery.guid,
        "delivered_at": _iso(delivery.delivered_at),
        "redelivery": delivery.redelivery,
        "duration": delivery.duration,
        "status": delivery.status,
        "status_code": delivery.status_code,
        "event": delivery.event,
        "action": delivery.action,
        "installation_id": delivery.installation_id,
        "repository_id": delivery.repository_id,
        "throttled_at": None,
    }


def _content_links(fake: FakeGitHub, repo: Repo, path: str, ref: str, sha: str) -> Json:
    api = f"{fake.api_url}/repos/{repo.full_name}"
    return {
        "url": f"{api}/contents/{quote(path)}?ref={quote(ref)}",
        "git_url": f"{api}/git/blobs/{sha}",
        "html_url": f"https://github.com/{repo.full_name}/blob/{ref}/{quote(path)}",
    }


def _content_file_json(fake: FakeGitHub, repo: Repo, path: str, ref: str, data: bytes) -> Json:
    sha = _git_blob_sha(data)
    links = _content_links(fake, repo, path, ref, sha)
    encoded = base64.b64encode(data).decode()
    # GitHub wraps the base64 text at 60 columns with "\n"; clients must tolerate it.
    wrapped = "\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60)) + "\n"
    return {
        "type": "file",
        "encoding": "base64",
        "size": len(data),
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "content": wrapped,
        "sha": sha,
        **links,
        "download_url": f"https://raw.githubusercontent.com/{repo.full_name}/{ref}/{path}",
        "_links": {"self": links["url"], "git": links["git_url"], "html": links["html_url"]},
    }


def _content_dir_json(
    fake: FakeGitHub, repo: Repo, path: str, ref: str, files: Mapping[str, bytes]
) -> list[Json]:
    prefix = f"{path}/" if path else ""
    entries: dict[str, Json] = {}
    for name, data in sorted(files.items()):
        if not name.startswith(prefix):
            continue
        child, _, rest = name[len(prefix) :].partition("/")
        child_path = prefix + child
        if child_path in entries:
            continue
        sha = _git_blob_sha(data) if not rest else _fake_sha("tree", child_path)
        links = _content_links(fake, repo, child_path, ref, sha)
        entries[child_path] = {
            "type": "dir" if rest else "file",
            "size": 0 if rest else len(data),
            "name": child,
            "path": child_path,
            "sha": sha,
            **links,
            "download_url": None if rest else links["html_url"],
            "_links": {"self": links["url"], "git": links["git_url"], "html": links["html_url"]},
        }
    return list(entries.values())


def _collaborator_json(fake: FakeGitHub, login: str, role: str) -> Json:
    level = _LEVELS[_ROLE_TO_PERMISSION[role]]
    user = _user_json(fake, login)
    user["permissions"] = {
        "pull": level >= 1,
        "triage": role in ("triage", "write", "maintain", "admin"),
        "push": level >= 2,
        "maintain": role in ("maintain", "admin"),
        "admin": role == "admin",
    }
    user["role_name"] = role
    return user


# ---------------------------------------------------------------------------------------------
# Webhook payloads


def _installation_stub(repo: Repo) -> Json:
    return {"id": repo.installation_id, "node_id": _node_id("IN", repo.installation_id)}


def _with_repository(fake: FakeGitHub, payload: Json, repo: Repo, sender: str) -> Json:
    """Adds the parts every App delivery has: repository, sender, installation, organization."""
    payload["repository"] = _known_repo_json(fake, repo)
    payload["sender"] = _user_json(fake, sender, "Bot" if sender.endswith("[bot]") else "User")
    payload["installation"] = _installation_stub(repo)
    payload.pop("organization", None)
    if _owner_type(fake, repo.owner) == "Organization":
        organization = cast(
            Json,
            _rewritten(
                _ORG_TEMPLATE, {"octo-org": repo.owner, "https://api.github.com": fake.api_url}
            ),
        )
        org_id = fake.stable_id(f"user:{repo.owner.lower()}")
        organization.update(id=org_id, node_id=_node_id("O", org_id), login=repo.owner)
        payload["organization"] = organization
    return payload


def _workflow_run_event(fake: FakeGitHub, run: Run, action: str) -> Json:
    repo = fake.repo(run.repo)
    payload = copy.deepcopy(_WORKFLOW_RUN_EVENT)
    workflow = payload["workflow"]
    workflow.update(
        id=run.workflow_id,
        node_id=_node_id("W", run.workflow_id),
        name=run.name,
        path=run.path,
        url=f"{fake.api_url}/repos/{repo.full_name}/actions/workflows/{run.workflow_id}",
        html_url=f"https://github.com/{repo.full_name}/blob/{repo.default_branch}/{run.path}",
        badge_url=f"https://github.com/{repo.full_name}/workflows/{quote(run.name)}/badge.svg",
    )
    payload["action"] = action
    payload["workflow_run"] = _run_json(fake, run)
    return _with_repository(fake, payload, repo, run.actor)


def _issue_json(fake: FakeGitHub, repo: Repo, number: int) -> Json:
    """The issue ``number``: a plain issue, or a pull request as the issues API shows it."""
    api = f"{fake.api_url}/repos/{repo.full_name}"
    obj = copy.deepcopy(_ISSUE_TEMPLATE)
    pull = repo.pulls.get(number)
    issue = repo.issues.get(number)
    kind = "pull" if pull else "issues"
    body: str | None
    if pull is not None:
        issue_id = fake.stable_id(f"issue:{repo.full_name}:{number}")
        title, body, state, labels = pull.title, "", pull.state, pull.labels
        user, user_type, app_id, state_reason = pull.user, "User", None, None
        created, updated = pull.created_at, pull.created_at
        closed = pull.created_at if pull.state == "closed" else None
        closed_by = None
    else:
        assert issue is not None, f"{repo.full_name}#{number} is neither issue nor pull"
        issue_id, title, body, state, labels = (
            issue.id,
            issue.title,
            issue.body,
            issue.state,
            issue.labels,
        )
        user, user_type, app_id = issue.user, issue.user_type, issue.app_id
        state_reason, created, updated = issue.state_reason, issue.created_at, issue.updated_at
        closed, closed_by = issue.closed_at, issue.closed_by
    app = None
    if app_id is not None:
        app = _app_json(fake, app_id, user.removesuffix("[bot]"))
    obj.update(
        url=f"{api}/issues/{number}",
        repository_url=api,
        labels_url=f"{api}/issues/{number}/labels{{/name}}",
        comments_url=f"{api}/issues/{number}/comments",
        events_url=f"{api}/issues/{number}/events",
        html_url=f"https://github.com/{repo.full_name}/{kind}/{number}",
        id=issue_id,
        node_id=_node_id("I", issue_id),
        number=number,
        title=title,
        user=_user_json(fake, user, user_type),
        labels=[_label_json(fake, repo.full_name, n) for n in labels],
        state=state,
        state_reason=state_reason,
        locked=bool(issue and issue.locked),
        assignees=[],
        comments=len(fake.comments_on(repo, number)),
        created_at=_iso(created),
        updated_at=_iso(updated),
        closed_at=_iso(closed) if closed else None,
        author_association=_association(fake, repo, user, user_type),
        body=body,
        performed_via_github_app=app,
    )
    obj["reactions"] = _rewritten(
        obj["reactions"],
        {"https://api.github.com/repos/Codertocat/Hello-World/issues/1": f"{api}/issues/{number}"},
    )
    if _legacy():
        obj["assignee"] = None
    else:
        obj.pop("assignee", None)
    if _rendering.get() != WEBHOOKS:
        # The REST issue: who closed it, and its timeline (webhook issues have neither).
        obj["closed_by"] = _user_json(fake, closed_by) if closed_by else None
        obj["timeline_url"] = f"{api}/issues/{number}/timeline"
    if pull is not None:
        html = f"https://github.com/{repo.full_name}/pull/{number}"
        obj["pull_request"] = {
            "url": f"{api}/pulls/{number}",
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "merged_at": _iso(pull.created_at) if pull.merged else None,
        }
        if obj["pull_request"]["merged_at"] is None and not _legacy():
            # 2026-03-10 made these fields non-null; merged_at, not required, is left out
            # for a pull request that was not merged (tests/CONFORMANCE.md).
            del obj["pull_request"]["merged_at"]
    return obj


def _association(fake: FakeGitHub, repo: Repo, login: str, user_type: str) -> str:
    if user_type == "Bot":
        return "NONE"
    if login.lower() == repo.owner.lower():
        return "OWNER"
    if login.lower() in repo.collaborators:
        return "COLLABORATOR"
    return "CONTRIBUTOR"


def _issues_event(
    fake: FakeGitHub,
    issue: Issue,
    action: str,
    sender: str,
    label: str | None,
    changes: Mapping[str, str] | None,
) -> Json:
    repo = fake.repo(issue.repo)
    payload: Json = {"action": action, "issue": _issue_json(fake, repo, issue.number)}
    if label is not None:
        payload["label"] = _label_json(fake, repo.full_name, label)
    if action == "edited":
        payload["changes"] = {key: {"from": value} for key, value in (changes or {}).items()}
    return _with_repository(fake, payload, repo, sender)


def _commit_json(fake: FakeGitHub, repo: Repo, commit: Commit) -> Json:
    """A commit as the commits and compare APIs show it."""
    api = f"{fake.api_url}/repos/{repo.full_name}"
    html = f"https://github.com/{repo.full_name}"
    person = {
        "name": commit.author,
        "email": f"{commit.author}@users.noreply.github.com",
        "date": _iso(commit.date),
    }
    return {
        "url": f"{api}/commits/{commit.sha}",
        "sha": commit.sha,
        "node_id": _node_id("C", fake.stable_id(f"commit:{commit.sha}")),
        "html_url": f"{html}/commit/{commit.sha}",
        "comments_url": f"{api}/commits/{commit.sha}/comments",
        "commit": {
            "url": f"{api}/git/commits/{commit.sha}",
            "author": person,
            "committer": person,
            "message": commit.message,
            "comment_count": 0,
            "tree": {
                "sha": _fake_sha("tree", commit.sha),
                "url": f"{api}/git/trees/{_fake_sha('tree', commit.sha)}",
            },
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
                "verified_at": None,
            },
        },
        "author": _user_json(fake, commit.author),
        "committer": _user_json(fake, commit.author),
        "parents": [
            {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{html}/commit/{p}"}
            for p in commit.parents
        ],
    }


def _issue_comment_event(fake: FakeGitHub, comment: Comment, action: str, sender: str) -> Json:
    repo = fake.repo(comment.repo)
    payload: Json = {
        "action": action,
        "issue": _issue_json(fake, repo, comment.issue_number),
        "comment": _comment_json(fake, comment),
    }
    if action == "edited":
        payload["changes"] = {"body": {"from": comment.previous_body}}
    return _with_repository(fake, payload, repo, sender)


_EMBEDDED_SUITE_KEYS: Final = tuple(_CHECK_RUN_TEMPLATE["check_suite"])


def _check_suite_json(fake: FakeGitHub, check: CheckRun, check_run: Json) -> Json:
    """The full check suite of ``check`` (``check_run_json`` is the check run's JSON)."""
    repo = fake.repo(check.repo)
    suite = copy.deepcopy(_CHECK_SUITE_TEMPLATE)
    pull = next((p for p in repo.pulls.values() if p.head_sha == check.head_sha), None)
    url = f"{fake.api_url}/repos/{repo.full_name}/check-suites/{check.check_suite_id}"
    runs = [c for c in fake.check_runs.values() if c.check_suite_id == check.check_suite_id]
    suite.update(
        id=check.check_suite_id,
        node_id=_node_id("CS", check.check_suite_id),
        head_branch=pull.head_ref if pull else repo.default_branch,
        head_sha=check.head_sha,
        status="completed",
        conclusion=check.conclusion,
        url=url,
        check_runs_url=f"{url}/check-runs",
        latest_check_runs_count=max(1, len(runs)),
        before=None,
        after=check.head_sha,
        pull_requests=check_run["pull_requests"],
        app=check_run["app"],
        created_at=check_run["started_at"] or _iso(fake.now()),
        updated_at=check_run["completed_at"] or _iso(fake.now()),
    )
    suite["head_commit"].update(
        id=check.head_sha, tree_id=_fake_sha("tree", check.head_sha), timestamp=suite["created_at"]
    )
    return suite


def _check_run_event(
    fake: FakeGitHub, check: CheckRun, action: str, sender: str, requested_action: str | None
) -> Json:
    repo = fake.repo(check.repo)
    check_run = _check_run_json(fake, check)
    suite = _check_suite_json(fake, check, check_run)
    # The check run carries the short form of its suite, as GitHub sends it.
    check_run["check_suite"] = {key: suite[key] for key in _EMBEDDED_SUITE_KEYS if key in suite}
    payload: Json = {"action": action, "check_run": check_run}
    if requested_action is not None:
        payload["requested_action"] = {"identifier": requested_action}
    return _with_repository(fake, payload, repo, sender)


def _check_suite_event(fake: FakeGitHub, check: CheckRun, action: str, sender: str) -> Json:
    repo = fake.repo(check.repo)
    suite = _check_suite_json(fake, check, _check_run_json(fake, check))
    return _with_repository(fake, {"action": action, "check_suite": suite}, repo, sender)


def _installation_json(
    fake: FakeGitHub, installation: Installation, suspended_by: str | None = None
) -> Json:
    """The full installation object of the installation events (suspended by
    ``suspended_by``, or by its account when the fake's state says it is suspended).

    GitHub's examples disagree with its webhook description here: their ``created_at`` and
    ``updated_at`` are UNIX seconds and they lack ``app_slug``, ``suspended_by`` and
    ``suspended_at``. The fake follows the description (date-time strings, every required
    field); perfbot reads both forms. See tests/CONFORMANCE.md.
    """
    if installation.suspended and suspended_by is None:
        suspended_by = installation.account_login
    obj = copy.deepcopy(_INSTALLATION_TEMPLATE)
    account_id = fake.stable_id(f"user:{installation.account_login.lower()}")
    html = "https://github.com/" + (
        f"organizations/{installation.account_login}/settings/installations/{installation.id}"
        if installation.account_type == "Organization"
        else f"settings/installations/{installation.id}"
    )
    moment = _iso(installation.created_at)
    obj.update(
        id=installation.id,
        account=_user_json(fake, installation.account_login, installation.account_type),
        repository_selection=installation.repository_selection,
        access_tokens_url=f"{fake.api_url}/app/installations/{installation.id}/access_tokens",
        repositories_url=f"{fake.api_url}/installation/repositories",
        html_url=html,
        app_id=fake.app_id,
        app_slug=fake.app_slug,
        target_id=account_id,
        target_type=installation.account_type,
        permissions=dict(installation.permissions),
        events=["check_run", "check_suite", "issue_comment", "issues", "workflow_run"],
        created_at=moment,
        updated_at=_iso(fake.now()) if suspended_by else moment,
        single_file_name=None,
        suspended_by=_user_json(fake, suspended_by) if suspended_by else None,
        suspended_at=_iso(fake.now()) if suspended_by else None,
    )
    return obj


def _repository_stubs(repositories: Sequence[tuple[str, int]]) -> list[Json]:
    return [
        {
            "id": repo_id,
            "node_id": _node_id("R", repo_id),
            "name": full_name.split("/")[-1],
            "full_name": full_name,
            "private": False,
        }
        for full_name, repo_id in repositories
    ]


def _installation_event(
    fake: FakeGitHub,
    installation_id: int,
    action: str,
    repositories: Sequence[tuple[str, int]],
    sender: str,
) -> Json:
    installation = fake.installations[installation_id]
    # The delivery tells of the change; the fake's own state is the test's to change.
    suspended_by = sender if action == "suspend" else None
    installed = _installation_json(fake, installation, suspended_by)
    if action == "unsuspend":
        installed.update(suspended_by=None, suspended_at=None, updated_at=_iso(fake.now()))
    payload: Json = {"action": action, "installation": installed}
    if action in ("created", "deleted"):
        payload["repositories"] = _repository_stubs(repositories)
        payload["requester"] = None
    payload["sender"] = _user_json(fake, sender)
    return payload


def _installation_repositories_event(
    fake: FakeGitHub,
    installation_id: int,
    action: str,
    added: Sequence[tuple[str, int]],
    removed: Sequence[tuple[str, int]],
    sender: str,
) -> Json:
    installation = fake.installations[installation_id]
    return {
        "action": action,
        "installation": _installation_json(fake, installation),
        "repository_selection": installation.repository_selection,
        "repositories_added": _repository_stubs(added),
        "repositories_removed": _repository_stubs(removed),
        "requester": None,
        "sender": _user_json(fake, sender),
    }


# ---------------------------------------------------------------------------------------------
# Route handlers. Each reads like the GitHub docs of its endpoint; errors are raised.


def _get_app(call: _Call) -> Response:
    return _json(_app_json(call.fake))


def _convert_manifest_code(call: _Call) -> Response:
    """``POST /app-manifests/{code}/conversions``: the App made from the manifest, with its
    private key and webhook secret; a code converts once (then 404, as on GitHub).

    The new App becomes the fake's App: its slug is the manifest's name, its key the fresh one
    (the id stays ``fake.app_id``), so a perfbot given these credentials can talk to the fake.
    """
    fake = call.fake
    manifest = fake.manifest_codes.pop(call.params["code"], None)
    if manifest is None:
        raise _HttpError(404, "Not Found")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    # GitHub hands out PKCS#1 keys ("BEGIN RSA PRIVATE KEY").
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.TraditionalOpenSSL, NoEncryption())
    public = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    fake.app_slug = re.sub(r"[^a-z0-9]+", "-", str(manifest["name"]).lower()).strip("-")
    fake.public_key_pem = public.decode()
    app = _app_json(fake)
    app.update(
        name=manifest["name"],
        description=manifest.get("description"),
        external_url=manifest["url"],
        permissions=dict(manifest.get("default_permissions") or {"metadata": "read"}),
        events=list(manifest.get("default_events") or []),
        installations_count=0,
        client_secret=secrets.token_hex(20),
        webhook_secret=secrets.token_hex(20),
        pem=pem.decode(),
    )
    fake.converted_apps.append(app)
    return _json(app, 201)


def _create_installation_token(call: _Call) -> Response:
    fake = call.fake
    installation = fake.installations.get(call.int_param("installation_id"))
    if installation is None:
        raise _HttpError(404, "Not Found")
    if installation.suspended:
        raise _HttpError(403, "This installation has been suspended")
    body = _body_dict(call)
    repos = _requested_repos(fake, installation, body)
    permissions = _requested_permissions(installation, body)
    ids = None if repos is None else frozenset(r.id for r in repos)
    token = fake._issue_token(installation, permissions, ids)
    content: Json = {
        "token": token.value,
        "expires_at": _iso(token.expires_at),
        "permissions": token.permissions,
        "repository_selection": "selected" if repos else installation.repository_selection,
    }
    if repos is not None:
        content["repositories"] = [_known_repo_json(fake, r) for r in repos]
    return _json(content, 201)


def _requested_repos(fake: FakeGitHub, installation: Installation, body: Json) -> list[Repo] | None:
    """The repositories a token was narrowed to, or None for all of the installation's."""
    names, ids = body.get("repositories"), body.get("repository_ids")
    if names is None and ids is None:
        return None
    own = [r for r in fake.repos.values() if r.installation_id == installation.id]
    chosen: dict[int, Repo] = {}
    wanted = [("name", str(n).lower()) for n in names or []] + [("id", i) for i in ids or []]
    for kind, value in wanted:
        found = [r for r in own if (r.name.lower() if kind == "name" else r.id) == value]
        if not found:
            raise _HttpError(
                422,
                "There is at least one repository that does not exist or is not accessible to "
                "the parent installation.",
            )
        chosen[found[0].id] = found[0]
    return list(chosen.values())


def _requested_permissions(installation: Installation, body: Json) -> dict[str, str]:
    requested = body.get("permissions")
    if requested is None:
        return dict(installation.permissions)
    for name, level in requested.items():
        granted = installation.permissions.get(name, "none")
        if _LEVELS.get(level, 99) > _LEVELS[granted]:
            raise _HttpError(422, "The permissions requested are not granted to this installation.")
    # Metadata read comes with every installation token.
    return {"metadata": "read", **requested}


def _list_deliveries(call: _Call) -> Response:
    per_page = _int_query(call, "per_page", 30, 1, 100)
    items = sorted(call.fake.deliveries, key=lambda d: d.id, reverse=True)
    status = call.query.get("status")
    if status == "success":
        items = [d for d in items if d.status == "OK"]
    elif status == "failure":
        items = [d for d in items if d.status != "OK"]
    cursor = call.query.get("cursor")
    if cursor:
        # The fake's cursors are "v1_<id of the last item seen>", opaque to clients.
        below = cursor.removeprefix("v1_")
        if not below.isdigit():
            raise _HttpError(422, f"Invalid cursor {cursor!r}")
        items = [d for d in items if d.id < int(below)]
    page, rest = items[:per_page], items[per_page:]
    headers = {}
    if rest:
        next_url = call.request.url.include_query_params(cursor=f"v1_{page[-1].id}")
        headers["link"] = f'<{next_url}>; rel="next"'
    return _json([_delivery_json(d) for d in page], headers=headers)


def _redeliver(call: _Call) -> Response:
    delivery_id = call.int_param("delivery_id")
    if not any(d.id == delivery_id for d in call.fake.deliveries):
        raise _HttpError(404, "Not Found")
    call.fake.redeliveries.append(delivery_id)
    return _json({}, 202)


def _run_of(call: _Call) -> Run:
    run = call.fake.runs.get(call.int_param("run_id"))
    if run is None or run.repo != call.repo.full_name:
        raise _HttpError(404, "Not Found")
    return run


def _list_runs(call: _Call) -> Response:
    fake, query = call.fake, call.query
    runs = [r for r in fake.runs.values() if r.repo == call.repo.full_name]
    if "head_sha" in query:
        runs = [r for r in runs if r.head_sha == query["head_sha"]]
    if "event" in query:
        runs = [r for r in runs if r.event == query["event"]]
    if "branch" in query:
        runs = [r for r in runs if r.head_branch == query["branch"]]
    if "actor" in query:
        runs = [r for r in runs if r.actor == query["actor"]]
    if "status" in query:
        # One parameter for both: a status ("completed") or a conclusion ("success").
        wanted = query["status"]
        by_status = wanted in _RUN_STATUSES
        runs = [r for r in runs if (r.status if by_status else r.conclusion) == wanted]
    runs.sort(key=lambda r: r.id, reverse=True)
    page, headers = _paginate(call, runs)
    content = {"total_count": len(runs), "workflow_runs": [_run_json(fake, r) for r in page]}
    return _json(content, headers=headers)


def _get_run(call: _Call) -> Response:
    return _json(_run_json(call.fake, _run_of(call)))


def _artifact_listing(call: _Call, artifacts: list[Artifact]) -> Response:
    if "name" in call.query:
        artifacts = [a for a in artifacts if a.name == call.query["name"]]
    newest_first = call.query.get("direction", "desc") == "desc"
    artifacts.sort(key=lambda a: (a.created_at, a.id), reverse=newest_first)
    page, headers = _paginate(call, artifacts)
    content = {
        "total_count": len(artifacts),
        "artifacts": [_artifact_json(call.fake, a) for a in page],
    }
    return _json(content, headers=headers)


def _list_run_artifacts(call: _Call) -> Response:
    run = _run_of(call)
    return _artifact_listing(call, [a for a in call.fake.artifacts.values() if a.run_id == run.id])


def _list_repo_artifacts(call: _Call) -> Response:
    repo = call.repo.full_name
    return _artifact_listing(call, [a for a in call.fake.artifacts.values() if a.repo == repo])


def _artifact_of(call: _Call) -> Artifact:
    artifact = call.fake.artifacts.get(call.int_param("artifact_id"))
    if artifact is None or artifact.repo != call.repo.full_name:
        raise _HttpError(404, "Not Found")
    return artifact


def _get_artifact(call: _Call) -> Response:
    return _json(_artifact_json(call.fake, _artifact_of(call)))


def _download_artifact(call: _Call) -> Response:
    artifact = _artifact_of(call)
    if call.params["archive_format"] != "zip":
        raise _HttpError(404, "Not Found")
    if artifact.expired:
        raise _HttpError(410, "Artifact has expired")
    fake = call.fake
    blob = Blob(
        token=secrets.token_urlsafe(24),
        artifact_id=artifact.id,
        data=artifact.data,
        expires_at=fake.now() + BLOB_URL_LIFETIME,
    )
    fake.blobs[blob.token] = blob
    return Response(status_code=302, headers={"location": f"{fake.storage_url}/blobs/{blob.token}"})


def _rerun(call: _Call) -> Response:
    run = _run_of(call)
    if run.status != "completed":
        raise _HttpError(403, "This workflow run is not completed and cannot be re-run")
    run.run_attempt += 1
    run.status = "queued"
    run.conclusion = None
    run.updated_at = call.fake.now()
    call.fake.reruns.append(run.id)
    return _json({}, 201)


def _list_pulls(call: _Call) -> Response:
    query = call.query
    pulls = list(call.repo.pulls.values())
    state = query.get("state", "open")
    if state != "all":
        pulls = [p for p in pulls if p.state == state]
    if "head" in query:
        # "owner:branch" (GitHub also takes a bare branch for the repository itself).
        owner, _, branch = query["head"].rpartition(":")
        owner = owner or call.repo.owner
        pulls = [
            p
            for p in pulls
            if p.head_ref == branch and p.head_repo_full_name.split("/")[0].lower() == owner.lower()
        ]
    if "base" in query:
        pulls = [p for p in pulls if p.base_ref == query["base"]]
    pulls.sort(key=lambda p: p.number, reverse=query.get("direction", "desc") == "desc")
    page, headers = _paginate(call, pulls)
    return _json([_pull_json(call.fake, p, simple=True) for p in page], headers=headers)


def _pull_of(call: _Call) -> Pull:
    pull = call.repo.pulls.get(call.int_param("number"))
    if pull is None:
        raise _HttpError(404, "Not Found")
    return pull


def _get_pull(call: _Call) -> Response:
    return _json(_pull_json(call.fake, _pull_of(call)))


def _commit_pulls(call: _Call) -> Response:
    """The pull requests of a commit: those whose head it is, and the one whose merge
    brought it to its branch."""
    repo, sha = call.repo, call.params["sha"]
    found = {p.number: p for p in repo.pulls.values() if sha in (p.head_sha, p.merge_commit_sha)}
    commit = repo.commits.get(sha)
    if commit is not None and commit.pull in repo.pulls:
        found[commit.pull] = repo.pulls[commit.pull]
    pulls = [found[number] for number in sorted(found)]
    page, headers = _paginate(call, pulls)
    return _json([_pull_json(call.fake, p, simple=True) for p in page], headers=headers)


def _resolved_ref(repo: Repo, ref: str) -> str:
    """The sha a branch name, a sha or an unambiguous sha prefix (7+) names; else 404."""
    if ref in repo.branches:
        return repo.branches[ref]
    if ref in repo.commits:
        return ref
    if len(ref) >= 7:
        matches = [sha for sha in repo.commits if sha.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
    raise _HttpError(404, "Not Found")


def _ancestry(repo: Repo, sha: str) -> set[str]:
    """``sha`` and every commit it descends from (among the fake's known commits)."""
    seen: set[str] = set()
    waiting = [sha]
    while waiting:
        current = waiting.pop()
        if current in seen or current not in repo.commits:
            continue
        seen.add(current)
        waiting.extend(repo.commits[current].parents)
    return seen


def _list_commits(call: _Call) -> Response:
    """``GET …/commits``: the commits reachable from ``sha`` (a branch, a sha; the default
    branch without it), newest first: by committer date, then the later made first."""
    fake, repo = call.fake, call.repo
    if not repo.commits:
        raise _HttpError(409, "Git Repository is empty.")
    head = _resolved_ref(repo, call.query.get("sha", repo.default_branch))
    reachable = _ancestry(repo, head)
    made = {sha: index for index, sha in enumerate(repo.commits)}
    listed = sorted(reachable, key=lambda sha: (repo.commits[sha].date, made[sha]), reverse=True)
    page, headers = _paginate(call, listed)
    return _json([_commit_json(fake, repo, repo.commits[sha]) for sha in page], headers=headers)


# Without page or per_page, GitHub's comparison lists at most this many commits.
COMPARE_COMMITS_LIMIT: Final = 250


def _compare(call: _Call) -> Response:
    """``GET …/compare/{base}...{head}``: ``git log base..head`` oldest first, and how the
    two stand (``ahead``, ``behind``, ``diverged``, ``identical``)."""
    fake, repo = call.fake, call.repo
    base_ref, dots, head_ref = call.params["basehead"].partition("...")
    if not dots or not base_ref or not head_ref:
        raise _HttpError(404, "Not Found")
    base, head = _resolved_ref(repo, base_ref), _resolved_ref(repo, head_ref)
    below_base, below_head = _ancestry(repo, base), _ancestry(repo, head)
    order = list(repo.commits)  # creation order: parents before children
    ahead = [repo.commits[c] for c in order if c in below_head and c not in below_base]
    behind = [c for c in order if c in below_base and c not in below_head]
    common = [c for c in order if c in below_base and c in below_head]
    if not common:
        raise _HttpError(404, f"No common ancestor between {base_ref} and {head_ref}.")
    if not ahead and not behind:
        status = "identical"
    elif not behind:
        status = "ahead"
    elif not ahead:
        status = "behind"
    else:
        status = "diverged"
    headers: dict[str, str] = {}
    if "page" in call.query or "per_page" in call.query:
        listed, headers = _paginate(call, ahead)
    else:
        listed = ahead[:COMPARE_COMMITS_LIMIT]
    api = f"{fake.api_url}/repos/{repo.full_name}"
    html = f"https://github.com/{repo.full_name}"
    basehead = call.params["basehead"]
    content = {
        "url": f"{api}/compare/{basehead}",
        "html_url": f"{html}/compare/{basehead}",
        "permalink_url": f"{html}/compare/{repo.owner}:{base[:7]}...{repo.owner}:{head[:7]}",
        "diff_url": f"{html}/compare/{basehead}.diff",
        "patch_url": f"{html}/compare/{basehead}.patch",
        "base_commit": _commit_json(fake, repo, repo.commits[base]),
        "merge_base_commit": _commit_json(fake, repo, repo.commits[common[-1]]),
        "status": status,
        "ahead_by": len(ahead),
        "behind_by": len(behind),
        "total_commits": len(ahead),
        "commits": [_commit_json(fake, repo, c) for c in listed],
        "files": [],
    }
    return _json(content, headers=headers)


_STATE_REASONS: Final = ("completed", "not_planned", "duplicate", "reopened")


def _writer(call: _Call) -> tuple[str, int | None]:
    """Who writes with the request's token: the App's bot, or github-actions[bot]."""
    author = call.token.author if call.token else None
    return author or (call.fake.bot_login, call.fake.app_id)


def _issue_title(body: Json) -> str:
    title = body.get("title")
    if isinstance(title, bool) or not isinstance(title, str | int) or not str(title).strip():
        raise _invalid("Issue", "title", "title wasn't supplied")
    return str(title)


def _issue_text(body: Json) -> str | None:
    text = body.get("body")
    if text is not None and not isinstance(text, str):
        raise _invalid("Issue", "body", "body is not a string")
    if text is not None and len(text) > COMMENT_BODY_LIMIT:
        raise _invalid(
            "Issue", "body", f"body is too long (maximum is {COMMENT_BODY_LIMIT} characters)"
        )
    return text


def _issue_labels(value: Any) -> list[str]:
    """Label names from strings or label objects, as GitHub takes them."""
    if not isinstance(value, list):
        raise _invalid("Issue", "labels", "labels must be an array")
    names: list[str] = []
    for item in value:
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or not name:
            raise _invalid("Label", "name", f"{item!r} is not a label")
        if name not in names:
            names.append(name)
    return names


def _create_issue(call: _Call) -> Response:
    fake, repo, body = call.fake, call.repo, _body_dict(call)
    if not repo.has_issues:
        raise _HttpError(410, "Issues are disabled for this repo")
    title, text = _issue_title(body), _issue_text(body)
    labels = _issue_labels(body.get("labels", []))
    login, app_id = _writer(call)
    issue = fake.add_issue(repo, None, title, text, labels=labels, login=login, app_id=app_id)
    content = _issue_json(fake, repo, issue.number)
    return _json(content, 201, headers={"location": content["url"]})


def _get_issue(call: _Call) -> Response:
    return _json(_issue_json(call.fake, call.repo, _issue_number(call)))


def _update_issue(call: _Call) -> Response:
    """``PATCH …/issues/{number}``: title, body, labels, and state with its reason (closing
    says ``completed`` unless told otherwise, reopening says ``reopened``)."""
    fake, repo, body = call.fake, call.repo, _body_dict(call)
    number = _issue_number(call)
    state = body.get("state")
    if state is not None and state not in ("open", "closed"):
        raise _invalid("Issue", "state", f"state {state!r} is not open or closed")
    reason = body.get("state_reason")
    if reason is not None and reason not in _STATE_REASONS:
        raise _invalid("Issue", "state_reason", f"state_reason {reason!r} is not valid")
    pull = repo.pulls.get(number)
    if pull is not None:
        if "title" in body:
            pull.title = _issue_title(body)
        if "labels" in body:
            pull.labels = _issue_labels(body["labels"])
        if state is not None:
            pull.state = state
        return _json(_issue_json(fake, repo, number))
    issue = repo.issues[number]
    if "title" in body:
        issue.title = _issue_title(body)
    if "body" in body:
        issue.body = _issue_text(body)
    if "labels" in body:
        issue.labels = _issue_labels(body["labels"])
    now = fake.now()
    if state == "closed" and issue.state == "open":
        issue.state, issue.closed_at, issue.closed_by = "closed", now, _writer(call)[0]
        issue.state_reason = reason or "completed"
    elif state == "open" and issue.state == "closed":
        issue.state, issue.closed_at, issue.closed_by = "open", None, None
        issue.state_reason = "reopened"
    issue.updated_at = now
    return _json(_issue_json(fake, repo, number))


def _list_issues(call: _Call) -> Response:
    """``GET …/issues``: issues and pull requests (as GitHub lists them), by state,
    labels (all of them), creator, assignee and milestone (the fake has neither), since."""
    fake, repo, query = call.fake, call.repo, call.query
    state = query.get("state", "open")
    if state not in ("open", "closed", "all"):
        raise _HttpError(422, f"Invalid value for 'state': {state!r}")
    numbers = sorted({*repo.pulls, *repo.issues})
    items = [_issue_json(fake, repo, n) for n in numbers]
    if state != "all":
        items = [i for i in items if i["state"] == state]
    wanted = [name.strip() for name in query.get("labels", "").split(",") if name.strip()]
    items = [i for i in items if set(wanted) <= {label["name"] for label in i["labels"]}]
    if "creator" in query:
        items = [i for i in items if i["user"]["login"].lower() == query["creator"].lower()]
    if query.get("assignee", "none") != "none" or query.get("milestone", "none") not in (
        "none",
        "*",
    ):
        items = []  # nothing in the fake has an assignee or a milestone
    if "since" in query:
        since = query["since"]
        items = [i for i in items if i["updated_at"] >= since]
    key = {"created": "created_at", "updated": "updated_at", "comments": "comments"}.get(
        query.get("sort", "created")
    )
    if key is None:
        raise _HttpError(422, f"Invalid value for 'sort': {query['sort']!r}")
    items.sort(key=lambda i: (i[key], i["number"]), reverse=query.get("direction") != "asc")
    page, headers = _paginate(call, items)
    return _json(page, headers=headers)


def _issue_number(call: _Call) -> int:
    number = call.int_param("number")
    if number not in call.repo.pulls and number not in call.repo.issues:
        raise _HttpError(404, "Not Found")
    return number


def _comment_of(call: _Call) -> Comment:
    comment = call.fake.comments.get(call.int_param("comment_id"))
    if comment is None or comment.deleted or comment.repo != call.repo.full_name:
        raise _HttpError(404, "Not Found")
    return comment


def _comment_body(call: _Call) -> str:
    body = _body_dict(call).get("body")
    if not isinstance(body, str):
        raise _HttpError(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
    if len(body) > COMMENT_BODY_LIMIT:
        raise _invalid(
            "IssueComment", "data", f"Body is too long (maximum is {COMMENT_BODY_LIMIT} characters)"
        )
    return body


def _list_comments(call: _Call) -> Response:
    comments = call.fake.comments_on(call.repo, _issue_number(call))
    page, headers = _paginate(call, comments)
    return _json([_comment_json(call.fake, c) for c in page], headers=headers)


def _create_comment(call: _Call) -> Response:
    fake = call.fake
    number = _issue_number(call)
    login, app_id = (call.token.author if call.token else None) or (fake.bot_login, fake.app_id)
    comment = fake.add_comment(call.repo, number, _comment_body(call), login, "Bot", app_id)
    content = _comment_json(fake, comment)
    return _json(content, 201, headers={"location": content["url"]})


def _get_comment(call: _Call) -> Response:
    return _json(_comment_json(call.fake, _comment_of(call)))


def _update_comment(call: _Call) -> Response:
    comment = _comment_of(call)
    body = _comment_body(call)
    writer = (call.token.author if call.token else None) or (None, call.fake.app_id)
    if comment.app_id != writer[1]:
        # GitHub allows it with write access; perfbot must never do it, so tests check this list.
        call.fake.foreign_comment_edits.append(comment.id)
    comment.previous_body, comment.body = comment.body, body
    comment.edits += 1
    comment.updated_at = call.fake.now()
    return _json(_comment_json(call.fake, comment))


def _create_reaction(call: _Call) -> Response:
    fake = call.fake
    comment = _comment_of(call)
    content = _body_dict(call).get("content")
    if content not in _REACTIONS:
        raise _invalid("Reaction", "content", f"content {content!r} is not a valid reaction")
    for existing in comment.reactions:
        if existing.content == content and existing.user == fake.bot_login:
            return _json(_reaction_json(fake, existing), 200)
    reaction = Reaction(
        id=fake.next_id(), content=str(content), user=fake.bot_login, created_at=fake.now()
    )
    comment.reactions.append(reaction)
    return _json(_reaction_json(fake, reaction), 201)


def _list_reactions(call: _Call) -> Response:
    comment = _comment_of(call)
    reactions = comment.reactions
    if "content" in call.query:
        if call.query["content"] not in _REACTIONS:
            raise _HttpError(422, f"Invalid value for 'content': {call.query['content']!r}")
        reactions = [r for r in reactions if r.content == call.query["content"]]
    page, headers = _paginate(call, reactions)
    return _json([_reaction_json(call.fake, r) for r in page], headers=headers)


def _files_at(repo: Repo, ref: str | None) -> dict[str, bytes]:
    if ref is None or ref in (repo.default_branch, f"refs/heads/{repo.default_branch}"):
        files = repo.files
    elif ref in repo.refs:
        files = repo.refs[ref]
    else:
        raise _HttpError(404, f"No commit found for the ref {ref}")
    return {p: v.encode() if isinstance(v, str) else v for p, v in files.items()}


def _get_contents(call: _Call) -> Response:
    repo = call.repo
    path = call.params["path"].strip("/")
    ref = call.query.get("ref")
    files = _files_at(repo, ref)
    shown_ref = ref or repo.default_branch
    raw = "application/vnd.github.raw" in call.request.headers.get("accept", "")
    if path in files:
        if raw:
            return Response(files[path], media_type="text/plain; charset=utf-8")
        return _json(_content_file_json(call.fake, repo, path, shown_ref, files[path]))
    if any(name.startswith(path + "/") for name in files):
        return _json(_content_dir_json(call.fake, repo, path, shown_ref, files))
    raise _HttpError(404, "Not Found")


def _collaborator_permission(call: _Call) -> Response:
    login = call.params["username"]
    repo = call.repo
    # Anyone can read a public repository; GitHub reports that as "read".
    role = repo.collaborators.get(login.lower(), "none" if repo.private else "read")
    content = {
        "permission": _ROLE_TO_PERMISSION[role],
        "role_name": role,
        "user": _collaborator_json(call.fake, login, role),
    }
    return _json(content)


def _check_output(body: Json) -> dict[str, str | None] | None:
    output = body.get("output")
    if output is None:
        return None
    if not isinstance(output, dict) or not output.get("title") or "summary" not in output:
        raise _invalid("CheckRun", "output", "output needs a title and a summary")
    for key in ("summary", "text"):
        value = output.get(key)
        if value is not None and len(str(value)) > CHECK_RUN_TEXT_LIMIT:
            raise _invalid(
                "CheckRun",
                f"output.{key}",
                f"Output {key} is too long (maximum is {CHECK_RUN_TEXT_LIMIT} characters)",
            )
    return {key: output.get(key) for key in ("title", "summary", "text")}


def _apply_check_fields(fake: FakeGitHub, check: CheckRun, body: Json) -> None:
    """Status, conclusion and output as GitHub combines them: a conclusion completes the run."""
    status = body.get("status", check.status)
    conclusion = body.get("conclusion", check.conclusion if "status" not in body else None)
    if status not in _CHECK_STATUSES:
        raise _invalid("CheckRun", "status", f"status {status!r} is not valid")
    if conclusion is not None and conclusion not in _CHECK_CONCLUSIONS:
        raise _invalid("CheckRun", "conclusion", f"conclusion {conclusion!r} is not valid")
    if conclusion is not None:
        status = "completed"
    if status == "completed" and conclusion is None:
        raise _invalid("CheckRun", "conclusion", "conclusion is required when status is completed")
    if (output := _check_output(body)) is not None:
        check.output = output
    for key in ("name", "details_url", "external_id"):
        if key in body:
            setattr(check, key, body[key])
    check.status, check.conclusion = status, conclusion
    if status == "in_progress" and check.started_at is None:
        check.started_at = fake.now()
    if status == "completed":
        check.completed_at = fake.now()


def _create_check_run(call: _Call) -> Response:
    fake, body = call.fake, _body_dict(call)
    for key in ("name", "head_sha"):
        if not isinstance(body.get(key), str) or not body[key]:
            raise _invalid("CheckRun", key, f"{key} wasn't supplied")
    check = CheckRun(
        id=fake.next_id(),
        repo=call.repo.full_name,
        name=body["name"],
        head_sha=body["head_sha"],
        app_id=fake.app_id,
        check_suite_id=fake.stable_id(f"suite:{call.repo.full_name}:{body['head_sha']}"),
        started_at=fake.now(),
    )
    _apply_check_fields(fake, check, body)
    fake.check_runs[check.id] = check
    return _json(_check_run_json(fake, check), 201)


def _check_run_of(call: _Call) -> CheckRun:
    check = call.fake.check_runs.get(call.int_param("check_run_id"))
    if check is None or check.repo != call.repo.full_name:
        raise _HttpError(404, "Not Found")
    return check


def _update_check_run(call: _Call) -> Response:
    check = _check_run_of(call)
    if check.app_id != call.fake.app_id:
        raise _HttpError(
            403,
            f"Invalid app_id `{call.fake.app_id}` - check run can only be modified by the "
            "GitHub App that created it.",
        )
    _apply_check_fields(call.fake, check, _body_dict(call))
    return _json(_check_run_json(call.fake, check))


def _get_check_run(call: _Call) -> Response:
    return _json(_check_run_json(call.fake, _check_run_of(call)))


_REPO: Final = "/repos/{owner}/{repo}"
_ISSUES_WRITE: Final = ("issues", "pull_requests")

# fmt: off
_ROUTES: Final = (
    _route("GET", "/app", _get_app),
    _route("POST", "/app/installations/{installation_id:int}/access_tokens",
           _create_installation_token),
    _route("GET", "/app/hook/deliveries", _list_deliveries),
    _route("POST", "/app/hook/deliveries/{delivery_id:int}/attempts", _redeliver),
    _Route("POST", _compile("/app-manifests/{code}/conversions"), _convert_manifest_code,
           "jwt", (), "read", public=True),
    _route("GET", f"{_REPO}/actions/runs", _list_runs, "actions"),
    _route("GET", f"{_REPO}/actions/runs/{{run_id:int}}", _get_run, "actions"),
    _route("GET", f"{_REPO}/actions/runs/{{run_id:int}}/artifacts", _list_run_artifacts,
           "actions"),
    _route("POST", f"{_REPO}/actions/runs/{{run_id:int}}/rerun", _rerun, "actions",
           level="write"),
    _route("GET", f"{_REPO}/actions/artifacts", _list_repo_artifacts, "actions"),
    _route("GET", f"{_REPO}/actions/artifacts/{{artifact_id:int}}", _get_artifact, "actions"),
    _route("GET", f"{_REPO}/actions/artifacts/{{artifact_id:int}}/{{archive_format}}",
           _download_artifact, "actions"),
    _route("GET", f"{_REPO}/pulls", _list_pulls, "pull_requests"),
    _route("GET", f"{_REPO}/pulls/{{number:int}}", _get_pull, "pull_requests"),
    _route("GET", f"{_REPO}/commits/{{sha}}/pulls", _commit_pulls, "pull_requests"),
    _route("GET", f"{_REPO}/commits", _list_commits, "contents"),
    _route("GET", f"{_REPO}/compare/{{basehead:path}}", _compare, "contents"),
    _route("GET", f"{_REPO}/issues", _list_issues, *_ISSUES_WRITE),
    _route("POST", f"{_REPO}/issues", _create_issue, "issues", level="write"),
    _route("GET", f"{_REPO}/issues/{{number:int}}", _get_issue, *_ISSUES_WRITE),
    _route("PATCH", f"{_REPO}/issues/{{number:int}}", _update_issue, *_ISSUES_WRITE,
           level="write"),
    _route("GET", f"{_REPO}/issues/{{number:int}}/comments", _list_comments, *_ISSUES_WRITE),
    _route("POST", f"{_REPO}/issues/{{number:int}}/comments", _create_comment, *_ISSUES_WRITE,
           level="write"),
    _route("GET", f"{_REPO}/issues/comments/{{comment_id:int}}", _get_comment, *_ISSUES_WRITE),
    _route("PATCH", f"{_REPO}/issues/comments/{{comment_id:int}}", _update_comment,
           *_ISSUES_WRITE, level="write"),
    _route("POST", f"{_REPO}/issues/comments/{{comment_id:int}}/reactions", _create_reaction,
           *_ISSUES_WRITE, level="write"),
    _route("GET", f"{_REPO}/issues/comments/{{comment_id:int}}/reactions", _list_reactions,
           *_ISSUES_WRITE),
    _route("GET", f"{_REPO}/contents/{{path:path}}", _get_contents, "contents"),
    _route("GET", f"{_REPO}/collaborators/{{username}}/permission", _collaborator_permission,
           "metadata"),
    _route("POST", f"{_REPO}/check-runs", _create_check_run, "checks", level="write"),
    _route("GET", f"{_REPO}/check-runs/{{check_run_id:int}}", _get_check_run, "checks"),
    _route("PATCH", f"{_REPO}/check-runs/{{check_run_id:int}}", _update_check_run, "checks",
           level="write"),
)
# fmt: on
# The reads whose description documents a 304: answered so to a matching If-None-Match.
_CONDITIONAL: Final = frozenset({_get_pull, _get_contents, _get_issue})


# ---------------------------------------------------------------------------------------------
# In-process transport and real sockets


class FakeTransport(httpx.AsyncBaseTransport):
    """Routes requests for ``api_url``/``storage_url`` to the fake's ASGI apps, in-process.

    httpx enforces timeouts in its network layer, which ASGITransport bypasses; the read
    timeout is applied here so a ``hang_next`` looks to the client as it would on a socket.
    """

    def __init__(self, fake: FakeGitHub) -> None:
        self._fake = fake
        self._api = httpx.ASGITransport(app=fake.api_app, client=("127.0.0.1", 50001))
        self._storage = httpx.ASGITransport(app=fake.storage_app, client=("127.0.0.1", 50002))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        target = self._target(request.url)
        if target is None:
            raise httpx.ConnectError(
                f"fake GitHub: nothing listens at {request.url}", request=request
            )
        timeout = cast(dict[str, float | None], request.extensions.get("timeout", {})).get("read")
        try:
            # Not asyncio.wait_for: on Python 3.11 it loses the caller's cancellation when
            # the answer comes at the same moment, and the code under test runs on.
            async with asyncio.timeout(timeout):
                return await target.handle_async_request(request)
        except TimeoutError as error:
            raise httpx.ReadTimeout(
                "fake GitHub did not answer in time", request=request
            ) from error

    def _target(self, url: httpx.URL) -> httpx.ASGITransport | None:
        origin = _origin(url)
        if origin == _origin(httpx.URL(self._fake.api_url)):
            return self._api
        if origin == _origin(httpx.URL(self._fake.storage_url)):
            return self._storage
        return None


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    default_port = 443 if url.scheme == "https" else 80
    return url.scheme, url.host, url.port or default_port


def app_client(
    fake: FakeGitHub,
    private_key_pem: str | None = None,
    *,
    in_process: bool = True,
    timeout: float = 10.0,
) -> GitHub[AppAuthStrategy]:
    """githubkit authenticated as the App, pointed at ``fake``.

    Its own token cache: githubkit's default cache is process-wide and keyed by app and
    installation id only, so a token issued by one test's fake would be replayed to the next.
    """
    return GitHub(
        AppAuthStrategy(str(fake.app_id), private_key_pem or rsa_keypair().private_pem),
        base_url=fake.api_url + "/",
        async_transport=fake.transport() if in_process else None,
        http_cache=False,
        auto_retry=False,
        cache_strategy=MemCacheStrategy(),
        timeout=timeout,
    )


def _listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it. asyncio only sets it itself on sockets created
    # with proto=IPPROTO_TCP; without it every response waits 40 ms for a delayed ACK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


def _uvicorn_server(app: Starlette) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",
        http="h11",
        timeout_graceful_shutdown=1,
    )
    return uvicorn.Server(config)


async def _serve_all(servers: Sequence[uvicorn.Server], sockets: Sequence[socket.socket]) -> None:
    await asyncio.gather(
        *(s.serve(sockets=[sock]) for s, sock in zip(servers, sockets, strict=True))
    )


@contextmanager
def serve(fake: FakeGitHub, *, timeout: float = 10.0) -> Iterator[FakeGitHub]:
    """Serve the API and the storage on 127.0.0.1 (ephemeral ports) from a background thread.

    Sets ``fake.api_url``/``fake.storage_url`` to the real addresses while inside, restores them
    after. The sockets are bound before the thread starts, so the ports are known at once.
    """
    sockets = [_listening_socket(), _listening_socket()]
    servers = [_uvicorn_server(fake.api_app), _uvicorn_server(fake.storage_app)]
    saved = fake.api_url, fake.storage_url
    fake.api_url, fake.storage_url = (f"http://127.0.0.1:{s.getsockname()[1]}" for s in sockets)
    thread = threading.Thread(
        target=lambda: asyncio.run(_serve_all(servers, sockets)), name="fake-github", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not all(s.started for s in servers):
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("fake GitHub servers did not start")
            time.sleep(0.01)
        yield fake
    finally:
        for server in servers:
            server.should_exit = True
        thread.join(timeout)
        for sock in sockets:
            sock.close()
        fake.api_url, fake.storage_url = saved
