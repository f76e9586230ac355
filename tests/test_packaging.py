"""What `pip install perfbot` brings: the App itself, and a clear sentence for what it lacks."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from tests.harness import settings_env
from tests.paths import REPO, shared

# uvicorn's fast paths, which it loads only when they are installed: perfbot wants them.
FAST_PATHS = {"httptools", "uvloop"}
# The optional extra `postgres`: only the PostgreSQL store imports it.
POSTGRES_EXTRA = {"psycopg", "psycopg_pool"}
SERVICE_STACK = ("uvicorn", "starlette", "githubkit", "httpx", "prometheus_client")


def _imported_after(code: str) -> set[str]:
    """Top-level modules loaded by a fresh interpreter after running ``code``."""
    listing = "import json, sys\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    probe = f"{code}\n{listing}"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


def _required_closure(requirements: list[str]) -> set[str]:
    """The normalised names of the distributions ``requirements`` install, transitively."""
    names: set[str] = set()
    pending = [Requirement(r) for r in requirements]
    while pending:
        requirement = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = _normalised(requirement.name)
        if name in names:
            continue
        names.add(name)
        for extra in requirement.extras or {""}:
            for line in metadata.requires(requirement.name) or []:
                sub = Requirement(line)
                if sub.marker is None or sub.marker.evaluate({"extra": extra}):
                    pending.append(Requirement(str(sub).split(";")[0]))
    return names


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _third_party_imports() -> set[str]:
    """The top-level modules perfbot's own code imports that are not perfbot or stdlib."""
    found: set[str] = set()
    for module in (REPO / "perfbot").rglob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"perfbot"}


def test_a_plain_install_brings_everything_the_app_imports() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    installed = _required_closure(project["dependencies"])
    imported = _third_party_imports()
    assert {"uvicorn", "starlette", "githubkit"} <= imported  # the scan sees the App
    providers = metadata.packages_distributions()
    needed = {
        _normalised(dist)
        for module in (imported | FAST_PATHS) - POSTGRES_EXTRA
        for dist in providers[module]
    }
    assert needed - installed == set(), "imported by perfbot but only in an extra"
    extra = _required_closure(project["optional-dependencies"]["postgres"])
    assert {_normalised(d) for m in POSTGRES_EXTRA for d in providers[m]} <= extra
    # `perfbot[app]` installs made before the App moved into the base keep what they had,
    # PostgreSQL's driver included: an upgrade must not stop a replica at start-up.
    assert project["optional-dependencies"]["app"] == ["perfbot[postgres]"]


def test_compare_does_not_import_the_service_stack(tmp_path: Path) -> None:
    report = shared("zephyr-zperf/README-loopback-icount_expected_output.txt")
    loaded = _imported_after(
        "from perfbot.cli import main\n"
        f"assert main(['compare', {str(report)!r}, {str(report)!r}]) == 0"
    )
    assert "perfbot" in loaded  # the probe ran the command
    assert loaded & set(SERVICE_STACK) == set()


def _serve_without(module: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``perfbot serve`` in an interpreter where importing ``module`` fails as if absent."""
    code = (
        "import sys\n"
        f"sys.modules[{module!r}] = None  # `import {module}` now raises ModuleNotFoundError\n"
        "from perfbot.cli import main\n"
        "sys.exit(main(['serve', '--port', '0']))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )


def _one_sentence(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr.strip()


def test_postgresql_without_its_extra_names_the_extra(tmp_path: Path) -> None:
    env = {**os.environ, **settings_env("http://127.0.0.1:9", tmp_path / "db")}
    env["PERFBOT_DATABASE_URL"] = "postgresql://perfbot:s3cret-pw@127.0.0.1:1/perfbot"
    refusal = _one_sentence(_serve_without("psycopg", env, tmp_path))
    assert "pip install 'perfbot[postgres]'" in refusal
    assert "s3cret-pw" not in refusal


def test_a_partial_install_names_what_is_missing(tmp_path: Path) -> None:
    env = {**os.environ, **settings_env("http://127.0.0.1:9", tmp_path / "db")}
    refusal = _one_sentence(_serve_without("uvicorn", env, tmp_path))
    assert "'uvicorn'" in refusal
    assert "pip install perfbot" in refusal
