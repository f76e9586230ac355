"""HTTP plumbing of the fake's API: a checked request (``Call``), errors as GitHub words them,
pagination, and how a route is declared."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

import orjson
from starlette.requests import Request
from starlette.responses import Response

from perfbot.errors import PerfbotError
from perfbot.sandbox.common import DOCS, AuthKind, Json, T
from perfbot.sandbox.models import Repo, Token

if TYPE_CHECKING:
    from perfbot.sandbox.building import FakeBuilding


@dataclass(frozen=True)
class Credential:
    kind: AuthKind | None
    token: Token | None
    problem: str  # the 401 message when kind is None


@dataclass(frozen=True)
class Call:
    """What a route handler needs: the fake, the request and its checked parts."""

    fake: FakeBuilding
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


class HttpError(PerfbotError):
    """The fake's answer with an error status, raised by a route handler."""

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
        return error_json(self.status, self.message, errors=self.errors, headers=self.headers)


def invalid(resource: str, field_name: str, message: str) -> HttpError:
    """GitHub's 422 shape: "Validation Failed" with one error naming the field."""
    error = {"resource": resource, "code": "unprocessable", "field": field_name, "message": message}
    return HttpError(422, "Validation Failed", errors=[error])


# A datetime or a dataclass in an answer is a bug of the fake (GitHub sends strings): refused,
# as the standard library's encoder would, instead of written in orjson's own way.
STRICT_JSON: Final = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def json_response(
    content: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """``content`` as compact UTF-8 JSON (orjson: a fifth of the standard encoder's time)."""
    body = orjson.dumps(content, option=STRICT_JSON)
    return Response(body, status, dict(headers or {}), media_type="application/json")


def error_json(
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
    return json_response(content, status, headers)


def parse_body(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError as error:
        raise HttpError(400, "Problems parsing JSON") from error


def recorded_body(raw: bytes) -> Any:
    """The body for the request log: its JSON, or its text when it is not JSON."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def body_dict(call: Call) -> Json:
    if call.body is None:
        return {}
    if not isinstance(call.body, dict):
        raise HttpError(400, "Problems parsing JSON")
    return cast(Json, call.body)


def int_query(call: Call, name: str, default: int, low: int, high: int | None) -> int:
    text = call.query.get(name)
    if text is None:
        return default
    if not text.isdigit():
        raise HttpError(422, f"Invalid value for '{name}': {text!r}")
    value = max(low, int(text))
    return value if high is None else min(high, value)


def paginate(call: Call, items: Sequence[T]) -> tuple[list[T], dict[str, str]]:
    """One page of ``items`` and the ``Link`` header GitHub would send with it."""
    per_page = int_query(call, "per_page", 30, 1, 100)
    page = int_query(call, "page", 1, 1, None)
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


Handler = Callable[[Call], Response]


@dataclass(frozen=True)
class ApiRoute:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    auth: AuthKind
    permissions: tuple[str, ...]  # any one of them suffices
    level: str
    public: bool = False  # answered without any credential (the manifest code exchange)


PARAM_PATTERNS: Final = {None: "[^/]+", "int": "[0-9]+", "path": ".+"}


def compile_template(template: str) -> re.Pattern[str]:
    """``/repos/{owner}/{repo}/pulls/{number:int}`` → an anchored regex with named groups."""
    parts = re.split(r"\{(\w+)(?::(int|path))?\}", template)
    regex = re.escape(parts[0])
    for index in range(1, len(parts), 3):
        name, kind, literal = parts[index], parts[index + 1], parts[index + 2]
        regex += f"(?P<{name}>{PARAM_PATTERNS[kind]})" + re.escape(literal)
    return re.compile(regex)


def api_route(
    method: str,
    template: str,
    handler: Handler,
    *permissions: str,
    level: str = "read",
) -> ApiRoute:
    auth: AuthKind = "jwt" if template.startswith("/app") else "token"
    return ApiRoute(method, compile_template(template), handler, auth, permissions, level)
