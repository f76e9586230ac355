"""mkdocs hooks (mkdocs.yml, ``hooks:``): the site carries the repository files its pages link to.

The pages link to files of the checkout outside docs/ (a workflow template, a JSON schema,
an example chart) with relative links, which work on GitHub. On the site those files are
copied under ``repo/`` (a Markdown file becomes a page of its own, outside the navigation)
and each such link is pointed at the copy, so that no link of the site is broken and
``mkdocs build --strict`` still refuses every link to a file that does not exist.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files, InclusionLevel

PREFIX = "repo"
# An inline link or image whose target is relative (not a URL, not only an anchor).
_LINK = re.compile(r"(!?\[(?:[^\]\\]|\\.)*\]\()([^)\s#:]+)(#[^)\s]*)?(\))")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def _outside_targets(page: Path, docs: Path, root: Path) -> list[Path]:
    """The files of the checkout outside docs/ that a page's prose links to."""
    targets = []
    fence = ""
    for line in page.read_text(encoding="utf-8").splitlines():
        match = _FENCE.match(line)
        if match and (not fence or line.strip().startswith(fence)):
            fence = "" if fence else match.group(1)
            continue
        if fence:
            continue
        for link in _LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            target = (page.parent / link.group(2)).resolve()
            if root in target.parents and docs not in target.parents and target.is_file():
                targets.append(target)
    return targets


def on_files(files: Files, config: Any) -> Files:
    docs = Path(config.docs_dir).resolve()
    root = docs.parent
    # The files linked to, and what the Markdown ones among them link to in turn.
    wanted: set[Path] = set()
    pages = list(docs.rglob("*.md"))
    while pages:
        for target in _outside_targets(pages.pop(), docs, root):
            if target not in wanted:
                wanted.add(target)
                if target.suffix == ".md":
                    pages.append(target)
    for target in sorted(wanted):
        uri = f"{PREFIX}/{target.relative_to(root).as_posix()}"
        files.append(
            File.generated(
                config, uri, abs_src_path=str(target), inclusion=InclusionLevel.NOT_IN_NAV
            )
        )
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    docs = Path(config.docs_dir).resolve()
    root = docs.parent
    uri = page.file.src_uri
    # Where the page lives in the checkout: a copied file's links are relative to its original.
    original = root / uri.removeprefix(f"{PREFIX}/") if uri.startswith(f"{PREFIX}/") else docs / uri
    here = posixpath.dirname(uri)

    def point_at_site(match: re.Match[str]) -> str:
        target = (original.parent / match.group(2)).resolve()
        if docs in target.parents:
            site = target.relative_to(docs).as_posix()
        elif root in target.parents:
            site = f"{PREFIX}/{target.relative_to(root).as_posix()}"
        else:
            return match.group(0)
        relative = posixpath.relpath(site, here or ".")
        return f"{match.group(1)}{relative}{match.group(3) or ''}{match.group(4)}"

    lines, fence = [], ""
    for line in markdown.splitlines(keepends=True):
        match = _FENCE.match(line)
        if match and (not fence or line.strip().startswith(fence)):
            fence = "" if fence else match.group(1)
        lines.append(line if fence or match else _LINK.sub(point_at_site, line))
    return "".join(lines)
