"""The documentation's commands, settings and configuration keys match what perfbot accepts:
the shell blocks of README.md and docs/**/*.md, the operator-settings table
(docs/operators/settings.md) and the configuration example (docs/maintainers/configuration.md)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from perfbot.app.configfile import _READERS
from perfbot.cli import _parser
from tests.paths import shared

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# Every page, README first: the commands shown anywhere must parse.
PAGES = "\n".join(
    path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
)
SETTINGS = (DOCS / "operators" / "settings.md").read_text(encoding="utf-8")
CONFIGURATION = (DOCS / "maintainers" / "configuration.md").read_text(encoding="utf-8")
# Variables only perfbot itself sets for the processes it starts.
INTERNAL_VARIABLES = {"PERFBOT_LOG_LEVEL"}
# perfbot try's own (where the stand-in GitHub finds its payloads and the page its CSS and
# mermaid), not the App's: docs/try.md documents them.
TRY_VARIABLES = {"PERFBOT_FIXTURES", "PERFBOT_RENDER_ASSETS"}


def code_blocks(language: str, text: str = PAGES) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def perfbot_commands() -> list[list[str]]:
    """Every ``perfbot …`` line of the pages' shell blocks, continuation lines joined."""
    commands = []
    for block in code_blocks("sh"):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line.split(" #", 1)[0], comments=True)
            while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
                words = words[1:]  # VAR=value prefixes
            if words and words[0] in ("perfbot", ".venv/bin/perfbot"):
                commands.append(words[1:])
    return commands


def test_the_documentation_shows_perfbot_commands() -> None:
    used = {words[0] for words in perfbot_commands()}
    assert {"compare", "serve", "setup", "comment"} <= used


@pytest.mark.parametrize("words", perfbot_commands(), ids=" ".join)
def test_every_perfbot_command_parses(words: list[str]) -> None:
    try:
        _parser().parse_args(words)
    except SystemExit as exc:
        pytest.fail(f"`perfbot {' '.join(words)}` is refused by the parser ({exc.code})")


def test_every_operator_setting_is_documented() -> None:
    read = set()
    for module in (ROOT / "perfbot").rglob("*.py"):
        read |= set(re.findall(r'"(PERFBOT_[A-Z_]+)"', module.read_text(encoding="utf-8")))
    # The rows of the operator-settings table (a row may name two variables).
    rows = re.findall(r"^\| (`PERFBOT_[^|]*)\|", SETTINGS, flags=re.MULTILINE)
    documented = {name for row in rows for name in re.findall(r"`(PERFBOT_[A-Z_]+)`", row)}
    assert read - INTERNAL_VARIABLES - TRY_VARIABLES - documented == set()
    try_page = (ROOT / "docs" / "try.md").read_text(encoding="utf-8")
    assert {name for name in TRY_VARIABLES if name not in try_page} == set()
    assert documented - read == set(), "the docs document a setting perfbot never reads"


def test_every_configuration_key_is_documented() -> None:
    (example,) = [
        block for block in code_blocks("yaml", CONFIGURATION) if "fail_on_regression" in block
    ]
    keys = set(re.findall(r"^([a-z_]+):", example, flags=re.MULTILINE))
    assert set(_READERS) - {"exclude"} == keys
    assert "say `exclude:" in CONFIGURATION


def test_the_documented_compare_example_runs(tmp_path: Path) -> None:
    """The `perfbot compare` example of docs/cli/compare.md, with a head file made from the base."""
    base = shared("zephyr-zperf/README-loopback-icount_expected_output.txt")
    head = tmp_path / "my-head-run.log"
    head.write_text(base.read_text(encoding="utf-8"), encoding="utf-8")
    document = tmp_path / "comparison.json"
    result = subprocess.run(
        [sys.executable, "-m", "perfbot", "compare", str(base), str(head), "--json", str(document)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert document.read_text(encoding="utf-8").startswith("{")
