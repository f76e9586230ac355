"""The fake's state and clock: what ``FakeGitHub`` holds, and the reads tests assert on."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from perfbot.sandbox.common import DEFAULT_API_URL, DEFAULT_STORAGE_URL, Json, is_token_path
from perfbot.sandbox.models import (
    Artifact,
    Blob,
    Chaos,
    CheckRun,
    Comment,
    Delivery,
    Hold,
    Installation,
    Knob,
    RecordedRequest,
    Repo,
    Run,
    StorageRequest,
    Token,
    rsa_keypair,
)


class FakeCore:
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
        self._knobs: list[Knob] = []
        self._holds: list[Hold] = []
        self._chaos: Chaos | None = None
        self.chaos_injected: Counter[str] = Counter()  # kind → requests it hit, since chaos()
        self._ids = itertools.count(10_001)
        self._stable_ids: dict[str, int] = {}
        # Lookups by issue and by run, so that a request costs the same with 10 or 10,000
        # comments and artifacts in the fake (bench/service.py). Rebuilt whenever the dict
        # they index changed size: a test may add to ``comments`` or ``artifacts`` directly.
        self._comments_by_issue: dict[tuple[str, int], list[Comment]] = {}
        self._comments_indexed = 0
        self._artifacts_by_run: dict[int, list[Artifact]] = {}
        self._artifacts_indexed = 0
        # Lower-case login → its installation, the first found (its type read at each look).
        self._accounts: dict[str, Installation] = {}
        self._accounts_indexed = 0

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

    def repo(self, ref: Repo | str) -> Repo:
        return ref if isinstance(ref, Repo) else self.repos[ref.lower()]

    @property
    def bot_login(self) -> str:
        return f"{self.app_slug}[bot]"

    def comments_on(self, repo: Repo | str, number: int) -> list[Comment]:
        """The live comments of an issue or PR, oldest first."""
        if self._comments_indexed != len(self.comments):
            self._comments_by_issue = {}
            for comment in self.comments.values():
                key = comment.repo, comment.issue_number
                self._comments_by_issue.setdefault(key, []).append(comment)
            self._comments_indexed = len(self.comments)
        found = self._comments_by_issue.get((self.repo(repo).full_name, number), [])
        return sorted((c for c in found if not c.deleted), key=lambda c: c.id)

    def account_type(self, login: str) -> str | None:
        """The type of the account an installation of this App is on, if any is."""
        key = login.lower()
        found = self._accounts.get(key)
        # Installed again under its id, or renamed, in the state directly: looked up anew.
        moved = found is not None and (
            self.installations.get(found.id) is not found or found.account_login.lower() != key
        )
        if moved or self._accounts_indexed != len(self.installations):
            self._accounts = {}
            for installation in self.installations.values():
                self._accounts.setdefault(installation.account_login.lower(), installation)
            self._accounts_indexed = len(self.installations)
            found = self._accounts.get(key)
        return None if found is None else found.account_type

    def artifacts_of_run(self, run_id: int) -> list[Artifact]:
        """The artifacts a workflow run uploaded, in the order they were added."""
        if self._artifacts_indexed != len(self.artifacts):
            self._artifacts_by_run = {}
            for artifact in self.artifacts.values():
                self._artifacts_by_run.setdefault(artifact.run_id, []).append(artifact)
            self._artifacts_indexed = len(self.artifacts)
        return list(self._artifacts_by_run.get(run_id, []))

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
            if r.method not in ("GET", "HEAD") and not is_token_path(r.path)
        ]

    def rate_limited_calls(self) -> list[RecordedRequest]:
        """API requests that count against the installation's limit (not token creation,
        not a conditional request answered 304)."""
        return [r for r in self.requests if not is_token_path(r.path) and r.status != 304]
