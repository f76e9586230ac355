"""A report's two sides, read and narrowed: the first step of judging it.

From an artifact's files (``base/`` and ``head/``) or from two sides already read (the
command line reads two trees from disk): keep the platforms asked for, line up board-only
folders with twister platforms, and say what was renamed and which members were left out.
``perfbot.engine.judge.judgement`` takes it from there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from perfbot.engine.read import platforms
from perfbot.engine.read.platforms import PlatformLinedUp
from perfbot.engine.read.sides import ReportFile, SideReport, read_side, split_sides


@dataclass(frozen=True, slots=True)
class ReadReport:
    """Both sides of a report as they are to be compared.

    ``lined_up``: each platform compared under the other side's name; ``skipped``: the
    files (artifact members) left out, with why. Both are shown with the report.
    """

    base: SideReport
    head: SideReport
    lined_up: tuple[PlatformLinedUp, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()


def read_report(
    files: Iterable[ReportFile],
    *,
    collisions: Iterable[tuple[str, ...]] = (),
    skipped: Iterable[tuple[str, str]] = (),
    wanted: Sequence[str] = (),
) -> ReadReport:
    """Both sides of an artifact's files, narrowed to the platforms ``wanted`` (all when
    empty). ``collisions``: groups of names that unzip to one path, each a failed case of
    its side; ``skipped``: members the artifact reader left out already."""
    sides = split_sides(files, collisions)
    base, head = read_side(sides.files["base"]), read_side(sides.files["head"])
    # Colliding names are failed cases of their side: never one copy shown as the only one.
    base.failures.extend(sides.failures["base"])
    head.failures.extend(sides.failures["head"])
    return narrowed(base, head, wanted, skipped=(*skipped, *sides.left_out))


def narrowed(
    base: SideReport,
    head: SideReport,
    wanted: Sequence[str] = (),
    *,
    skipped: Iterable[tuple[str, str]] = (),
) -> ReadReport:
    """Two sides already read, with only the platforms ``wanted`` and lined up."""
    base, head = platforms.select(base, wanted), platforms.select(head, wanted)
    base, head, lined_up = platforms.line_up(base, head)
    return ReadReport(base, head, tuple(lined_up), tuple(skipped))
