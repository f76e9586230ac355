"""GitHub's JSON answers to the calls sent by ``direct`` read straight into perfbot's
types (artifacts, pulls, comments, files, ids), without building githubkit's models.

The JSON is parsed by orjson (a few times faster than the standard library's, which
httpx's ``.json()`` uses). Only the fields perfbot keeps are read, and each is checked
for its type: an answer that lacks one, or has one of another type, raises
``GitHubError`` naming the call.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import orjson

from perfbot.github.convert import NOT_A_FILE
from perfbot.github.errors import GitHubError
from perfbot.github.types import ArtifactInfo, CommentInfo, PullInfo
from perfbot.github.wire import Answered

T = TypeVar("T")


class _Unexpected(Exception):
    """A field missing or of another type (turned into a GitHubError by ``read``)."""


def _parsed(response: Answered, what: str) -> object:
    try:
        return orjson.loads(response.content)
    except ValueError:
        raise GitHubError(f"GitHub's answer to {what} is not JSON") from None


def read(response: Answered, what: str) -> dict[str, Any]:
    """The answer's JSON object; GitHubError when it is none."""
    data = _parsed(response, what)
    if not isinstance(data, dict):
        raise GitHubError(f"GitHub's answer to {what} is not a JSON object")
    return data


def _items(response: Answered, what: str) -> list[dict[str, Any]]:
    """The answer's JSON array of objects (a list endpoint's page); GitHubError when not."""
    data = _parsed(response, what)
    if not isinstance(data, list):
        raise GitHubError(f"GitHub's answer to {what} is not a JSON array")
    return [item if isinstance(item, dict) else {} for item in data]


def _get(data: dict[str, Any], key: str, kind: type[T]) -> T:
    value = data.get(key)
    # bool is an int to Python, never to GitHub's schema.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Unexpected(key)
    return value


def _maybe(data: dict[str, Any], key: str, kind: type[T]) -> T | None:
    """The field when it is of ``kind``, else None (absent, null or another type)."""
    try:
        return _get(data, key, kind)
    except _Unexpected:
        return None


def _object(data: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = data.get(key)
    return value if isinstance(value, dict) else None


def _checked(response: Answered, what: str, convert: Callable[[dict[str, Any]], T]) -> T:
    """``convert`` of the answer's JSON object, a missing or mistyped field reported as a
    GitHubError."""
    try:
        return convert(read(response, what))
    except _Unexpected as exc:
        raise GitHubError(f"GitHub's answer to {what} lacks a valid {exc.args[0]!r}") from None


def _each(response: Answered, what: str, convert: Callable[[dict[str, Any]], T]) -> list[T]:
    """``convert`` of each object of the answer's JSON array, as ``_checked`` reports."""
    try:
        return [convert(item) for item in _items(response, what)]
    except _Unexpected as exc:
        raise GitHubError(f"GitHub's answer to {what} lacks a valid {exc.args[0]!r}") from None


def artifacts(response: Answered, what: str) -> list[ArtifactInfo]:
    """A page of ``GET /actions/runs/N/artifacts``."""
    return _checked(response, what, _artifacts)


def pull(response: Answered, what: str) -> PullInfo:
    """The answer of ``GET /pulls/N`` (which says ``comments``)."""
    return _checked(response, what, partial(_pull, full=True))


def pulls(response: Answered, what: str) -> list[PullInfo]:
    """A list of pulls in their simple form (no ``comments``), e.g. a commit's pulls."""
    return _each(response, what, partial(_pull, full=False))


def comment(response: Answered, what: str) -> CommentInfo:
    return _checked(response, what, _comment)


def comments(response: Answered, what: str) -> list[CommentInfo]:
    """A page of an issue's or a PR's comments."""
    return _each(response, what, _comment)


def object_id(response: Answered, what: str) -> int:
    """The ``id`` of what a write created or changed (a check run)."""
    return _checked(response, what, lambda data: _get(data, "id", int))


def _artifacts(data: dict[str, Any]) -> list[ArtifactInfo]:
    items = _get(data, "artifacts", list)
    return [_artifact(item if isinstance(item, dict) else {}) for item in items]


def _artifact(data: dict[str, Any]) -> ArtifactInfo:
    run = _object(data, "workflow_run")
    created = data.get("created_at")
    return ArtifactInfo(
        id=_get(data, "id", int),
        name=_get(data, "name", str),
        size_in_bytes=_get(data, "size_in_bytes", int),
        expired=_get(data, "expired", bool),
        digest=_maybe(data, "digest", str),
        run_id=_maybe(run, "id", int) if run is not None else None,
        created_at=_timestamp(created) if isinstance(created, str) else "",
    )


def _timestamp(text: str) -> str:
    """ISO 8601 as pydantic's datetime writes it back (``Z`` as ``+00:00``)."""
    try:
        return datetime.fromisoformat(text).isoformat()
    except ValueError:
        raise _Unexpected("created_at") from None


def _pull(data: dict[str, Any], *, full: bool) -> PullInfo:
    """``full``: the answer of ``GET /pulls/N`` (which has ``comments``), else the list
    form."""
    head = _get(data, "head", dict)
    base = _get(data, "base", dict)
    head_repo = _object(head, "repo")
    labels = data.get("labels") or []
    return PullInfo(
        number=_get(data, "number", int),
        state=_get(data, "state", str),
        head_sha=_get(head, "sha", str),
        head_ref=_get(head, "ref", str),
        head_repo_id=_get(head_repo, "id", int) if head_repo is not None else None,
        base_repo_id=_get(_get(base, "repo", dict), "id", int),
        base_ref=_get(base, "ref", str),
        base_sha=_get(base, "sha", str),
        labels=tuple(
            label["name"]
            for label in labels
            if isinstance(label, dict) and isinstance(label.get("name"), str) and label["name"]
        ),
        title=_get(data, "title", str),
        comments=_get(data, "comments", int) if full else None,
    )


def _comment(data: dict[str, Any]) -> CommentInfo:
    app = _object(data, "performed_via_github_app")
    user = _object(data, "user")
    body = data.get("body")
    return CommentInfo(
        id=_get(data, "id", int),
        body=body if isinstance(body, str) else "",
        user_login=_get(user, "login", str) if user is not None else "",
        app_id=_get(app, "id", int) if app is not None else None,
    )


def file_text(response: Answered) -> str:
    """A file's text from its contents answer, as ``convert.file_text`` reads it:
    ``NOT_A_FILE`` for a directory (a list), a symlink or a submodule, ``"\\x00"`` for
    what is not UTF-8 text."""
    try:
        data: object = orjson.loads(response.content)
    except ValueError:
        raise GitHubError("GitHub's answer to a file's contents is not JSON") from None
    if not isinstance(data, dict) or data.get("type") != "file":
        return NOT_A_FILE
    content = data.get("content")
    if not isinstance(content, str):
        return NOT_A_FILE
    try:
        return base64.b64decode(content).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return "\x00"
