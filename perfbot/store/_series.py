"""The measurements of every report: their statements and logic, written once for both
backends (``perfbot.store._core``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from perfbot.store._rows import MEASUREMENT_COLUMNS, measurement_row
from perfbot.store._sql import SQL, SQLBackend
from perfbot.store._watch import FORGET_INSTALLATION_ACKS, FORGET_INSTALLATION_CHANGES
from perfbot.store.export import HistoryQuery, HistoryRow, history_rows, history_sql
from perfbot.store.export import repository_known_sql as _repository_known_sql
from perfbot.store.measurements import (
    MAX_PULL_RUNS,
    RUN_SERIES_COLUMNS,
    TREND_SIDES,
    CommitSamples,
    MeasurementRecord,
    PullRun,
    RunSeries,
    SeriesKey,
    check_bounds,
    grouped_history,
    run_series,
    settings_text,
    storable,
    strings_text,
)

# Rows deleted per transaction when purging: no write lock (SQLite) or row locks
# (PostgreSQL) are held for long, and deliveries wait for one batch, not for the purge.
PURGE_BATCH: Final = 5000
# Up to this many series, a history is a small read (a few hundred rows, usually far
# fewer): ``_peek``'s, not the thread's.
LOOP_HISTORY_KEYS: Final = 16

# One record (parameters: ``measurement_row``, in MEASUREMENT_COLUMNS' order), unless its
# (repository, run, attempt, side, platform, metric) is stored already.
INSERT_MEASUREMENT: Final = SQL(
    f"INSERT INTO measurements ({', '.join(MEASUREMENT_COLUMNS)})"
    f" VALUES ({', '.join(f':{name}' for name in MEASUREMENT_COLUMNS)})"
    " ON CONFLICT (repo_id, run_id, run_attempt, side, platform, metric) DO NOTHING"
)

# The newest :rows rows of one key k's series (its platform, metric and settings text): a
# backward range of the measurements_series index, so a report's query reads only the
# rows it returns. ``{trend}``: the branch's trend rows only, or every row.
_SERIES_ROWS: Final = """
    FROM measurements AS s
    WHERE s.repo_id = :repo AND s.platform = k.platform AND s.metric = k.metric
        AND s.settings = k.settings{trend}
        AND s.run_id IS DISTINCT FROM :exclude AND (:forks OR NOT s.from_fork)
    ORDER BY s.recorded_at DESC, s.id DESC
    LIMIT :rows
"""
_TREND: Final = " AND s.branch = :branch AND s.side IN ({})".format(
    ", ".join(f"'{side}'" for side in TREND_SIDES)
)


# Per key of the JSON array :keys (``[platform, metric, settings text]`` each; ``ord`` its
# place, from 1), its newest rows. The dialects differ in how the array becomes rows, and
# in how each key's rows are joined to it: SQLite has no LATERAL, and PostgreSQL would run
# SQLite's correlated ``IN`` once per row of the table rather than once per key.
_KEYS_AND_ROWS: Final = """
    SELECT k.ord, m.sha, m.samples, m.recorded_at
    FROM ({keys}) AS k
    {join}
    ORDER BY k.ord, m.recorded_at DESC, m.id DESC
