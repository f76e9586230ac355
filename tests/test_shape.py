"""The shape of the code, as docs/development.md promises it: modules of one
job each (none over 500 lines), handlers that read top to bottom (no function over 50
lines), a name used in at most two packages, one place that judges a report, and a
layout table in docs/development.md that lists every module there is."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.paths import REPO

PACKAGE = REPO / "perfbot"
MAX_MODULE_LINES = 500
MAX_HANDLER_FUNCTION_LINES = 50
MAX_HANDLER_MODULE_LINES = 250
MAX_PACKAGES_PER_NAME = 2


def modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


def lines_of(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_over_500_lines() -> None:
    long = {p.relative_to(REPO).as_posix(): lines_of(p) for p in modules()}
    assert {name: n for name, n in long.items() if n > MAX_MODULE_LINES} == {}
    assert len(long) > 50  # the check sees the package


def test_handlers_read_top_to_bottom() -> None:
    handlers = sorted((PACKAGE / "app" / "handlers").glob("*.py"))
    assert len(handlers) >= 5
    too_long = {}
    for path in handlers:
        assert lines_of(path) <= MAX_HANDLER_MODULE_LINES, path.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_HANDLER_FUNCTION_LINES:
                    too_long[f"{path.name}:{node.name}"] = length
    assert too_long == {}


def test_no_module_name_is_used_in_more_than_two_packages() -> None:
    names = Counter(p.name for p in modules() if p.name not in ("__init__.py", "__main__.py"))
    assert {name: n for name, n in names.items() if n > MAX_PACKAGES_PER_NAME} == {}


def uses_of(name: str) -> set[str]:
    """The modules of perfbot that use a function called ``name`` (call it or hand it on)."""
    found = set()
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            used = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
            if isinstance(node, ast.Name | ast.Attribute) and used == name:
                found.add(path.relative_to(PACKAGE).as_posix())
    return found


def test_a_report_is_judged_in_one_place() -> None:
    # Reading the sides, narrowing and lining up platforms happen in the engine's read
    # stage only; the command line, the Actions path and the App all call the one judge.
    assert uses_of("line_up") == {"engine/read/report.py"}
    assert uses_of("read_report") <= {
        "engine/read/report.py",
        "engine/judge/judgement.py",
        "app/reporting.py",
    }
    assert uses_of("judge_report") == {"cli/compare.py", "app/reporting.py", "app/actions.py"}


# --- the layout table of docs/development.md -------------------------------------------------

_ROW = re.compile(r"^\| `(perfbot/[^`]*)` \|")


def layout_rows(page: str) -> list[str]:
    """The module column of the layout table (every row naming a perfbot path)."""
    return [m.group(1) for line in page.splitlines() if (m := _ROW.match(line))]


def module_entries() -> set[str]:
    """Each package as ``perfbot/x/``, each other module as ``perfbot/x/y.py``."""
    entries = set()
    for path in modules():
        relative = path.relative_to(REPO).as_posix()
        entries.add(
            relative.removesuffix("__init__.py") if path.name == "__init__.py" else relative
        )
    return entries


def test_the_layout_table_lists_every_module_once() -> None:
    rows = layout_rows((REPO / "docs" / "development.md").read_text(encoding="utf-8"))
    assert len(rows) == len(set(rows)), "a module listed twice"
    assert set(rows) == module_entries()


@pytest.mark.parametrize(
    ("table", "missing"),
    [
        ("| `perfbot/` | x |\n", "perfbot/engine/"),
        ("| `perfbot/model.py` | x |\n| `perfbot/app/` | y |\n", "perfbot/errors.py"),
    ],
)
def test_the_layout_check_sees_a_module_left_out(table: str, missing: str) -> None:
    assert missing in module_entries() - set(layout_rows(table))


def test_the_store_backends_are_thin_dialects() -> None:
    # The store's logic is written once (store/_core.py and its roles); a backend adds only
    # what is its own: connections, the claim, presence.
    for backend in ("sqlite.py", "postgres.py"):
        assert lines_of(PACKAGE / "store" / backend) <= 400, backend
