"""Reading one side (base or head) of a measurement run: files → series of samples."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from perfbot.engine.read import formats, sidecars
from perfbot.engine.read.collector import fewer_collections
from perfbot.engine.read.runs import LeftOutRuns, RunsLeftOut
from perfbot.errors import ReportError, UnknownFormat
from perfbot.model import (
    DEFAULT_PLATFORM,
    Better,
    FailedCase,
    Measurement,
    ParseContext,
    Parsed,
    Scale,
    Settings,
)

log = logging.getLogger("perfbot.report")  # the name it had before the engine package

# A report file larger than this is refused before it is decoded: the biggest real
# reports (twister.json of a full CI run) are tens of megabytes.
MAX_FILE_BYTES = 64 * 1024 * 1024
_RUN_INDEX = re.compile(r"_\d{1,4}$")
SIDES = ("base", "head")


@dataclass(frozen=True, slots=True)
class ReportFile:
    """A report file's path relative to its side's root, and its bytes."""

    path: str
    data: bytes


@dataclass(slots=True)
class Series:
    """All samples of one metric on one platform, in the order the files were read.

    ``settings`` is what the runs were asked to do (every sample's is the same);
    ``deterministic`` is the prior of the format that measured it (see ``Format``).
    """

    unit: str
    better: Better
    samples: list[float] = field(default_factory=list)
    scale: Scale = Scale.RATIO
    settings: Settings = ()
    deterministic: bool = False


@dataclass(slots=True)
class SideReport:
    """What one side of a run measured, and what could not be read."""

    series: dict[tuple[str, str], Series] = field(default_factory=dict)
    failures: list[FailedCase] = field(default_factory=list)
    files_read: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    formats_seen: dict[str, int] = field(default_factory=dict)
    # Cases whose files disagreed in their settings: the files left out, once per case.
    left_out: list[RunsLeftOut] = field(default_factory=list)

    @property
    def platforms(self) -> set[str]:
        return {platform for platform, _ in self.series}

    def refuse(self, path: str, reason: str) -> None:
        """A file that could not be read: listed with its reason, and a failed case."""
        self.unreadable.append((path, reason))
        self.failures.append(FailedCase(platform_of(path), path, reason))

    def add(self, measurement: Measurement, *, deterministic: bool = False) -> bool:
        """Whether the sample joined its series. A sample of other settings than the
        series' is left out (a -P 4 run is no repeat of a -P 1 run, however alike their
        file names): ``read_side`` says which files, once per case (``left_out``). One of
        another unit is left out as a failed case."""
        return self._join((measurement.platform, measurement.metric), measurement, deterministic)

    def _join(self, key: tuple[str, str], measurement: Measurement, deterministic: bool) -> bool:
        """``add``, with the series' key made once by the caller that needs it too."""
        series = self.series.get(key)
        if series is None:
            self.series[key] = Series(
                measurement.unit,
                measurement.better,
                [measurement.value],
                measurement.scale,
                measurement.settings,
                deterministic,
            )
            return True
        if series.unit != measurement.unit:
            self.failures.append(
                FailedCase(
                    measurement.platform,
                    measurement.metric,
                    f"unit changed between files ({series.unit or 'none'} then "
                    f"{measurement.unit or 'none'}); the later sample was left out",
                )
            )
            return False
        if series.settings != measurement.settings:
            return False
        series.samples.append(measurement.value)
        # A format that measures once non-deterministically makes the series so.
        series.deterministic = series.deterministic and deterministic
        return True


def platform_of(path: str) -> str:
    """The platform a file's place names: its first directory, else ``default``."""
    parts = PurePosixPath(path).parts
    return parts[0] if len(parts) > 1 else DEFAULT_PLATFORM


def case_of(path: str) -> str:
    """The case a file measures: its stem without a run index (``tcp_rx_2.json`` → ``tcp_rx``)."""
    name = PurePosixPath(path).name
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return _RUN_INDEX.sub("", stem) or stem


def decode(data: bytes) -> str:
    """Report bytes as text; raises ValueError with a user-facing reason."""
    if b"\x00" in data[:8192]:
        raise ValueError("binary file, not a text report")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (invalid byte at offset {exc.start})") from None


@fewer_collections
def read_side(
    files: Iterable[ReportFile], registry: tuple[formats.Format, ...] = formats.REGISTRY
) -> SideReport:
    """Parse every file of one side; a file that cannot be read becomes a failed case.

    Sidecars (``<case>.exit``, ``<case>.stderr``) are not reports: a non-zero exit status
    marks its run failed, with the first line of its stderr as the reason.
    """
    side = SideReport()
    ordered = [f for f in sorted(files, key=lambda f: f.path) if not _hidden(f.path)]
    runs = sidecars.collect((f.path, f.data) for f in ordered if sidecars.is_sidecar(f.path))
    kept = _Kept()
    for file in ordered:
        if sidecars.is_sidecar(file.path):
            continue
        failed = runs.failure_of(file.path)
        if failed is not None:
            # Whatever the report says, the tool said it failed: no sample of this run.
            side.failures.append(
                FailedCase(platform_of(file.path), case_of(file.path), failed.reason)
            )
            continue
        _read_file(side, file, registry, kept)
    for failed in runs.unclaimed():
        side.failures.append(
            FailedCase(platform_of(failed.stem), case_of(failed.stem), failed.reason)
        )
    side.left_out = kept.runs.notices()
    return side