"""


def _history(trend: str) -> SQL:
    rows = _SERIES_ROWS.format(trend=trend)
    return SQL.each(
        sqlite=_KEYS_AND_ROWS.format(
            keys="SELECT key + 1 AS ord, json_extract(value, '$[0]') AS platform,"
            " json_extract(value, '$[1]') AS metric, json_extract(value, '$[2]') AS settings"
            " FROM json_each(:keys)",
            join=f"JOIN measurements AS m ON m.id IN (SELECT s.id {rows})",
        ),
        postgres=_KEYS_AND_ROWS.format(
            keys="SELECT ord, value ->> 0 AS platform, value ->> 1 AS metric,"
            " value ->> 2 AS settings"
            " FROM jsonb_array_elements(CAST(:keys AS jsonb)) WITH ORDINALITY AS e(value, ord)",
            join=f"CROSS JOIN LATERAL (SELECT s.id, s.sha, s.samples, s.recorded_at {rows}) AS m",
        ),
    )


HISTORY: Final = _history("")
BRANCH_HISTORY: Final = _history(_TREND)
PUSH_HISTORY: Final = _history(" AND s.branch = :branch AND s.side = 'push'")
# A PR's head runs, newest first (one row per attempt; ``Store.pull_runs``).
PULL_RUNS: Final = SQL(
    """
    SELECT sha, run_id, run_attempt, MAX(recorded_at) AS at FROM measurements
    WHERE repo_id = :repo AND pr_number = :pr AND side = 'head'
    GROUP BY sha, run_id, run_attempt
    ORDER BY at DESC, run_id DESC, run_attempt DESC
    LIMIT :runs
    """
)
# A PR's earlier pushes and their rows, in one query (``Store.pull_pushes``): of the PR's
# newest :runs head runs, each commit's newest attempt (not :sha's, not run :run's), the
# newest :pushes of them, with every row each recorded.
PULL_PUSHES: Final = SQL(
    f"""
    WITH attempts AS (
        SELECT sha, run_id, run_attempt, MAX(recorded_at) AS at FROM measurements
        WHERE repo_id = :repo AND pr_number = :pr AND side = 'head'
        GROUP BY sha, run_id, run_attempt
        ORDER BY at DESC, run_id DESC, run_attempt DESC
        LIMIT :runs
    ), newest AS (
        SELECT sha, run_id, run_attempt, at, ROW_NUMBER() OVER (
            PARTITION BY sha ORDER BY at DESC, run_id DESC, run_attempt DESC
        ) AS place
        FROM attempts WHERE sha <> :sha AND run_id <> :run
    ), chosen AS (
        SELECT sha, run_id, run_attempt, at FROM newest WHERE place = 1
        ORDER BY at DESC, run_id DESC, run_attempt DESC
        LIMIT :pushes
    )
    SELECT c.sha, c.run_id, c.run_attempt, c.at,
        {", ".join(f"m.{column.strip()}" for column in RUN_SERIES_COLUMNS.split(","))}
    FROM chosen AS c
    JOIN measurements AS m
        ON m.repo_id = :repo AND m.run_id = c.run_id AND m.run_attempt = c.run_attempt
    ORDER BY c.at DESC, c.run_id DESC, c.run_attempt DESC
    """
)
# Whether PULL_PUSHES (of the same parameters) may find a row: the PR has a head row of
# another commit and run (an index range of measurements_pull).
ANY_EARLIER_PUSH: Final = SQL(
    "SELECT 1 FROM measurements WHERE repo_id = :repo AND pr_number = :pr AND side = 'head'"
    " AND sha <> :sha AND run_id <> :run LIMIT 1"
)
RUN_MEASUREMENTS: Final = SQL(
    f"SELECT {RUN_SERIES_COLUMNS} FROM measurements"
    " WHERE repo_id = :repo AND run_id = :run AND run_attempt = :attempt"
)
REPOSITORY_KNOWN: Final = SQL(_repository_known_sql(lambda name: f":{name}"))


def _delete_ids(ids: str) -> SQL:
    """Delete the rows whose ids ``ids`` (a batch-limited subquery) selects.

    On PostgreSQL the ids are looked up by primary key (``= ANY (ARRAY(...))``), and a
    purge's subquery is ordered by ``recorded_at``, so that it walks that index from the
    oldest row and stops at the first one to keep, whatever the planner's statistics say:
    unordered, on a freshly loaded table, a purge with nothing to purge read the whole
    table (50-250 ms for 400,000 rows, ``bench/measurements.py``; 0.2 ms ordered).
    """
    return SQL.each(
        sqlite=f"DELETE FROM measurements WHERE id IN ({ids})",
        postgres=f"DELETE FROM measurements WHERE id = ANY (ARRAY({ids}))",
    )


PURGE: Final = _delete_ids(
    "SELECT id FROM measurements WHERE recorded_at < :before ORDER BY recorded_at LIMIT :batch"
)
FORGET_INSTALLATION: Final = _delete_ids(
    "SELECT id FROM measurements WHERE installation_id = :installation LIMIT :batch"
)


class MeasurementsSQL(SQLBackend):
    """``Store``'s ``Measurements`` role."""

    async def record_measurements(self, records: Sequence[MeasurementRecord]) -> int:
        if not records:
            return 0
        return await self._write_many(INSERT_MEASUREMENT, records, measurement_row)

    async def measurement_history(
        self,
        repo_id: int,
        keys: Sequence[SeriesKey],
        *,
        exclude_run_id: int | None,
        max_commits: int,
        max_rows: int,
        include_forks: bool = False,
    ) -> dict[SeriesKey, list[CommitSamples]]:
        params = {
            "repo": repo_id,
            "exclude": exclude_run_id,
            "forks": include_forks,
            "rows": max_rows,
        }
        return await self._history(HISTORY, params, keys, max_commits, max_rows)

    async def branch_history(
        self,
        repo_id: int,
        branch: str,
        keys: Sequence[SeriesKey],
        *,
        max_commits: int,
        max_rows: int,
        pushes_only: bool = False,
    ) -> dict[SeriesKey, list[CommitSamples]]:
        params = {
            "repo": repo_id,
            "branch": storable(branch),
            "exclude": None,
            "forks": False,  # a fork's author wrote its base side too: never a trend
            "rows": max_rows,
        }
        sql = PUSH_HISTORY if pushes_only else BRANCH_HISTORY
        return await self._history(sql, params, keys, max_commits, max_rows)

    async def _history(
        self,
        sql: SQL,
        params: dict[str, Any],
        keys: Sequence[SeriesKey],
        max_commits: int,
        max_rows: int,
    ) -> dict[SeriesKey, list[CommitSamples]]:
        check_bounds(max_commits, max_rows)
        unique = list(dict.fromkeys(keys))
        if not unique:
            return {}
        params["keys"] = strings_text(
            [[storable(k.platform), storable(k.metric), settings_text(k.settings)] for k in unique]
        )
        # A report's few series are read where point reads are (SQLite: on the loop's
        # connection, no hop to the thread); a big report's on the store's thread.
        read = self._peek if len(unique) <= LOOP_HISTORY_KEYS else self._fetch
        rows = await read(sql, params)
        return dict(zip(unique, grouped_history(rows, len(unique), max_commits), strict=True))

    async def pull_runs(self, repo_id: int, pr_number: int, *, max_runs: int) -> list[PullRun]:
        if not 1 <= max_runs <= MAX_PULL_RUNS:
            raise ValueError(f"max_runs must be from 1 to {MAX_PULL_RUNS}, not {max_runs}")
        rows = await self._fetch(PULL_RUNS, {"repo": repo_id, "pr": pr_number, "runs": max_runs})
        return [PullRun(str(sha), int(run), int(att), float(at)) for sha, run, att, at in rows]

    async def pull_pushes(
        self, repo_id: int, pr_number: int, *, sha: str, run_id: int, max_pushes: int
    ) -> list[tuple[PullRun, list[RunSeries]]]:
        params = {
            "repo": repo_id,
            "pr": pr_number,
            "runs": MAX_PULL_RUNS,
            "sha": sha,
            "run": run_id,
            "pushes": max_pushes,
        }
        pushes: dict[tuple[int, int], tuple[PullRun, list[RunSeries]]] = {}
        for row in await self._fetch_if(ANY_EARLIER_PUSH, PULL_PUSHES, params):
            key = (int(row[1]), int(row[2]))
            if key not in pushes:
                push = PullRun(str(row[0]), int(row[1]), int(row[2]), float(row[3]))
                pushes[key] = (push, [])
            pushes[key][1].append(run_series(row[4:]))
        return list(pushes.values())

    async def run_measurements(self, repo_id: int, run_id: int, attempt: int) -> list[RunSeries]:
        params = {"repo": repo_id, "run": run_id, "attempt": attempt}
        return [run_series(row) for row in await self._fetch(RUN_MEASUREMENTS, params)]

    async def export_measurements(self, query: HistoryQuery) -> list[HistoryRow]:
        sql, params = history_sql(query, lambda name: f":{name}", self.dialect)
        return history_rows(await self._fetch(SQL(sql), params))

    async def has_measurements(self, repo_full_name: str) -> bool:
        return bool(await self._fetch(REPOSITORY_KNOWN, {"repo": repo_full_name}))

    async def purge_measurements(self, before: float) -> int:
        return await self._delete_in_batches(PURGE, {"before": before})

    async def forget_installation(self, installation_id: int) -> None:
        await self._delete_in_batches(FORGET_INSTALLATION, {"installation": installation_id})
        each = [{"installation": installation_id}]
        await self._atomically(
            [(FORGET_INSTALLATION_CHANGES, each), (FORGET_INSTALLATION_ACKS, each)]
        )

    async def _delete_in_batches(self, sql: SQL, params: dict[str, Any]) -> int:
        """Run a batch-limited DELETE until it deletes less than a batch; rows deleted.
        One transaction per batch: writers (deliveries above all) wait for one batch,
        never for the whole purge."""
        deleted = 0
        while True:
            count = await self._write(sql, params | {"batch": PURGE_BATCH})
            deleted += count
            if count < PURGE_BATCH:
                return deleted
