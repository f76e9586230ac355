"""Choosing and lining up platforms: ``--platform``, ``platforms:`` and board-only folders.

Twister names a platform ``board/soc`` (``qemu_x86/atom``), while a lab script names its
folder after the board alone (``base/qemu_x86/``). A name given by a person matches the
full name or the board part, never a prefix: ``qemu_x86`` is not ``qemu_x86_64``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from perfbot.engine.read.sides import SideReport


@dataclass(frozen=True, slots=True)
class PlatformLinedUp:
    """A board-only folder of one side compared as the other side's twister platform (a
    notice of the report, worded by ``show/render.py``; both names are untrusted)."""

    side: Literal["base", "head"]
    platform: str
    compared_as: str

    @property
    def other_side(self) -> Literal["base", "head"]:
        return "head" if self.side == "base" else "base"


def board_of(platform: str) -> str:
    """The board part of a twister platform: ``qemu_x86/atom`` → ``qemu_x86``."""
    return platform.split("/", 1)[0]


def matches(platform: str, wanted: str) -> bool:
    """Whether ``platform`` is the one a person named: its full name or its board."""
    return wanted in (platform, board_of(platform))


def platforms_of(side: SideReport) -> set[str]:
    """Every platform a side names, with a measurement or with a failed case."""
    return side.platforms | {failure.platform for failure in side.failures}


def select(side: SideReport, wanted: Sequence[str]) -> SideReport:
    """``side`` with only the platforms ``wanted`` names (all of them when it is empty)."""
    if not wanted:
        return side

    def kept(platform: str) -> bool:
        return any(matches(platform, name) for name in wanted)

    return dataclasses.replace(
        side,
        series={key: series for key, series in side.series.items() if kept(key[0])},
        failures=[failure for failure in side.failures if kept(failure.platform)],
        left_out=[runs for runs in side.left_out if kept(runs.platform)],
    )


def unmatched(wanted: Iterable[str], sides: Iterable[SideReport]) -> list[str]:
    """The names in ``wanted`` that match no platform of any side."""
    seen = set().union(*(platforms_of(side) for side in sides))
    return [name for name in wanted if not any(matches(p, name) for p in seen)]


def line_up(
    base: SideReport, head: SideReport
) -> tuple[SideReport, SideReport, list[PlatformLinedUp]]:
    """Board-only platforms renamed to the other side's twister platform, when unambiguous.

    ``base/qemu_x86/`` against a twister head that measured ``qemu_x86/atom`` would
    otherwise be two platforms, each "not available". Returns both sides and one notice
    per renaming, base's first, each side's in name order.
    """
    base_names, head_names = platforms_of(base), platforms_of(head)
    base_map = _renames(base_names, head_names)
    head_map = _renames(head_names, base_names)
    notices = [PlatformLinedUp("base", old, new) for old, new in sorted(base_map.items())]
    notices += [PlatformLinedUp("head", old, new) for old, new in sorted(head_map.items())]
    return _renamed(base, base_map), _renamed(head, head_map), notices


def _renames(names: set[str], others: set[str]) -> dict[str, str]:
    renames = {}
    for name in names:
        if "/" in name or name in others:
            continue
        candidates = [other for other in others if "/" in other and board_of(other) == name]
        # Two SoCs of one board (nrf5340dk/nrf5340/cpuapp and …/cpunet) are ambiguous:
        # then nothing is guessed and both stay apart.
        if len(candidates) == 1 and candidates[0] not in names:
            renames[name] = candidates[0]
    return renames


def _renamed(side: SideReport, renames: dict[str, str]) -> SideReport:
    if not renames:
        return side
    return dataclasses.replace(
        side,
        series={
            (renames.get(platform, platform), metric): series
            for (platform, metric), series in side.series.items()
        },
        failures=[
            dataclasses.replace(failure, platform=renames.get(failure.platform, failure.platform))
            for failure in side.failures
        ],
        left_out=[
            dataclasses.replace(runs, platform=renames.get(runs.platform, runs.platform))
            for runs in side.left_out
        ],
    )
