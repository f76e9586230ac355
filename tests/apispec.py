"""GitHub's own OpenAPI descriptions, pinned, as validators: of the fake's answers, of
perfbot's requests and of the webhook payloads the harness builds.

``scripts/bootstrap`` fetches three npm packages by version and digest into a cache outside
the work tree (``PERFBOT_API_DESCRIPTIONS``, else ``~/.cache/perfbot/openapi``):

* ``@octokit/openapi`` 23.0.2: the REST API. One file for every calendar version: the
  2022-11-28 description, whose nodes carry ``x-github-breaking-changes``, the patches that
  make it the description of a later version. ``at_version`` applies those up to the version
  asked for, so the 2026-03-10 description is the file with its 2026-03-10 patches applied.
  A property a version *removed* must then be absent (``{"not": {}}``), not merely
  undeclared: OpenAPI objects accept undeclared properties, and a removed field sent anyway
  is exactly what a version check has to catch.
* ``@octokit/openapi-webhooks`` 12.1.0: the webhook payloads (OpenAPI 3.1, not versioned:
  deliveries carry no API version).
* ``@octokit/webhooks-examples`` 7.6.1: the community's example payloads, event by event.

The REST description is OpenAPI 3.0.3: ``nullable: true`` is turned into JSON Schema's null
type before jsonschema (draft 2020-12) reads it; ``$ref`` s into ``components`` resolve
against the whole document, registered as one resource. Formats are not checked except
``date-time`` (the fake writes every timestamp itself).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Final, cast
from urllib.parse import quote

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

Json = dict[str, Any]

CACHE: Final = Path(
    os.environ.get("PERFBOT_API_DESCRIPTIONS")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "perfbot" / "openapi"
)
# Every calendar version GitHub serves; the first is the one it assumes without a header.
API_VERSIONS: Final = ("2022-11-28", "2026-03-10")
HTTP_METHODS: Final = ("get", "put", "post", "patch", "delete", "head", "options")


@dataclass(frozen=True)
class Package:
    """One file of an npm package, as ``scripts/bootstrap`` unpacks it."""

    name: str
    version: str
    file: str

    @property
    def path(self) -> Path:
        return CACHE / f"{self.name}-{self.version}" / self.file

    def read(self) -> Any:
        if not self.path.exists():
            raise FileNotFoundError(
                f"{self.path} is missing: scripts/bootstrap fetches {self.name}@{self.version}"
            )
        return json.loads(self.path.read_text(encoding="utf-8"))


REST_PACKAGE: Final = Package("@octokit/openapi", "23.0.2", "generated/api.github.com.json")
WEBHOOKS_PACKAGE: Final = Package(
    "@octokit/openapi-webhooks", "12.1.0", "generated/api.github.com.json"
)
EXAMPLES_PACKAGE: Final = Package(
    "@octokit/webhooks-examples", "7.6.1", "api.github.com/index.json"
)


_ITEM: Final = re.compile(r"\[[0-9]+\]")


@dataclass(frozen=True)
class Violation:
    """One rule of the description that an exchange or a payload broke."""

    where: str  # "GET /repos/{owner}/{repo}/pulls/{pull_number} → 200", "webhook issues-opened"
    location: str  # a JSON path inside the checked value ("$" for the whole)
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.location}: {self.message}"

    @property
    def rule(self) -> str:
        """What was broken, whichever item of a list broke it."""
        return f"{self.where}: {_ITEM.sub('[*]', self.location)}"


# ---------------------------------------------------------------------------------------------
# Versions: GitHub's breaking-change patches, applied


def _removed(version: str) -> Json:
    """The schema of a property that ``version`` removed: no value is valid."""
    return {"not": {}, REMOVED_IN: version}


REMOVED_IN: Final = "x-removed-in"


def at_version(document: Json, version: str) -> Json:
    """``document`` (changed in place) as the description of API ``version``.

    Each ``x-github-breaking-changes`` entry of a version up to ``version`` is applied to the
    node that carries it, in the order listed: a list is a JSON Patch (RFC 6902), an object a
    JSON Merge Patch (RFC 7396). The annotations are removed, so that nothing reads them as
    schema keywords.
    """
    annotated: list[Json] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            if "x-github-breaking-changes" in node:
                annotated.append(node)
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(document)
    # Innermost first: a patch of an outer node may point into an inner one, never the
    # reverse.
    for node in reversed(annotated):
        for change in node.pop("x-github-breaking-changes"):
            if change["version"] > version:
                continue
            patch = change["patch"]
            if isinstance(patch, list):
                _json_patch(node, patch, change["version"])
            else:
                _merge_patch(node, patch, None, change["version"])
    return document


def _json_patch(node: Json, operations: Sequence[Json], version: str) -> None:
    for operation in operations:
        *parents, last = [
            segment.replace("~1", "/").replace("~0", "~")
            for segment in operation["path"].split("/")[1:]
        ]
        target: Any = node
        for segment in parents:
            target = target[int(segment)] if isinstance(target, list) else target[segment]
        kind = operation["op"]
        if kind == "remove":
            if isinstance(target, list):
                del target[int(last)]
            elif parents and parents[-1] == "properties":
                target[last] = _removed(version)
            else:
                del target[last]
        elif kind in ("replace", "add"):
            if isinstance(target, list):
                index = len(target) if last == "-" else int(last)
                if kind == "add":
                    target.insert(index, operation["value"])
                else:
                    target[index] = operation["value"]
            else:
                target[last] = operation["value"]
        else:
            raise ValueError(f"unsupported JSON Patch operation {kind!r}")


def _merge_patch(node: Json, patch: Json, parent_key: str | None, version: str) -> None:
    for key, value in patch.items():
        if value is None:
            if parent_key == "properties":
                node[key] = _removed(version)
            else:
                node.pop(key, None)
        elif isinstance(value, dict) and isinstance(node.get(key), dict):
            _merge_patch(node[key], value, key, version)
        else:
            node[key] = value


# ---------------------------------------------------------------------------------------------
# OpenAPI schemas as JSON Schema


def _as_json_schema(node: Any) -> Any:
    """``node`` with OpenAPI 3.0's ``nullable`` turned into JSON Schema (in place)."""
    if isinstance(node, list):
        for index, value in enumerate(node):
            node[index] = _as_json_schema(value)
        return node
    if not isinstance(node, dict):
        return node
    for key, value in node.items():
        node[key] = _as_json_schema(value)
    if node.get("nullable") is not True:
        node.pop("nullable", None) if node.get("nullable") is False else None
        return node
    del node["nullable"]
    kind = node.get("type")
    if isinstance(kind, str) and not ({"enum", "allOf", "anyOf", "oneOf", "$ref"} & node.keys()):
        node["type"] = [kind, "null"]
        return node
    if isinstance(node.get("enum"), list) and None not in node["enum"]:
        node["enum"] = [*node["enum"], None]
    return {"anyOf": [{"type": "null"}, node]}


