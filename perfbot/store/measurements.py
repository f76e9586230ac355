"""The measurement store's vocabulary: what the App records of every report side, and
what the noise model reads back (the samples of one series, grouped by commit).

Shared by both backends: the canonical text of a settings fingerprint and of samples,
and the grouping of the rows a query returned. Importing it loads no database driver.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, cast

import orjson

from perfbot.model import Better, Scale, Settings

if TYPE_CHECKING:
    from perfbot.store.base import Store

# 'push': a run on the default branch measuring one commit (no base, no PR).
MeasuredSide = Literal["base", "head", "push"]
MEASURED_SIDES: Final = ("base", "head", "push")


@dataclass(frozen=True, slots=True)
class MeasurementRecord:
    """One series of one side of one run: every sample of a metric on a platform.

    ``sha`` is the commit the side measured (head: the run's head; base: the PR's base
    commit). ``from_fork``: the run measured a PR from another repository, whose author
    controls every byte of the artifact, the base side's numbers included.
    ``runner_labels`` is None when the payload did not say (not the same as no labels).
    """

    repo_id: int
    repo_full_name: str
    installation_id: int | None
    platform: str
    metric: str
    unit: str
    better: Better
    scale: Scale
    side: MeasuredSide
    sha: str
    run_id: int
    run_attempt: int
    workflow_id: int | None
    workflow_name: str
    event: str
    branch: str
    pr_number: int | None
    samples: tuple[float, ...]
    settings: Settings
    recorded_at: float
    from_fork: bool = False
    runner_name: str | None = None
    runner_labels: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class SeriesKey:
    """What the noise of a metric is learned for (within one repository)."""

    platform: str
    metric: str
    settings: Settings = ()


@dataclass(frozen=True, slots=True)
class CommitSamples:
    """The measurements of one series at one commit: pure noise, when there are several.

    ``runs``: one sample list per stored row (a run's side), newest first; each list in
    the order the run produced its samples. ``newest_recorded_at``: the newest row's time.
    """

    sha: str
    runs: tuple[tuple[float, ...], ...]
    newest_recorded_at: float


@dataclass(frozen=True, slots=True)
class RunSeries:
    """One series as one attempt of a run recorded it (``Store.run_measurements``)."""

    side: MeasuredSide
    platform: str
    metric: str
    settings: Settings
    samples: tuple[float, ...]
    unit: str = ""
    better: Better = Better.HIGHER
    scale: Scale = Scale.RATIO


@dataclass(frozen=True, slots=True)
class PullRun:
    """One attempt of a run that measured a PR's head (``Store.pull_runs``): the commit it
    measured, and when its rows were recorded."""

    sha: str
    run_id: int
    run_attempt: int
    recorded_at: float


# The most run attempts of one PR a comment reads back: its earlier pushes, re-runs included.
MAX_PULL_RUNS: Final = 50
# The sides a branch's trend is made of: its own pushed commits, and the base commits PRs
# against it measured (never a fork's: ``from_fork`` rows are left out).
TREND_SIDES: Final = ("push", "base")


# The history a report may ask for at most, per series: more would make one report's
# query unbounded, and noise older than a few dozen commits says little about today's.
MAX_HISTORY_COMMITS: Final = 100
MAX_HISTORY_ROWS: Final = 1000


def storable(text: str) -> str:
    """``text`` without NUL characters, in names that come from an artifact: PostgreSQL's
    text cannot hold them, and SQLite's JSON functions stop at them. Both backends store
    and look up the same replaced text."""
    return text.replace("\x00", "\N{REPLACEMENT CHARACTER}")


def settings_text(settings: Settings) -> str:
    """The canonical JSON text of a fingerprint: sorted ``[name, value]`` pairs, compact.

    Equal fingerprints give equal text, so the store can match them by equality: the
    text is ``json.dumps(pairs, separators=(",", ":"), ensure_ascii=False)``'s, for ever.
    """
    return strings_text(sorted([str(name), str(value)] for name, value in settings))


def strings_text(value: list[list[str]]) -> str:
    """Lists of strings as compact JSON, non-ASCII as it is: the text of
    ``json.dumps(value, separators=(",", ":"), ensure_ascii=False)``, in a quarter of its
    time. orjson escapes each code point as json does (every one of them compared); a lone
    surrogate, which it refuses, goes to json."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def settings_from_text(text: str) -> Settings:
    return tuple((str(name), str(value)) for name, value in _loads(text))


def samples_text(samples: Sequence[float]) -> str:
    """The samples as a JSON array of floats, in their order (each the shortest text that
    reads back to it exactly). orjson writes a float as json would, but for the form of an
    exponent (``1e-7``, not ``1e-07``: read back the same); a value it would write as
    ``null`` (NaN, an infinity) sends the array to json, as it was written before."""
    values = [float(value) for value in samples]
    text = orjson.dumps(values)
    if b"null" in text:
        return json.dumps(values, separators=(",", ":"))
    return text.decode()


def samples_from_text(text: str) -> tuple[float, ...]:
    """The samples of a stored text. orjson reads what ``samples_text`` writes (finite
    floats) to the same values in a tenth of the time; what it refuses (``NaN``,
    ``Infinity``, a number beyond a float's range: text Python's ``json`` writes or reads)
    is read as ever."""
    return tuple(map(float, _loads(text)))


def _loads(text: str) -> Any:
    """A stored JSON text read by orjson, or by json what orjson refuses (NaN, Infinity, a
    number beyond a float's range, an escaped lone surrogate: json writes and reads them)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def labels_text(labels: tuple[str, ...] | None) -> str | None:
    return None if labels is None else json.dumps(list(labels), ensure_ascii=False)


# The columns a RunSeries is read from, in run_series' order.
RUN_SERIES_COLUMNS: Final = "side, platform, metric, settings, samples, unit, better, scale"


def run_series(row: Sequence[str]) -> RunSeries:
    """A ``RunSeries`` from its stored columns (``RUN_SERIES_COLUMNS``)."""
    side, platform, metric, settings, samples, unit, better, scale = row
    if side not in MEASURED_SIDES:
        raise ValueError(f"a stored measurement has no side {side!r}")
    return RunSeries(
        cast(MeasuredSide, side),
        platform,
        metric,
        settings_from_text(settings),
        samples_from_text(samples),
        unit,
        Better(better),
        Scale(scale),
    )


def check_bounds(max_commits: int, max_rows: int) -> None:
    """Refuse bounds a query cannot honour (a programming error, said plainly)."""
    if not 1 <= max_commits <= MAX_HISTORY_COMMITS:
        raise ValueError(f"max_commits must be from 1 to {MAX_HISTORY_COMMITS}, not {max_commits}")
    if not 1 <= max_rows <= MAX_HISTORY_ROWS:
        raise ValueError(f"max_rows must be from 1 to {MAX_HISTORY_ROWS}, not {max_rows}")


def grouped_history(
    rows: Iterable[Sequence[Any]], keys: int, max_commits: int
) -> list[list[CommitSamples]]:
    """A history query's (ordinal, sha, samples text, recorded_at) rows, in the order of
    their key's ordinal (from 1), each key's newest first: for each of ``keys`` keys, at
    most ``max_commits`` groups, the commit measured most recently first.

    One pass over the rows, with no tuple of its own for each: a report reads hundreds of
    rows for its noise, and grouping them cost as much as the query."""
    per_key: list[dict[str, list[tuple[float, ...]]]] = [{} for _ in range(keys)]
    newest: list[dict[str, float]] = [{} for _ in range(keys)]
    current: Any = None
    groups: dict[str, list[tuple[float, ...]]] = {}
    times: dict[str, float] = {}
    for ordinal, sha, samples, recorded_at in rows:
        if ordinal != current:
            current = ordinal
            groups, times = per_key[int(ordinal) - 1], newest[int(ordinal) - 1]
        runs = groups.get(sha)
        if runs is None:
            if len(groups) == max_commits:
                continue  # an older commit beyond the bound; its rows are all older still
            runs = groups[sha] = []
            times[sha] = float(recorded_at)
        runs.append(samples_from_text(samples))
    return [
        [CommitSamples(sha, tuple(runs), at[sha]) for sha, runs in groups.items()]
        for groups, at in zip(per_key, newest, strict=True)
    ]


async def commit_samples(
    store: Store,
    repo_id: int,
    platform: str,
    metric: str,
    settings: Settings,
    *,
    exclude_run_id: int | None,
    max_commits: int,
    max_rows: int,
    include_forks: bool = False,
) -> list[CommitSamples]:
    """``Store.measurement_history`` of one series."""
    key = SeriesKey(platform, metric, settings)
    history = await store.measurement_history(
        repo_id,
        [key],
        exclude_run_id=exclude_run_id,
        max_commits=max_commits,
        max_rows=max_rows,
        include_forks=include_forks,
    )
    return history[key]
