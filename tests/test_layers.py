"""The direction of imports between perfbot's layers (docs/development.md).

    cli -> app -> github -> store -> engine -> model, errors       support: beside the base
    cli -> sandbox -> model, errors, support

The sandbox (a stand-in for GitHub: the tests' fake, which `perfbot try` serves) stands
beside the App, never under it: it knows GitHub's side of the wire, not perfbot's.

A module may import its own layer and the layers below it, never one above. The check is
static: every module under perfbot/ is parsed with ``ast`` and every import is resolved,
relative ones and those inside functions included. A second check imports every engine
module in a fresh interpreter and looks at what it loaded.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from perfbot.app import processes
from tests.paths import REPO

PACKAGE = REPO / "perfbot"

# What each layer may import from perfbot, its own layer included.
ALLOWED: dict[str, frozenset[str]] = {
    "base": frozenset({"base"}),
    "support": frozenset({"base", "support"}),
    "engine": frozenset({"base", "engine"}),
    "store": frozenset({"base", "support", "engine", "store"}),
    "github": frozenset({"base", "support", "engine", "store", "github"}),
    "app": frozenset({"base", "support", "engine", "store", "github", "app"}),
    "sandbox": frozenset({"base", "support", "sandbox"}),
    "cli": frozenset({"base", "support", "engine", "store", "github", "app", "sandbox", "cli"}),
}
# The second component of a module's name -> its layer; "perfbot" itself is the base.
LAYER_OF_PART = {
    "model": "base",
    "errors": "base",
    "support": "support",
    "engine": "engine",
    "store": "store",
    "github": "github",
    "app": "app",
    "sandbox": "sandbox",
    "cli": "cli",
    "__main__": "cli",
}
# Only the GitHub adapter talks HTTP: these are its libraries (top-level import names).
# The sandbox is GitHub's side of the same wire, so it may use them too.
HTTP_LIBRARIES = frozenset(
    {"githubkit", "githubkit_schemas", "httpx", "httpcore", "httptools", "multidict", "jwt"}
)
HTTP_LAYERS = frozenset({"github", "sandbox"})
# Network, database and server libraries, which the pure code must not load.
IO_LIBRARIES = HTTP_LIBRARIES | {
    "psycopg",
    "psycopg_pool",
    "sqlite3",
    "_sqlite3",
    "uvicorn",
    "starlette",
    "prometheus_client",
    "socket",
    "_socket",
    "ssl",
    "selectors",
    "socketserver",
    "http",
    "asyncio",
}
# Nor, for the engine, the layers above it (even through importlib).
NOT_IN_THE_ENGINE = IO_LIBRARIES | {
    "perfbot.store",
    "perfbot.github",
    "perfbot.app",
    "perfbot.cli",
    "perfbot.support",
    "perfbot.sandbox",
}
MAX_TOP_LEVEL_ENTRIES = 13
# Inside the engine, the three stages in order: a stage imports its own and the ones
# before it. Judging never words a sentence (show), reading never judges.
ENGINE_STAGES = ("read", "judge", "show")


def stage_of(module: str) -> str | None:
    """The engine stage of a module (``perfbot.engine.judge.noise`` → ``judge``), else None."""
    parts = module.split(".")
    if parts[:2] != ["perfbot", "engine"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in ENGINE_STAGES else "unknown"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def perfbot_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> str | None:
    """The layer of a perfbot module, or None for a module outside perfbot."""
    parts = module.split(".")
    if parts[0] != "perfbot":
        return None
    if len(parts) == 1:
        return "base"
    return LAYER_OF_PART.get(parts[1], "unknown")


def imports_of(source: str, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source``, wherever it is written.

    ``from perfbot.github import transport`` yields ``perfbot.github.transport``, so that
    importing a submodule through its parent counts as importing the submodule.
    """
    known = perfbot_modules()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield node.lineno, submodule if submodule in known else target


def violations(source: str, module: str, is_package: bool = False) -> list[str]:
    """Every import of ``module`` that points up the layers or reaches for HTTP outside github/."""
    layer = layer_of(module)
    assert layer in ALLOWED, f"{module} belongs to no layer: place it in LAYER_OF_PART"
    found = []
    for line, target in imports_of(source, module, is_package):
        target_layer = layer_of(target)
        if target_layer is not None and target_layer not in ALLOWED[layer]:
            found.append(
                f"{module}:{line} imports {target} ({layer} may not import {target_layer})"
            )
        stage, target_stage = stage_of(module), stage_of(target)
        if stage is not None and target_stage is not None:
            if "unknown" in (stage, target_stage):
                found.append(f"{module}:{line}: every engine module belongs to {ENGINE_STAGES}")
            elif ENGINE_STAGES.index(target_stage) > ENGINE_STAGES.index(stage):
                found.append(
                    f"{module}:{line} imports {target} ({stage} comes before {target_stage})"
                )
        top = target.split(".")[0]
        if top in HTTP_LIBRARIES and layer not in HTTP_LAYERS:
            found.append(f"{module}:{line} imports {target} (only perfbot.github talks HTTP)")
    return found