def _format_checker() -> FormatChecker:
    checker = FormatChecker(formats=())

    @checker.checks("date-time", raises=ValueError)
    def date_time(value: object) -> bool:
        if not isinstance(value, str):
            return True
        if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", value):
            raise ValueError(f"{value!r} is not an RFC 3339 date-time")
        datetime.fromisoformat(value.replace("Z", "+00:00"))
        return True

    return checker


def _pointer(*segments: str) -> str:
    return "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in segments)


class _Schemas:
    """The schemas of one document, each validated by its JSON pointer."""

    def __init__(self, document: Json, uri: str) -> None:
        self.document = document
        self._uri = uri
        resource: Resource[Any] = DRAFT202012.create_resource(document)
        self._registry: Registry[Any] = Registry().with_resource(uri, resource)
        self._validators: dict[str, Draft202012Validator] = {}
        self._formats = _format_checker()

    def errors(self, pointer: str, instance: Any) -> list[tuple[str, str]]:
        """(JSON path, message) of each way ``instance`` breaks the schema at ``pointer``."""
        validator = self._validators.get(pointer)
        if validator is None:
            reference = {"$ref": f"{self._uri}#{quote(pointer, safe='/~')}"}
            validator = Draft202012Validator(
                reference, registry=self._registry, format_checker=self._formats
            )
            self._validators[pointer] = validator
        return [_explained(error) for error in validator.iter_errors(instance)]

    def resolve(self, node: Any) -> Any:
        """``node`` or, for a ``{"$ref": "#/..."}`` outside the schemas, what it names."""
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            target: Any = self.document
            for segment in node["$ref"].removeprefix("#/").split("/"):
                target = target[segment.replace("~1", "/").replace("~0", "~")]
            node = target
        return node


