"""The documentation holds together: README.md and docs/**/*.md.

* Every relative link names a file of the checkout, and every ``#anchor`` a heading of its
  target, slugged as GitHub slugs it (mkdocs.yml makes the site slug the same way).
* No page has two headings with one slug (an anchor means one place on GitHub and on the
  site alike).
* Every shell block (```` ```sh ````, ``bash``, ``console``, ``shell``) says on the line
  before it either ``<!-- example -->`` (shown to be adapted, run by no test) or
  ``<!-- run-by: PATH … -->``: each of its commands is written, verbatim, in one of those
  files, which runs it (``.ci/run`` runs ``make test``; this file runs ``make demo``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.paths import REPO

SHELL_LANGUAGES = {"sh", "bash", "console", "shell"}
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_MARKER = re.compile(r"^\s*<!--\s*(example|run-by:\s*(.+?))\s*-->\s*$")
_EXTERNAL = ("http://", "https://", "mailto:")


def documentation() -> list[Path]:
    """README.md and every page of the site."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, its first line's number, its text, and the
    line just before its fence."""

    language: str
    line: int
    text: str
    before: str


def split(text: str) -> tuple[list[tuple[int, str]], list[Block]]:
    """The lines outside fenced code (numbered from 1), and the fenced blocks."""
    prose: list[tuple[int, str]] = []
    blocks: list[Block] = []
    lines = text.splitlines()
    fence: tuple[str, str, int, list[str]] | None = None
    for number, line in enumerate(lines, start=1):
        if fence is None:
            match = _FENCE.match(line)
            if match:
                previous = next((p for p in reversed(lines[: number - 1]) if p.strip()), "")
                fence = (match.group(2), match.group(3).lower(), number, [previous])
            else:
                prose.append((number, line))
        elif line.strip().startswith(fence[0]) and not line.strip().strip(fence[0][0]):
            _, language, start, body = fence
            blocks.append(Block(language, start, "\n".join(body[1:]), body[0]))
            fence = None
        else:
            fence[3].append(line)
    return prose, blocks


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it (and pymdownx.slugs with ``case: lower``):
    its text without markup, lower-case, punctuation dropped, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]*>", "", text).replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> list[str]:
    prose, _ = split(path.read_text(encoding="utf-8"))
    return [slug(m.group(2)) for _, line in prose if (m := _HEADING.match(line))]


def links(path: Path) -> list[tuple[int, str]]:
    """Each link and image target in a page's prose, with its line."""
    prose, _ = split(path.read_text(encoding="utf-8"))
    found = []
    for number, line in prose:
        for match in _LINK.finditer(_CODE_SPAN.sub("", line)):
            found.append((number, match.group(1)))
    return found


def broken_links(path: Path, root: Path = REPO) -> list[str]:
    """What is wrong with a page's internal links, one sentence each."""
    problems = []
    for number, target in links(path):
        if target.startswith(_EXTERNAL):
            continue
        where = f"{path.relative_to(root)}:{number}: {target}"
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if root.resolve() not in linked.parents and linked != root.resolve():
            problems.append(f"{where} leaves the checkout")
        elif not linked.exists():
            problems.append(f"{where} names a file that does not exist")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            problems.append(f"{where} names no heading of {linked.relative_to(root.resolve())}")
        elif anchor and linked.suffix != ".md":
            problems.append(f"{where} has an anchor into a file that is not Markdown")
    return problems


def twice_slugged(path: Path) -> list[str]:
    seen = anchors(path)
    return sorted({a for a in seen if seen.count(a) > 1})


def commands(block: Block) -> list[str]:
    """A shell block's commands: continuation lines joined, comments and prompts dropped."""
    found = []
    for raw in block.text.replace("\\\n", " ").splitlines():
        line = raw.strip()
        if block.language == "console":
            if not line.startswith("$ "):
                continue  # output
            line = line.removeprefix("$ ")
        words = shlex.split(line, comments=True)
        if words:
            found.append(shlex.join(words))
    return found


def unmarked_commands(path: Path, root: Path = REPO) -> list[str]:
    """Shell blocks with neither marker, and run-by blocks whose commands no named file
    holds."""
    problems = []
    for block in split(path.read_text(encoding="utf-8"))[1]:
        if block.language not in SHELL_LANGUAGES:
            continue
        where = f"{path.relative_to(root)}:{block.line}"
        marker = _MARKER.match(block.before)
        if marker is None:
            problems.append(f"{where}: a shell block without <!-- example --> or <!-- run-by -->")
            continue
        if marker.group(1) == "example":
            continue
        runners = [root / name for name in marker.group(2).split()]
        missing = [str(r.relative_to(root)) for r in runners if not r.is_file()]
        if missing:
            problems.append(f"{where}: run-by names no such file: {', '.join(missing)}")
            continue
        texts = [r.read_text(encoding="utf-8") for r in runners]
        for command in commands(block):
            if not any(command in text for text in texts):
                problems.append(f"{where}: `{command}` is in none of {marker.group(2)}")
    return problems


# --- the checks on the real documentation --------------------------------------------------


