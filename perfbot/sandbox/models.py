"""The fake's state: plain mutable dataclasses that tests may read and change directly, the
request log, and the knobs that make requests fail, hang or wait."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from perfbot.sandbox.common import (
    DEFAULT_API_VERSION,
    DEFAULT_PERMISSIONS,
    LEVELS,
    AuthKind,
    ChaosKind,
    Json,
    is_token_path,
)

if TYPE_CHECKING:
    from perfbot.sandbox.fakegithub import FakeGitHub


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
    # What was sent (GET /app/hook/deliveries/{id} shows it): the payload, as JSON.
    payload: Json | None = None

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
        needed = LEVELS[level]
        return any(LEVELS[self.permissions.get(name, "none")] >= needed for name in alternatives)


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
OBSERVERS: list[ExchangeObserver] = []


@contextmanager
def observing(observer: ExchangeObserver) -> Iterator[None]:
    """While inside, ``observer`` sees every API exchange of every FakeGitHub, answered.

    The conformance check (``tests/conformance.py``) watches each test this way.
    """
    OBSERVERS.append(observer)
    try:
        yield
    finally:
        OBSERVERS.remove(observer)


@dataclass(kw_only=True)
class StorageRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    status: int


@dataclass(kw_only=True)
class Knob:
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
        return not is_token_path(path) and not path.startswith("/blobs/")


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
class Chaos:
    rate: float
    kinds: tuple[ChaosKind, ...]
    rng: random.Random
    slow_seconds: float
    hang_seconds: float