@dataclass(slots=True)
class _Kept:
    """While a side is read: the file that started each series, and the runs left out."""

    first_file: dict[tuple[str, str], str] = field(default_factory=dict)
    runs: LeftOutRuns = field(default_factory=LeftOutRuns)


def _hidden(path: str) -> bool:
    return PurePosixPath(path).name.startswith(".")


def _read_file(
    side: SideReport, file: ReportFile, registry: tuple[formats.Format, ...], kept: _Kept
) -> None:
    platform, case = platform_of(file.path), case_of(file.path)
    try:
        parsed, fmt = _parse(file, ParseContext(file.path, platform, case), registry)
    except ReportError as exc:
        side.refuse(file.path, exc.reason)
        return
    side.files_read += 1
    side.formats_seen[fmt.name] = side.formats_seen.get(fmt.name, 0) + 1
    if not parsed.measurements and not parsed.failures:
        # A report that measured nothing (a twister run with no recording) must be said,
        # or a side would look fine while it compared nothing.
        side.failures.append(
            FailedCase(platform, file.path, f"this {fmt.name} report holds no measurement")
        )
        return
    # The platforms whose series took a sample of this file: the file is kept for its case
    # once per platform, not once per sample (a zperf log holds thousands).
    taken: set[str] = set()
    for measurement in parsed.measurements:
        key = (measurement.platform, measurement.metric)
        first = kept.first_file.setdefault(key, file.path)
        if side._join(key, measurement, fmt.deterministic):
            if measurement.platform not in taken:
                taken.add(measurement.platform)
                kept.runs.taken(measurement.platform, case, file.path)
            continue
        series = side.series[key]
        if series.unit == measurement.unit:  # not the unit: then the run's settings
            kept.runs.left_out(
                measurement.platform,
                case,
                kept=(first, series.settings),
                file=(file.path, measurement.settings),
            )
    side.failures.extend(parsed.failures)


def _parse(
    file: ReportFile, context: ParseContext, registry: tuple[formats.Format, ...]
) -> tuple[Parsed, formats.Format]:
    if len(file.data) > MAX_FILE_BYTES:
        raise ReportError(file.path, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    if not file.data.strip():
        raise ReportError(file.path, "empty file")
    try:
        text = decode(file.data)
    except ValueError as exc:
        raise ReportError(file.path, str(exc)) from None
    fmt = formats.detect(text, file.path, registry)
    if fmt is None:
        raise UnknownFormat(file.path)
    try:
        return fmt.parse(text, context), fmt
    except ReportError:
        raise
    except Exception:
        # A parser bug must cost one file, not the whole report (or the service).
        log.exception("parser %s crashed on %s", fmt.name, file.path)
        raise ReportError(
            file.path, f"perfbot could not read this {fmt.name} file (internal error)"
        ) from None


@dataclass(slots=True)
class Sides:
    """An artifact's files per side (paths relative to it), what is unusable on each side,
    and the files in neither side with why (they are said, never dropped in silence)."""

    files: dict[str, list[ReportFile]] = field(default_factory=lambda: {side: [] for side in SIDES})
    failures: dict[str, list[FailedCase]] = field(
        default_factory=lambda: {side: [] for side in SIDES}
    )
    left_out: list[tuple[str, str]] = field(default_factory=list)


def split_sides(files: Iterable[ReportFile], collisions: Iterable[tuple[str, ...]] = ()) -> Sides:
    """Files of a ``base/`` + ``head/`` layout, per side, with paths relative to the side.

    ``collisions`` are groups of member names that are one path up to case or Unicode
    form (see ``perfbot.artifacts``): none was read, and each group becomes a failed
    case of its side, so the comment never shows one copy as if it were the only one.
    """
    sides = Sides()
    for file in files:
        top, _, rest = file.path.partition("/")
        if top in SIDES and rest:
            sides.files[top].append(ReportFile(rest, file.data))
        elif top.casefold() in SIDES and rest:
            # Names are case-sensitive: Base/ is not base/, yet it must not vanish.
            sides.left_out.append((file.path, f"{top}/ is not {top.casefold()}/"))
        else:
            sides.left_out.append((file.path, "not under base/ or head/"))
    for names in collisions:
        top, _, rest = names[0].partition("/")
        reason = (
            f"ambiguous: {', '.join(names)} are one path to unzip (the same name twice, "
            "or up to case or Unicode form), so none of them was read"
        )
        side = top.casefold()
        if side not in SIDES:
            sides.left_out.append((names[0], reason))
            continue
        platform = rest.split("/", 1)[0] if "/" in rest else DEFAULT_PLATFORM
        sides.failures[side].append(FailedCase(platform, rest.rstrip("/") or f"{side}/", reason))
    return sides
