"""What every part of the fake shares: limits, permission levels, the API version being
rendered, and how ids, shas and timestamps are written."""

from __future__ import annotations

import base64
import copy
import hashlib
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal, TypeVar, cast

import orjson

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


LEVELS: Final = {"none": 0, "read": 1, "write": 2, "admin": 3}


# GitHub reports the repository *role* and a coarser *permission*; maintain and triage fold.
ROLE_TO_PERMISSION: Final = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}


REACTIONS: Final = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


CHECK_STATUSES: Final = ("queued", "in_progress", "completed", "waiting", "requested", "pending")


CHECK_CONCLUSIONS: Final = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
)


RUN_STATUSES: Final = ("queued", "in_progress", "completed", "waiting", "requested", "pending")


# What ``fake.chaos()`` may do to an API request (see there).
ChaosKind = Literal["5xx", "secondary_rate_limit", "slow", "timeout"]


CHAOS_KINDS: Final[tuple[ChaosKind, ...]] = ("5xx", "secondary_rate_limit", "slow", "timeout")


SECONDARY_LIMIT_MESSAGE: Final = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID FAKE:0000."
)


def is_token_path(path: str) -> bool:
    return path.startswith("/app/installations/") and path.endswith("/access_tokens")


# What is being rendered: an answer in one REST API version (set around each route
# handler), or else a webhook payload. Deliveries carry no API version: GitHub's webhook
# description (@octokit/openapi-webhooks) still has every field 2026-03-10 removed.
WEBHOOKS: Final = "webhooks"


RENDERING: ContextVar[str] = ContextVar("rendering", default=WEBHOOKS)


def legacy() -> bool:
    """Whether what is being rendered still has the fields that REST API version
    2026-03-10 removed (``merge_commit_sha`` and ``assignee`` of pulls and issues, a
    repository's ``has_downloads``, ``master_branch``, ``use_squash_pr_title_as_default``):
    a 2022-11-28 answer, or a webhook payload."""
    return RENDERING.get() in (DEFAULT_API_VERSION, WEBHOOKS)


# A template's JSON (rewritten, or with fields blanked), by the template's id and what was
# done to it. Each entry holds the template itself, so its id cannot be taken by another
# object while the entry lives. Decoding these bytes takes a fifth of the time of
# copy.deepcopy or of rewriting every string anew, and gives the same fresh objects.
_Key = tuple[int, tuple[tuple[str, str], ...], tuple[str, ...]]
_ENCODED: dict[_Key, tuple[Any, bytes]] = {}
_ENCODED_LIMIT: Final = 4096  # the replacements differ per fake's url: bounded in memory


def copied(template: Json, *overwritten: str) -> Json:
    """A deep copy of a template (JSON data, which never changes), with the top-level fields
    ``overwritten`` None (in their place): the caller sets them, so they are not copied."""
    return cast(Json, _decoded(template, (), overwritten))


def template_rewritten(template: Any, replacements: Mapping[str, str]) -> Any:
    """``rewritten(template, replacements)`` of a template, which never changes (the result
    for each replacements is kept)."""
    return _decoded(template, tuple(replacements.items()), ())


def _decoded(
    template: Any, replacements: tuple[tuple[str, str], ...], overwritten: tuple[str, ...]
) -> Any:
    key = id(template), replacements, overwritten
    entry = _ENCODED.get(key)
    if entry is None or entry[0] is not template:
        if len(_ENCODED) >= _ENCODED_LIMIT:
            _ENCODED.clear()
        value = rewritten(template, dict(replacements))
        for name in overwritten:
            value[name] = None
        entry = template, orjson.dumps(value)
        _ENCODED[key] = entry
    return orjson.loads(entry[1])


def rewritten(value: Any, replacements: Mapping[str, str]) -> Any:
    """A deep copy of ``value`` with substrings replaced in every string.

    The templates carry dozens of url fields (``forks_url``, ``git_refs_url``…); rewriting the
    template's names inside them is shorter and safer than listing each one.
    """
    if isinstance(value, str):
        for old, new in replacements.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {key: rewritten(item, replacements) for key, item in value.items()}
    if isinstance(value, list):
        return [rewritten(item, replacements) for item in value]
    return copy.deepcopy(value)


def iso(moment: datetime) -> str:
    # githubkit parses InstallationToken.expires_at with exactly this format.
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_id_of(kind: str, number: int) -> str:
    return f"{kind}_kw{base64.b64encode(str(number).encode()).decode().rstrip('=')}"


def fake_sha(*parts: object) -> str:
    return hashlib.sha1(":".join(map(str, parts)).encode()).hexdigest()


def git_blob_sha(data: bytes) -> str:
    # The sha git (and the contents API) reports for a file: sha1 over "blob <size>\0<data>".
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
