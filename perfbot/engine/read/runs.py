"""Runs of one case that were asked to do different things: which files were left out.

The samples of one series must measure the same thing: a ``-P 2`` run is no repeat of a
``-P 1`` run, however alike their file names. When the files of one case disagree in
their settings, the first file read (in path order) sets them; a later file with other
settings has its samples left out. Reading says so once per case and side, as a fact
(``RunsLeftOut``): the files kept, each file left out, and the settings of each, which
``show/wording.py`` turns into a sentence naming only the settings that differ.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from perfbot.model import Settings


@dataclass(frozen=True, slots=True)
class RunsLeftOut:
    """The files of case ``case`` on ``platform`` disagreed in their settings: ``kept``
    were compared (run with ``settings``), each of ``left_out`` was left out (with its
    own settings). Files are named within the platform's folder; every name and value
    is untrusted (the renderer escapes them)."""

    platform: str
    case: str
    kept: tuple[str, ...]
    settings: Settings
    left_out: tuple[tuple[str, Settings], ...]


def differing(kept: Settings, other: Settings) -> tuple[str, ...]:
    """The names of the settings in which ``other`` is not ``kept`` (one states a setting
    the other does not, or both state it with other values), in name order."""
    kept_map, other_map = dict(kept), dict(other)
    names = sorted(kept_map.keys() | other_map.keys())
    return tuple(name for name in names if kept_map.get(name) != other_map.get(name))


@dataclass(slots=True)
class _Case:
    kept: dict[str, None] = field(default_factory=dict)
    settings: Settings = ()
    left_out: dict[str, Settings] = field(default_factory=dict)


@dataclass(slots=True)
class LeftOutRuns:
    """What one side's reading left out, collected sample by sample, said once per case."""

    _cases: dict[tuple[str, str], _Case] = field(default_factory=dict)
    _taken: dict[tuple[str, str], dict[str, None]] = field(default_factory=dict)

    def taken(self, platform: str, case: str, path: str) -> None:
        """A sample of ``path`` joined its series: the file is kept for its case. (Called
        once per sample: the path is named within its platform only when said.)"""
        self._taken.setdefault((platform, case), {}).setdefault(path)

    def left_out(
        self,
        platform: str,
        case: str,
        *,
        kept: tuple[str, Settings],
        file: tuple[str, Settings],
    ) -> None:
        """The sample of ``file`` (its path and settings) was left out: the series it
        belongs to was set by ``kept`` (the path of its first file, and its settings)."""
        entry = self._cases.setdefault((platform, case), _Case())
        if not entry.kept:
            entry.settings = kept[1]
        entry.kept.setdefault(kept[0])
        entry.left_out.setdefault(file[0], file[1])

    def notices(self) -> list[RunsLeftOut]:
        """One fact per case, in the order the cases were first found; a file both kept
        for one metric and left out for another is named as left out only."""
        said = []
        for (platform, case), entry in self._cases.items():
            files = {**entry.kept, **self._taken.get((platform, case), {})}
            kept = tuple(_within_platform(path) for path in files if path not in entry.left_out)
            left_out = tuple((_within_platform(path), s) for path, s in entry.left_out.items())
            said.append(RunsLeftOut(platform, case, kept, entry.settings, left_out))
        return said


@functools.lru_cache(maxsize=4096)
def _within_platform(path: str) -> str:
    """``loopback/tcp_rx_2.json`` → ``tcp_rx_2.json``: the platform is said beside it
    (asked once per sample of a file: cached)."""
    parts = PurePosixPath(path).parts
    return "/".join(parts[1:]) if len(parts) > 1 else path
