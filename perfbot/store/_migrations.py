"""The SQLite schema as an ordered list of migrations: version N has run the first N."""

from __future__ import annotations

import sqlite3
from typing import Final

from perfbot.errors import PerfbotError

# Append only: a released migration is never edited, a change is a new entry. Each entry is
# the statements of one version, run in one transaction with the version bump.
MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    # 1: deliveries, the job queue, locks and pull-request state.
    (
        """
        CREATE TABLE deliveries (
            id TEXT PRIMARY KEY,
            event TEXT NOT NULL,
            action TEXT,
            received_at REAL NOT NULL
        )
        """,
        # AUTOINCREMENT so a job id is never reused once old jobs are pruned: ids in logs
        # keep naming one job.
        """
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            delivery_id TEXT NOT NULL,
            event TEXT NOT NULL,
            payload TEXT NOT NULL,
            serial_key TEXT NOT NULL,
            installation_id INTEGER,
            status TEXT NOT NULL
                CHECK (status IN ('queued', 'running', 'done', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            due_at REAL NOT NULL,
            lease_owner TEXT,
            lease_until REAL,
            last_error TEXT,
            created_at REAL NOT NULL,
            finished_at REAL
        )
        """,
        # claim walks this in (due_at, id) order: id is the rowid, implicitly the last column.
        "CREATE INDEX jobs_status_due ON jobs (status, due_at)",
        # claim's "is another job of this key under a live lease?" is a range of this index.
        "CREATE INDEX jobs_serial_key ON jobs (serial_key, status, lease_until)",
        "CREATE INDEX jobs_delivery ON jobs (delivery_id)",
        """
        CREATE TABLE locks (
            key TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            expires_at REAL NOT NULL
        )
        """,
        """
        CREATE TABLE pulls (
            repo_id INTEGER NOT NULL,
            number INTEGER NOT NULL,
            comment_id INTEGER,
            newest_head_sha TEXT,
            reported_head_sha TEXT,
            reported_run_id INTEGER,
            reported_run_attempt INTEGER,
            report_body TEXT,
            rerun_requested_by TEXT,
            updated_at REAL NOT NULL,
            PRIMARY KEY (repo_id, number)
        )
        """,
    ),
    # 2: perfbot's check run of the reported head.
    (
        "ALTER TABLE pulls ADD COLUMN check_run_id INTEGER",
        "ALTER TABLE pulls ADD COLUMN check_run_head_sha TEXT",
    ),
    # 3: installations suspended by their owner (no GitHub call for them until unsuspended).
    (
        """
        CREATE TABLE suspended_installations (
            id INTEGER PRIMARY KEY,
            since REAL NOT NULL
        )
        """,
    ),
    # 4: the deliveries perfbot asked GitHub to redeliver (at most once per guid, ever).
    (
        """
        CREATE TABLE redeliveries (
            guid TEXT PRIMARY KEY,
            claimed_at REAL NOT NULL
        )
        """,
    ),
    # 5: how a job ended, in its handler's words (a DONE job's reason: "ignored: ...").
    ("ALTER TABLE jobs ADD COLUMN reason TEXT",),
    # 6: the newest sweep for missed deliveries (one row): when it started, and the cursor.
    (
        """
        CREATE TABLE redelivery_sweep (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            started_at REAL NOT NULL,
            cursor REAL
        )
        """,
    ),
    # 7: the suspension state of installations with GitHub's time of the event that set
    # it, unsuspended ones included: an older event arriving late (a redelivery) is
    # ignored. Rows of version 3 were suspensions recorded at arrival, their best time.
    (
        """
        CREATE TABLE installation_states (
            id INTEGER PRIMARY KEY,
            suspended INTEGER NOT NULL CHECK (suspended IN (0, 1)),
            deleted INTEGER NOT NULL CHECK (deleted IN (0, 1)),
            event_at REAL NOT NULL,
            recorded_at REAL NOT NULL
        )
        """,
        "INSERT INTO installation_states (id, suspended, deleted, event_at, recorded_at)"
        " SELECT id, 1, 0, since, since FROM suspended_installations",
        "DROP TABLE suspended_installations",
    ),
    # 8: every parsed side of every report (perfbot.store.measurements): what the noise
    # model learns from. One row per (run attempt, side, platform, metric); samples and
    # settings are canonical JSON text, settings compared by equality.
    (
        """
        CREATE TABLE measurements (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            repo_id INTEGER NOT NULL,
            repo_full_name TEXT NOT NULL,
            installation_id INTEGER,
            platform TEXT NOT NULL,
            metric TEXT NOT NULL,
            unit TEXT NOT NULL,
            better TEXT NOT NULL CHECK (better IN ('higher', 'lower')),
            scale TEXT NOT NULL CHECK (scale IN ('ratio', 'points', 'count')),
            side TEXT NOT NULL CHECK (side IN ('base', 'head', 'push')),
            sha TEXT NOT NULL,
            run_id INTEGER NOT NULL,
            run_attempt INTEGER NOT NULL,
            workflow_id INTEGER,
            workflow_name TEXT NOT NULL,
            event TEXT NOT NULL,
            branch TEXT NOT NULL,
            pr_number INTEGER,
            from_fork INTEGER NOT NULL CHECK (from_fork IN (0, 1)),
            samples TEXT NOT NULL,
            settings TEXT NOT NULL,
            runner_name TEXT,
            runner_labels TEXT,
            recorded_at REAL NOT NULL,
            UNIQUE (repo_id, run_id, run_attempt, side, platform, metric)
        )
        """,
        # A series' newest rows are a range of this index, read backwards (id is the rowid,
        # implicitly its last column); forgetting a repository is a prefix of it.
        "CREATE INDEX measurements_series"
        " ON measurements (repo_id, platform, metric, settings, recorded_at)",
        "CREATE INDEX measurements_recorded ON measurements (recorded_at)",
        "CREATE INDEX measurements_installation ON measurements (installation_id)",
    ),
    # 9: a PR's head runs (Store.pull_runs, the comment's history of its pushes) are a
    # range of this index, not a scan of every row of the repository.
    ("CREATE INDEX measurements_pull ON measurements (repo_id, pr_number, side, recorded_at)",),
)


class SchemaTooNew(PerfbotError, RuntimeError):
    """The database was migrated by a newer perfbot; running older code on it is unsafe."""


def migrate(conn: sqlite3.Connection, now: float) -> int:
    """Run the migrations ``conn``'s database lacks; return the resulting version.

    Call inside a BEGIN IMMEDIATE transaction, so processes starting together migrate one
    after the other: the second sees the first's version and has nothing left to do.
    """
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version"
        " (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    current = current_version(conn)
    if current > len(MIGRATIONS):
        raise SchemaTooNew(
            f"the database schema is at version {current} but this perfbot knows only"
            f" {len(MIGRATIONS)}; upgrade perfbot or use another database"
        )
    for version in range(current + 1, len(MIGRATIONS) + 1):
        for statement in MIGRATIONS[version - 1]:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (version, now)
        )
    return len(MIGRATIONS)


def current_version(conn: sqlite3.Connection) -> int:
    """The highest migration applied (0 for a new database with an empty version table)."""
    (version,) = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
    return int(version)