@pytest.mark.parametrize("module", sorted(perfbot_modules()))
def test_imports_point_down_the_layers(module: str) -> None:
    path = perfbot_modules()[module]
    source = path.read_text(encoding="utf-8")
    assert violations(source, module, path.name == "__init__.py") == []


def test_every_layer_has_modules() -> None:
    """The rules above are about real packages: a renamed layer must not pass by being empty."""
    layers = {layer_of(module) for module in perfbot_modules()}
    assert layers == set(ALLOWED)


def _holds_source(path: Path) -> bool:
    """A file, or a folder with something besides byte-code caches: a folder a move left
    behind in a work tree, holding only ``__pycache__``, is not part of the package."""
    if path.name == "__pycache__":
        return False
    return not path.is_dir() or any(_holds_source(child) for child in path.iterdir())


def test_the_top_level_stays_small() -> None:
    entries = sorted(p.name for p in PACKAGE.iterdir() if _holds_source(p))
    assert len(entries) <= MAX_TOP_LEVEL_ENTRIES, entries


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("perfbot.engine.show.render", "from perfbot.store.base import Job\n"),
        ("perfbot.engine.show.render", "def f() -> None:\n    import perfbot.github.types\n"),
        ("perfbot.engine.read.formats.zperf", "from ....app import settings\n"),
        ("perfbot.engine.judge.compare", "from perfbot import app\n"),
        ("perfbot.store.base", "from perfbot.github.types import PullInfo\n"),
        ("perfbot.store.sqlite", "from perfbot.app.settings import Settings\n"),
        ("perfbot.github.app", "from perfbot.app.worker import Worker\n"),
        ("perfbot.support.retry", "from perfbot.engine import compare\n"),
        ("perfbot.app.server", "import httpx\n"),
        ("perfbot.app.actions", "import httptools\n"),
        ("perfbot.cli", "def main() -> None:\n    import jwt\n"),
        ("perfbot.model", "from perfbot.engine.judge.compare import Verdict\n"),
        ("perfbot.engine.judge.compare", "from perfbot.engine.show.escape import text\n"),
        ("perfbot.engine.read.sides", "from perfbot.engine.judge import noise\n"),
        ("perfbot.sandbox.routes", "from perfbot.app.settings import Settings\n"),
        ("perfbot.sandbox.models", "from perfbot.engine.judge import compare\n"),
        ("perfbot.app.worker", "from perfbot.sandbox.fakegithub import FakeGitHub\n"),
    ],
)
def test_the_check_sees_an_import_against_the_direction(module: str, source: str) -> None:
    assert violations(source, module) != []


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("perfbot.engine.read.formats.zperf", "from ._common import x\nfrom ..sides import y\n"),
        ("perfbot.app.worker", "from perfbot.github.errors import GitHubError\n"),
        ("perfbot.github.transport", "import httpx\nfrom perfbot.support.metrics import M\n"),
        ("perfbot.cli", "from perfbot.app.server import create_app\n"),
        ("perfbot.cli", "from perfbot.sandbox.fakegithub import FakeGitHub\n"),
        ("perfbot.sandbox.server", "import httpx\nfrom perfbot.errors import PerfbotError\n"),
    ],
)
def test_the_check_lets_an_import_down_the_layers_pass(module: str, source: str) -> None:
    assert violations(source, module) == []


def loaded_after_importing(modules: list[str]) -> set[str]:
    """Every module a fresh interpreter holds after importing ``modules``."""
    probe = "\n".join(
        [
            "import importlib, json, sys",
            f"for name in {modules!r}:",
            "    importlib.import_module(name)",
            "print(json.dumps(sorted(sys.modules)))",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout))
    assert set(modules) <= loaded  # the probe really imported them
    return loaded


def banned_among(loaded: set[str], banned: frozenset[str]) -> set[str]:
    return {name for name in loaded for b in banned if name == b or name.startswith(b + ".")}


def test_importing_the_engine_loads_no_network_database_or_server_library() -> None:
    engine = sorted(m for m in perfbot_modules() if layer_of(m) == "engine")
    assert "perfbot.engine.show.render" in engine  # the listing sees the engine
    assert banned_among(loaded_after_importing(engine), NOT_IN_THE_ENGINE) == set()


# Types and logic read without any I/O: the store's and GitHub's types, triage (which
# turns a delivery into jobs), the PR proof and the comment's composition.
SANS_IO = [
    "perfbot.store.base",
    "perfbot.github.types",
    "perfbot.github.errors",
    "perfbot.app.triage",
    "perfbot.app.pullproof",
    "perfbot.app.comment",
]


@pytest.mark.parametrize("module", SANS_IO)
def test_types_and_triage_load_no_network_database_or_server_library(module: str) -> None:
    assert banned_among(loaded_after_importing([module]), IO_LIBRARIES) == set()


def resolve(reference: str) -> object:
    """``package.module:attribute``, as uvicorn and the console script read it."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


def test_module_paths_written_as_strings_follow_the_layout() -> None:
    """Names no import statement checks: they break silently when a module moves."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert callable(resolve(project["scripts"]["perfbot"]))
    # The factory each process of `perfbot serve` with PERFBOT_PROCESSES > 1 imports.
    assert callable(resolve(processes.APP_FACTORY))
