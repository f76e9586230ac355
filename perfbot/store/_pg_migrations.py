"""The PostgreSQL schema as an ordered list of migrations: version N has run the first N.

Version N here means what version N means in ``_migrations`` (the SQLite schema): the same
tables and columns, in each database's own types. The two lists are kept apart because
their SQL differs (identity columns, partial indexes, double precision), and in step by
number, which a test checks: an operator reading ``schema_version`` learns the same thing
from either backend.
"""

from __future__ import annotations

import time
from typing import Final

from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from perfbot.store._migrations import SchemaTooNew

# Append only: a released migration is never edited, a change is a new entry. Each entry is
# the statements of one version, run in one transaction with the version bump (PostgreSQL's
# DDL is transactional, so a failed migration leaves nothing half-done).
PG_MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    # 1: deliveries, the job queue, locks and pull-request state.
    (
        """
        CREATE TABLE deliveries (
            id TEXT PRIMARY KEY,
            event TEXT NOT NULL,
            action TEXT,
            received_at DOUBLE PRECISION NOT NULL
        )
        """,
        # An identity is never reused, so a job id in the logs keeps naming one job.
        """
        CREATE TABLE jobs (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            delivery_id TEXT NOT NULL,
            event TEXT NOT NULL,
            payload TEXT NOT NULL,
            serial_key TEXT NOT NULL,
            installation_id BIGINT,
            status TEXT NOT NULL
                CHECK (status IN ('queued', 'running', 'done', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            due_at DOUBLE PRECISION NOT NULL,
            lease_owner TEXT,
            lease_until DOUBLE PRECISION,
            last_error TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            finished_at DOUBLE PRECISION
        )
        """,
        # claim walks the unfinished jobs in (due_at, id) order and stops at the first free
        # one; partial, so the finished jobs that pile up never slow it (or queue_depth) down.
        "CREATE INDEX jobs_active_due ON jobs (due_at, id) WHERE status IN ('queued', 'running')",
        # claim's "is another job of this key under a live lease?" is a range of this index.
        "CREATE INDEX jobs_running_key ON jobs (serial_key, lease_until) WHERE status = 'running'",
        "CREATE INDEX jobs_delivery ON jobs (delivery_id)",
        """
        CREATE TABLE locks (
            key TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL
        )
        """,
        """
        CREATE TABLE pulls (
            repo_id BIGINT NOT NULL,
            number BIGINT NOT NULL,
            comment_id BIGINT,
            newest_head_sha TEXT,
            reported_head_sha TEXT,
            reported_run_id BIGINT,
            reported_run_attempt INTEGER,
            report_body TEXT,
            rerun_requested_by TEXT,
            updated_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (repo_id, number)
        )
        """,
    ),
    # 2: perfbot's check run of the reported head.
    (
        "ALTER TABLE pulls ADD COLUMN check_run_id BIGINT",
        "ALTER TABLE pulls ADD COLUMN check_run_head_sha TEXT",
    ),
    # 3: installations suspended by their owner (no GitHub call for them until unsuspended).
    (
        """
        CREATE TABLE suspended_installations (
            id BIGINT PRIMARY KEY,
            since DOUBLE PRECISION NOT NULL
        )
        """,
    ),
    # 4: the deliveries perfbot asked GitHub to redeliver (at most once per guid, ever).
    (
        """
        CREATE TABLE redeliveries (
            guid TEXT PRIMARY KEY,
            claimed_at DOUBLE PRECISION NOT NULL
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
            started_at DOUBLE PRECISION NOT NULL,
            cursor DOUBLE PRECISION
        )
        """,
    ),
    # 7: the suspension state of installations with GitHub's time of the event that set
    # it, unsuspended ones included: an older event arriving late (a redelivery) is
    # ignored. Rows of version 3 were suspensions recorded at arrival, their best time.
    (
        """
        CREATE TABLE installation_states (
            id BIGINT PRIMARY KEY,
            suspended BOOLEAN NOT NULL,
            deleted BOOLEAN NOT NULL,
            event_at DOUBLE PRECISION NOT NULL,
            recorded_at DOUBLE PRECISION NOT NULL
        )
        """,
        "INSERT INTO installation_states (id, suspended, deleted, event_at, recorded_at)"
        " SELECT id, TRUE, FALSE, since, since FROM suspended_installations",
        "DROP TABLE suspended_installations",
    ),
    # 8: every parsed side of every report (perfbot.store.measurements): what the noise
    # model learns from. One row per (run attempt, side, platform, metric); samples and
    # settings are canonical JSON text, settings compared by equality.
    (
        """
        CREATE TABLE measurements (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            repo_id BIGINT NOT NULL,
            repo_full_name TEXT NOT NULL,
            installation_id BIGINT,
            platform TEXT NOT NULL,
            metric TEXT NOT NULL,
            unit TEXT NOT NULL,
            better TEXT NOT NULL CHECK (better IN ('higher', 'lower')),
            scale TEXT NOT NULL CHECK (scale IN ('ratio', 'points', 'count')),
            side TEXT NOT NULL CHECK (side IN ('base', 'head', 'push')),
            sha TEXT NOT NULL,
            run_id BIGINT NOT NULL,
            run_attempt INTEGER NOT NULL,
            workflow_id BIGINT,
            workflow_name TEXT NOT NULL,
            event TEXT NOT NULL,
            branch TEXT NOT NULL,
            pr_number BIGINT,
            from_fork BOOLEAN NOT NULL,
            samples TEXT NOT NULL,
            settings TEXT NOT NULL,
            runner_name TEXT,
            runner_labels TEXT,
            recorded_at DOUBLE PRECISION NOT NULL,
            UNIQUE (repo_id, run_id, run_attempt, side, platform, metric)
        )
        """,
        # A series' newest rows are a range of this index, read backwards; forgetting a
        # repository is a prefix of it.
        "CREATE INDEX measurements_series"
        " ON measurements (repo_id, platform, metric, settings, recorded_at, id)",
        "CREATE INDEX measurements_recorded ON measurements (recorded_at)",
        "CREATE INDEX measurements_installation ON measurements (installation_id)",
    ),
    # 9: a PR's head runs (Store.pull_runs, the comment's history of its pushes) are a
    # range of this index, not a scan of every row of the repository.
    ("CREATE INDEX measurements_pull ON measurements (repo_id, pr_number, side, recorded_at)",),
)

