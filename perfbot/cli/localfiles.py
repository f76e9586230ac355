"""Reading one side's report files from disk for ``perfbot compare``, without leaving it.

``perfbot compare`` may run in CI on an untrusted checkout, where any entry can be a
symbolic link to whatever the runner can read (``head/leak.log -> ../../outside/secret``).
A side is therefore read only from inside the directory it was given: a link whose
target is elsewhere is not followed, and neither is a link to a directory (it could loop
or show the same files twice). What is not read is returned with the reason, so that it
is named like any other unreadable file.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from perfbot.engine.read.sides import MAX_FILE_BYTES, ReportFile

# O_NOFOLLOW: the last component must not have become a link since it was checked.
# O_NONBLOCK: a FIFO put in a file's place must not hang the command (it changes nothing
# for a regular file).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
OUTSIDE = "symbolic link pointing outside the directory given (not followed)"
LINKED_DIRECTORY = "symbolic link to a directory (not followed)"
DANGLING = "symbolic link to nothing readable (not followed)"
NOT_REGULAR = "not a regular file"


@dataclass(frozen=True, slots=True)
class LocalSide:
    """The report files under one side's directory, and the entries refused with why."""

    files: list[ReportFile]
    refused: list[tuple[str, str]]


def is_within(path: Path, directory: Path) -> bool:
    """Whether ``path``, every link in it followed, lies in ``directory`` (or is it)."""
    return path.resolve().is_relative_to(directory.resolve())


def read_tree(root: Path) -> LocalSide:
    """The files of a side: ``root`` itself when it is a file, else every file under it."""
    real_root = root.resolve()
    if not real_root.is_dir():
        return _read_into(LocalSide([], []), real_root, root.name)
    side = LocalSide([], [])
    for folder, dirs, names in os.walk(real_root):
        here = Path(folder)
        kept = []
        for name in sorted(dirs):
            path = here / name
            if path.is_symlink():
                inside = _target_inside(path, real_root)
                reason = LINKED_DIRECTORY if inside else OUTSIDE
                side.refused.append((_relative(path, real_root) + "/", reason))
            else:
                kept.append(name)
        dirs[:] = kept  # os.walk descends only into what is left here
        for name in sorted(names):
            path = here / name
            shown = _relative(path, real_root)
            if path.is_symlink():
                inside = _target_inside(path, real_root)
                if inside is None:
                    side.refused.append((shown, DANGLING))
                    continue
                if not inside:
                    side.refused.append((shown, OUTSIDE))
                    continue
                path = path.resolve()
            _read_into(side, path, shown)
    return side


def _target_inside(link: Path, root: Path) -> bool | None:
    """Whether the link's target lies under ``root``; None when it cannot be resolved."""
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):  # missing target, or a loop of links
        return None
    return target.is_relative_to(root)


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _read_into(side: LocalSide, path: Path, shown: str) -> LocalSide:
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        side.refused.append((shown, f"cannot be opened ({exc.strerror or exc})"))
        return side
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            side.refused.append((shown, NOT_REGULAR))
            return side
        # One byte past the cap is enough for the reader to refuse the file by size.
        side.files.append(ReportFile(shown, handle.read(MAX_FILE_BYTES + 1)))
    return side