def _explained(error: ValidationError) -> tuple[str, str]:
    """The deepest useful reason: anyOf/oneOf failures name their best branch's error."""
    deepest = error
    while deepest.context:
        deepest = best_match(deepest.context)
    if isinstance(deepest.schema, dict) and REMOVED_IN in deepest.schema:
        return deepest.json_path, f"API version {deepest.schema[REMOVED_IN]} removed this field"
    message = deepest.message if len(deepest.message) <= 300 else deepest.message[:299] + "…"
    return deepest.json_path, message


# ---------------------------------------------------------------------------------------------
# The REST API


@dataclass(frozen=True)
class Operation:
    method: str  # upper case
    template: str  # "/repos/{owner}/{repo}/pulls/{pull_number}"
    pointer: str  # of the operation object in the document
    node: Json

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


def _template_regex(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{([^}]+)\}", template)
    regex = re.escape(parts[0])
    for index in range(1, len(parts), 2):
        name, literal = parts[index], parts[index + 1]
        # A file path and a "base...head" may hold slashes (branch names do).
        value = ".+" if name in ("path", "basehead") and not literal else "[^/]+"
        regex += f"(?P<p{index}>{value})" + re.escape(literal)
    return re.compile(regex)


class RestDescription:
    """The REST API of one calendar version: its operations, requests and responses."""

    def __init__(self, document: Json, version: str) -> None:
        self.version = version
        self._schemas = _Schemas(_as_json_schema(document), f"urn:github:rest:{version}")
        self._routes: list[tuple[int, re.Pattern[str], str]] = []
        for template in document["paths"]:
            literal = len(re.sub(r"\{[^}]+\}", "", template))
            self._routes.append((literal, _template_regex(template), template))
        # The most literal template first: /issues/comments/{id} before /issues/{number}.
        self._routes.sort(key=lambda route: -route[0])

    @property
    def document(self) -> Json:
        return self._schemas.document

    def operation(self, method: str, path: str) -> Operation | None:
        """The operation a request is for: the most literal template that matches, and one
        GitHub still documents before a deprecated alias (octokit keeps ``compare/{base}...
        {head}`` beside ``compare/{basehead}``)."""
        found: list[Operation] = []
        for _literal, regex, template in self._routes:
            if regex.fullmatch(path):
                node = self.document["paths"][template].get(method.lower())
                if node is not None:
                    pointer = _pointer("paths", template, method.lower())
                    found.append(Operation(method.upper(), template, pointer, node))
        current = [
            o
            for o in found
            if not o.node.get("deprecated")
            and not str(o.node.get("description", "")).startswith("**Deprecated**")
        ]
        return next(iter(current or found), None)

    def operations(self) -> Iterator[Operation]:
        for template, item in self.document["paths"].items():
            for method in HTTP_METHODS:
                if method in item:
                    pointer = _pointer("paths", template, method)
                    yield Operation(method.upper(), template, pointer, item[method])

    def _parameters(self, operation: Operation) -> list[tuple[Json, str]]:
        """Each parameter of the operation (the path's shared ones first), resolved, with
        the pointer of its schema."""
        found: list[tuple[Json, str]] = []
        item = self.document["paths"][operation.template]
        for base, listed in (
            (_pointer("paths", operation.template), item.get("parameters", [])),
            (operation.pointer, operation.node.get("parameters", [])),
        ):
            for index, entry in enumerate(listed):
                if "$ref" in entry:
                    pointer = str(entry["$ref"]).removeprefix("#")
                else:
                    pointer = base + _pointer("parameters", str(index))
                found.append((self._schemas.resolve(entry), pointer + "/schema"))
        return found

    def check_request(
        self,
        method: str,
        path: str,
        query: Mapping[str, str],
        body: Any,
    ) -> list[Violation]:
        """How a request breaks the description: an unknown operation, a path or query
        parameter (unknown, missing or of the wrong type), or its JSON body."""
        operation = self.operation(method, path)
        if operation is None:
            return [Violation(f"{method} {path}", "$", "no such operation in the description")]
        where = f"{operation} request"
        violations: list[Violation] = []
        parameters = self._parameters(operation)
        declared = {p["name"] for p, _pointer in parameters if p["in"] == "query"}
        for name in query:
            if name not in declared:
                violations.append(Violation(where, f"?{name}", "unknown query parameter"))
        values = dict(
            zip(_path_names(operation.template), _path_values(operation, path), strict=True)
        )
        for parameter, schema_pointer in parameters:
            name, place = parameter["name"], parameter["in"]
            if place not in ("path", "query"):
                continue
            given = values.get(name) if place == "path" else query.get(name)
            if given is None:
                if parameter.get("required"):
                    violations.append(Violation(where, f"{place} {name}", "required, missing"))
                continue
            schema = parameter.get("schema", {})
            coerced = _coerced(given, self._schemas.resolve(schema))
            for location, message in self._schemas.errors(schema_pointer, coerced):
                violations.append(Violation(where, f"{place} {name}{location[1:]}", message))
        violations += self._check_body(operation, where, body)
        return violations

    def _check_body(self, operation: Operation, where: str, body: Any) -> list[Violation]:
        request_body = self._schemas.resolve(operation.node.get("requestBody"))
        if request_body is None:
            if body not in (None, {}):
                return [Violation(where, "$", "the operation takes no request body")]
            return []
        if body is None:
            if request_body.get("required"):
                return [Violation(where, "$", "the request body is required")]
            return []
        content = request_body.get("content", {})
        if "application/json" not in content:
            return [Violation(where, "$", f"the body is JSON; the operation takes {list(content)}")]
        pointer = _body_pointer(self, operation, ("requestBody", "content", "application/json"))
        return [Violation(where, loc, msg) for loc, msg in self._schemas.errors(pointer, body)]

    def check_response(
        self, method: str, path: str, status: int, body: Any, *, is_json: bool
    ) -> list[Violation]:
        """How an answer breaks the description: a success it does not list, or a JSON
        body that does not match the schema of its status. Errors (4xx, 5xx) the operation
        does not list are not checked: GitHub sends 401, rate limits and 5xx on any route."""
        operation = self.operation(method, path)
        if operation is None:
            return [Violation(f"{method} {path}", "$", "no such operation in the description")]
        where = f"{operation} → {status}"
        responses = operation.node.get("responses", {})
        key = str(status) if str(status) in responses else "default"
        if key not in responses:
            if status < 400:
                return [
                    Violation(where, "$", f"undocumented status (documented: {list(responses)})")
                ]
            return []
        response = self._schemas.resolve(responses[key])
        content = response.get("content") or {}
        schema_type = next((t for t in content if "json" in t), None)
        if not is_json:
            return []  # the raw media types (a file's bytes) are outside the description
        if schema_type is None:
            if body not in (None, "", {}, b""):
                return [Violation(where, "$", "the status documents no body")]
            return []
        pointer = _response_pointer(self, operation, responses[key], key, schema_type)
        return [Violation(where, loc, msg) for loc, msg in self._schemas.errors(pointer, body)]

    def schema_errors(self, name: str, instance: Any) -> list[Violation]:
        """How ``instance`` breaks ``components/schemas/<name>``."""
        pointer = _pointer("components", "schemas", name)
        return [
            Violation(f"schema {name}", loc, msg)
            for loc, msg in self._schemas.errors(pointer, instance)
        ]