# The session-level key space of pg_advisory_xact_lock(bigint): perfbot's migration lock.
# (The claim's per-serial-key locks use the separate two-int4 key space, so they never
# collide with this one.) The bytes of "perfbotM".
MIGRATION_LOCK_KEY: Final = 0x70657266626F744D


async def migrate(conn: AsyncConnection[TupleRow]) -> int:
    """Run the migrations ``conn``'s database lacks; return the resulting version.

    ``conn`` must be outside a transaction: this runs one. It first takes a transaction-level
    advisory lock, so replicas starting together migrate one after the other; the second
    waits, then sees the first's version and has nothing left to do.
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version"
            " (version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
        )
        current = await current_version(conn)
        if current > len(PG_MIGRATIONS):
            raise SchemaTooNew(
                f"the database schema is at version {current} but this perfbot knows only"
                f" {len(PG_MIGRATIONS)}; upgrade perfbot or use another database"
            )
        for version in range(current + 1, len(PG_MIGRATIONS) + 1):
            for statement in PG_MIGRATIONS[version - 1]:
                await conn.execute(statement)
            await conn.execute(
                "INSERT INTO schema_version (version, applied_at) VALUES (%s, %s)",
                (version, time.time()),
            )
    return len(PG_MIGRATIONS)


async def current_version(conn: AsyncConnection[TupleRow]) -> int:
    """The highest migration applied (0 for a new database with an empty version table)."""
    cur = await conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version")
    row = await cur.fetchone()
    assert row is not None  # an aggregate always returns a row
    return int(row[0])
