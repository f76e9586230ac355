"""The demo comment, byte for byte: any change to the look is a deliberate one.

After an intended change, regenerate with:
    .venv/bin/perfbot compare examples/demo --exit-zero > tests/golden/demo.md
"""

from __future__ import annotations

from perfbot.engine.compare import compare
from perfbot.engine.render import render
from perfbot.engine.sides import ReportFile, read_side
from tests.paths import REPO

DEMO = REPO / "examples" / "demo"


def side_files(side: str) -> list[ReportFile]:
    root = DEMO / side
    return [
        ReportFile(path.relative_to(root).as_posix(), path.read_bytes())
        for path in sorted(root.rglob("*"))
        if path.is_file()
    ]


def test_demo_comment_matches_the_golden_file() -> None:
    body = render(compare(read_side(side_files("base")), read_side(side_files("head"))))
    expected = (REPO / "tests" / "golden" / "demo.md").read_text(encoding="utf-8")
    assert body == expected