def _path_names(template: str) -> list[str]:
    return re.findall(r"\{([^}]+)\}", template)


def _path_values(operation: Operation, path: str) -> list[str]:
    found = _template_regex(operation.template).fullmatch(path)
    assert found is not None
    return [
        value for _name, value in sorted(found.groupdict().items(), key=lambda i: int(i[0][1:]))
    ]


def _coerced(text: str, schema: Any) -> Any:
    """A parameter's text as the value its schema types (``per_page=100`` is an integer)."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    kinds = kind if isinstance(kind, list) else [kind]
    if "integer" in kinds and re.fullmatch(r"-?\d+", text):
        return int(text)
    if "number" in kinds:
        try:
            return float(text)
        except ValueError:
            return text
    if "boolean" in kinds and text in ("true", "false"):
        return text == "true"
    if "array" in kinds:
        return text.split(",")
    return text


def _body_pointer(spec: RestDescription, operation: Operation, path: Sequence[str]) -> str:
    node = operation.node.get("requestBody")
    if isinstance(node, dict) and "$ref" in node:
        return str(node["$ref"]).removeprefix("#") + _pointer(*path[1:], "schema")
    return operation.pointer + _pointer(*path, "schema")


def _response_pointer(
    spec: RestDescription, operation: Operation, node: Any, key: str, media: str
) -> str:
    if isinstance(node, dict) and "$ref" in node:
        return str(node["$ref"]).removeprefix("#") + _pointer("content", media, "schema")
    return operation.pointer + _pointer("responses", key, "content", media, "schema")


@cache
def rest(version: str) -> RestDescription:
    """The REST description of API ``version`` (read once per test session and version)."""
    if version not in API_VERSIONS:
        raise ValueError(f"GitHub serves no REST API version {version!r}")
    return RestDescription(at_version(cast(Json, REST_PACKAGE.read()), version), version)


# ---------------------------------------------------------------------------------------------
# Webhooks


class WebhookDescription:
    """The webhook payloads: one schema per event and action."""

    def __init__(self, document: Json) -> None:
        self._schemas = _Schemas(_as_json_schema(document), "urn:github:webhooks")
        self._by_name: dict[str, str] = {}
        for name in document["webhooks"]:
            self._by_name[name] = _pointer("webhooks", name, "post", "requestBody", "content")

    @cached_property
    def names(self) -> frozenset[str]:
        return frozenset(self._by_name)

    def name_of(self, event: str, action: str | None) -> str:
        """The description's name of a delivery: ``installation-repositories-added``."""
        named = f"{event}-{action}" if action else event
        return named.replace("_", "-")

    def check(self, event: str, payload: Any) -> list[Violation]:
        action = payload.get("action") if isinstance(payload, dict) else None
        name = self.name_of(event, action if isinstance(action, str) else None)
        if name not in self._by_name:
            return [
                Violation(f"webhook {name}", "$", "no such event and action in the description")
            ]
        pointer = self._by_name[name] + _pointer("application/json", "schema")
        return [
            Violation(f"webhook {name}", loc, msg)
            for loc, msg in self._schemas.errors(pointer, payload)
        ]


@cache
def webhooks() -> WebhookDescription:
    return WebhookDescription(cast(Json, WEBHOOKS_PACKAGE.read()))


@dataclass(frozen=True)
class Example:
    event: str
    action: str | None
    index: int  # among the examples of its event
    payload: Json

    @property
    def name(self) -> str:
        return f"{self.event}.{self.action or 'none'}.{self.index}"


@cache
def webhook_examples() -> tuple[Example, ...]:
    """Every example payload of ``@octokit/webhooks-examples``, event by event."""
    found: list[Example] = []
    for entry in cast(list[Json], EXAMPLES_PACKAGE.read()):
        for index, payload in enumerate(entry["examples"]):
            action = payload.get("action")
            found.append(
                Example(entry["name"], action if isinstance(action, str) else None, index, payload)
            )
    return tuple(found)