@pytest.mark.parametrize("path", documentation(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_internal_link_and_anchor_resolves(path: Path) -> None:
    assert broken_links(path) == []


@pytest.mark.parametrize("path", documentation(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_page_has_two_headings_of_one_slug(path: Path) -> None:
    assert twice_slugged(path) == []


@pytest.mark.parametrize("path", documentation(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_shell_command_is_run_by_a_test_or_marked_as_an_example(path: Path) -> None:
    assert unmarked_commands(path) == []


def test_the_readme_commands_are_run() -> None:
    """The README's quick start is run, not just shown: its blocks are all run-by."""
    blocks = [
        b
        for b in split((REPO / "README.md").read_text(encoding="utf-8"))[1]
        if b.language in SHELL_LANGUAGES
    ]
    run = [c for b in blocks if "run-by:" in b.before for c in commands(b)]
    assert {"make demo", "make test"} <= set(run)


def test_every_page_is_in_the_site_navigation() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (REPO / "docs").rglob("*.md"):
        assert f": {page.relative_to(REPO / 'docs').as_posix()}\n" in nav, page


# `make demo`, as the README shows it (run-by: tests/test_docs.py): the recipe `make` would
# run, with the checkout's .venv replaced by the interpreter running the tests (the setup
# step it depends on is what installed that interpreter's packages).
README_DEMO = "make demo"


def test_make_demo_runs() -> None:
    recipe = subprocess.run(
        [*shlex.split(README_DEMO), "--dry-run", "--silent", "--old-file=setup"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert ".venv/bin/perfbot try" in recipe  # the README says make demo runs perfbot try
    # The page stays up until Ctrl-C; --exit ends the same scene once it is played.
    recipe = recipe.replace("perfbot try", "perfbot try --exit")
    bin_dir = str(Path(sys.executable).parent) + "/"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        recipe.replace(".venv/bin/", bin_dir),
        shell=True,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "perfbot try: the scene took" in result.stdout + result.stderr, result.stdout


# --- each check fails on a broken page ---------------------------------------------------------


def page(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_slugs_are_githubs() -> None:
    assert slug("Running the App (`perfbot serve`)") == "running-the-app-perfbot-serve"
    assert slug("Configuration (`.github/perfbot.yml`)") == "configuration-githubperfbotyml"
    assert slug("Charts (`--plot FILE.svg`)") == "charts---plot-filesvg"
    assert slug("**Measure.** now") == "measure-now"


def test_a_link_to_a_missing_file_is_found(tmp_path: Path) -> None:
    index = page(tmp_path, "docs/index.md", "# Home\n\nSee [the guide](guide.md).\n")
    assert broken_links(index, tmp_path) == [
        "docs/index.md:3: guide.md names a file that does not exist"
    ]
    page(tmp_path, "docs/guide.md", "# Guide\n")
    assert broken_links(index, tmp_path) == []


def test_a_link_to_a_missing_anchor_is_found(tmp_path: Path) -> None:
    page(tmp_path, "docs/guide.md", "# Guide\n\n## Start it (`perfbot serve`)\n")
    good = page(tmp_path, "docs/a.md", "[x](guide.md#start-it-perfbot-serve)\n")
    bad = page(tmp_path, "docs/b.md", "[x](guide.md#start-it)\n[y](#nowhere)\n# Here\n")
    assert broken_links(good, tmp_path) == []
    assert broken_links(bad, tmp_path) == [
        "docs/b.md:1: guide.md#start-it names no heading of docs/guide.md",
        "docs/b.md:2: #nowhere names no heading of docs/b.md",
    ]


def test_links_in_code_are_not_links_and_links_out_of_the_checkout_are_refused(
    tmp_path: Path,
) -> None:
    text = "`[x](nope.md)`\n\n```md\n[y](nope.md)\n```\n\n[z](../../outside.md)\n"
    assert broken_links(page(tmp_path, "docs/a.md", text), tmp_path) == [
        "docs/a.md:7: ../../outside.md leaves the checkout"
    ]


def test_a_heading_inside_a_fence_is_no_anchor(tmp_path: Path) -> None:
    path = page(tmp_path, "a.md", "```markdown\n## Fenced\n```\n[x](#fenced)\n")
    assert broken_links(path, tmp_path) == ["a.md:4: #fenced names no heading of a.md"]


def test_two_headings_of_one_slug_are_found(tmp_path: Path) -> None:
    path = page(tmp_path, "a.md", "# Docker\n\n## Options\n\n## Docker\n")
    assert twice_slugged(path) == ["docker"]


def test_an_unmarked_shell_block_is_found(tmp_path: Path) -> None:
    text = "# A\n\n```sh\nperfbot serve\n```\n\n<!-- example -->\n```sh\nperfbot serve\n```\n"
    assert unmarked_commands(page(tmp_path, "a.md", text), tmp_path) == [
        "a.md:3: a shell block without <!-- example --> or <!-- run-by -->"
    ]


def test_a_run_by_block_must_be_in_the_file_it_names(tmp_path: Path) -> None:
    page(tmp_path, "ci", "make test\n")
    text = "<!-- run-by: ci -->\n```sh\nmake test   # all of it\nmake demo\n```\n"
    assert unmarked_commands(page(tmp_path, "a.md", text), tmp_path) == [
        "a.md:2: `make demo` is in none of ci"
    ]
    gone = "<!-- run-by: nowhere -->\n```console\n$ make test\noutput\n```\n"
    assert unmarked_commands(page(tmp_path, "b.md", gone), tmp_path) == [
        "b.md:2: run-by names no such file: nowhere"
    ]
