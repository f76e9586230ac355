"""The schema of both backends as one ordered list of migrations (``STEPS``): version N has
run the first N; ``perfbot.store._migrations`` runs them.

Version N means the same tables and columns on SQLite and on PostgreSQL, each in its own
types, so an operator reading ``schema_version`` learns the same thing from either. A
statement is written once, with the dialect's words in braces (``WORDS``: ``{real}`` is
SQLite's REAL and PostgreSQL's DOUBLE PRECISION), or once per dialect (``Each``) where the
DDL really differs (PostgreSQL's partial indexes). ``MIGRATIONS`` and ``PG_MIGRATIONS``
are the statements each runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from perfbot.store._sql import DIALECTS, Dialect


@dataclass(frozen=True, slots=True)
class Each:
    """One statement of a migration, written per dialect (None: nothing to do there)."""

    sqlite: str | None
    postgres: str | None


@dataclass(frozen=True, slots=True)
class SchemaEdit:
    """A SQLite statement that edits ``sqlite_schema`` in place, under ``PRAGMA
    writable_schema``; nothing to do on PostgreSQL. Where SQLite's defensive mode refuses
    such edits (macOS's own SQLite turns it on for every connection), it is skipped: each
    is a rewrite of a table's text into an equivalent one, so the schema is right either
    way, only slower to check."""

    sqlite: str


class _Flags:
    """``{flag[name]}``: a NOT NULL boolean column ``name``. SQLite has no boolean type: an
    integer held to 0 or 1."""

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect

    def __getitem__(self, column: str) -> str:
        if self._dialect == "sqlite":
            return f"{column} INTEGER NOT NULL CHECK ({column} IN (0, 1))"
        return f"{column} BOOLEAN NOT NULL"


# The types (and literals) the two dialects spell differently.
WORDS: Final[dict[Dialect, dict[str, object]]] = {
    "sqlite": {
        "real": "REAL",
        # SQLite's INTEGER is 64 bits; and an INTEGER PRIMARY KEY is the rowid.
        "bigint": "INTEGER",
        # AUTOINCREMENT so an id is never reused once old rows are pruned: ids in logs
        # keep naming one job.
        "identity": "INTEGER PRIMARY KEY AUTOINCREMENT",
        "true": "1",
        "false": "0",
        "flag": _Flags("sqlite"),
    },
    "postgres": {
        "real": "DOUBLE PRECISION",
        "bigint": "BIGINT",
        # An identity is never reused, so a job id in the logs keeps naming one job.
        "identity": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
        "true": "TRUE",
        "false": "FALSE",
        "flag": _Flags("postgres"),
    },
}


def _spelled_out(column: str, *values: str) -> tuple[str, str]:
    """``column IN ('a', 'b')`` as migrations 1 and 8 wrote it, and the same condition as
    ``column = 'a' OR column = 'b'``: each quoted for a SQL string literal."""
    listed = f"{column} IN ({', '.join(repr(value) for value in values)})"
    spelled = " OR ".join(f"{column} = {value!r}" for value in values)
    return listed.replace("'", "''"), spelled.replace("'", "''")


# Append only: a released migration is never edited, a change is a new entry. Each entry is
# the statements of one version, run in one transaction with the version bump (PostgreSQL's
# DDL is transactional too, so a failed migration leaves nothing half-done).
STEPS: Final[tuple[tuple[str | Each | SchemaEdit, ...], ...]] = (
    # 1: deliveries, the job queue, locks and pull-request state.
    (
        """
        CREATE TABLE deliveries (
            id TEXT PRIMARY KEY,
            event TEXT NOT NULL,
            action TEXT,
            received_at {real} NOT NULL
        )
        """,
        """
        CREATE TABLE jobs (
            id {identity},
            delivery_id TEXT NOT NULL,
            event TEXT NOT NULL,
            payload TEXT NOT NULL,
            serial_key TEXT NOT NULL,
            installation_id {bigint},
            status TEXT NOT NULL
                CHECK (status IN ('queued', 'running', 'done', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            due_at {real} NOT NULL,
            lease_owner TEXT,
            lease_until {real},
            last_error TEXT,
            created_at {real} NOT NULL,
            finished_at {real}
        )
        """,
        Each(
            # claim walks this in (due_at, id) order: id is the rowid, implicitly the last
            # column.
            sqlite="CREATE INDEX jobs_status_due ON jobs (status, due_at)",
            # claim walks the unfinished jobs in (due_at, id) order and stops at the first
            # free one; partial, so the finished jobs that pile up never slow it (or
            # queue_depth) down.
            postgres="CREATE INDEX jobs_active_due ON jobs (due_at, id)"
            " WHERE status IN ('queued', 'running')",
        ),
        # claim's "is another job of this key under a live lease?" is a range of this index.
        Each(
            sqlite="CREATE INDEX jobs_serial_key ON jobs (serial_key, status, lease_until)",
            postgres="CREATE INDEX jobs_running_key ON jobs (serial_key, lease_until)"
            " WHERE status = 'running'",
        ),
        "CREATE INDEX jobs_delivery ON jobs (delivery_id)",
        """
        CREATE TABLE locks (
            key TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            expires_at {real} NOT NULL
        )
        """,
        """
        CREATE TABLE pulls (
            repo_id {bigint} NOT NULL,
            number {bigint} NOT NULL,
            comment_id {bigint},
            newest_head_sha TEXT,
            reported_head_sha TEXT,
            reported_run_id {bigint},
            reported_run_attempt INTEGER,
            report_body TEXT,
            rerun_requested_by TEXT,
            updated_at {real} NOT NULL,
            PRIMARY KEY (repo_id, number)
        )
        """,
    ),
    # 2: perfbot's check run of the reported head.
    (
        "ALTER TABLE pulls ADD COLUMN check_run_id {bigint}",
        "ALTER TABLE pulls ADD COLUMN check_run_head_sha TEXT",
    ),
    # 3: installations suspended by their owner (no GitHub call for them until unsuspended).
    (
        """
        CREATE TABLE suspended_installations (
            id {bigint} PRIMARY KEY,
            since {real} NOT NULL
        )
        """,
    ),
    # 4: the deliveries perfbot asked GitHub to redeliver (at most once per guid, ever).
    (
        """
        CREATE TABLE redeliveries (
            guid TEXT PRIMARY KEY,
            claimed_at {real} NOT NULL
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
            started_at {real} NOT NULL,
            cursor {real}
        )
        """,
    ),
    # 7: the suspension state of installations with GitHub's time of the event that set
    # it, unsuspended ones included: an older event arriving late (a redelivery) is
    # ignored. Rows of version 3 were suspensions recorded at arrival, their best time.
    (
        """
        CREATE TABLE installation_states (
            id {bigint} PRIMARY KEY,
            {flag[suspended]},
            {flag[deleted]},
            event_at {real} NOT NULL,
            recorded_at {real} NOT NULL
        )
        """,
        "INSERT INTO installation_states (id, suspended, deleted, event_at, recorded_at)"
        " SELECT id, {true}, {false}, since, since FROM suspended_installations",
        "DROP TABLE suspended_installations",
    ),
    # 8: every parsed side of every report (perfbot.store.measurements): what the noise
    # model learns from. One row per (run attempt, side, platform, metric); samples and
    # settings are canonical JSON text, settings compared by equality.
    (
        """
        CREATE TABLE measurements (
            id {identity},
            repo_id {bigint} NOT NULL,
            repo_full_name TEXT NOT NULL,
            installation_id {bigint},
            platform TEXT NOT NULL,
            metric TEXT NOT NULL,
            unit TEXT NOT NULL,
            better TEXT NOT NULL CHECK (better IN ('higher', 'lower')),
            scale TEXT NOT NULL CHECK (scale IN ('ratio', 'points', 'count')),
            side TEXT NOT NULL CHECK (side IN ('base', 'head', 'push')),
            sha TEXT NOT NULL,
            run_id {bigint} NOT NULL,
            run_attempt INTEGER NOT NULL,
            workflow_id {bigint},
            workflow_name TEXT NOT NULL,
            event TEXT NOT NULL,
            branch TEXT NOT NULL,
            pr_number {bigint},
            {flag[from_fork]},
            samples TEXT NOT NULL,
            settings TEXT NOT NULL,
            runner_name TEXT,
            runner_labels TEXT,
            recorded_at {real} NOT NULL,
            UNIQUE (repo_id, run_id, run_attempt, side, platform, metric)
        )
        """,
        # A series' newest rows are a range of this index, read backwards; forgetting a
        # repository is a prefix of it. On SQLite id is the rowid, implicitly its last
        # column.
        Each(
            sqlite="CREATE INDEX measurements_series"
            " ON measurements (repo_id, platform, metric, settings, recorded_at)",
            postgres="CREATE INDEX measurements_series"
            " ON measurements (repo_id, platform, metric, settings, recorded_at, id)",
        ),
        "CREATE INDEX measurements_recorded ON measurements (recorded_at)",
        "CREATE INDEX measurements_installation ON measurements (installation_id)",
    ),
    # 9: a PR's head runs (Store.pull_runs, the comment's history of its pushes) are a
    # range of this index, not a scan of every row of the repository.
    ("CREATE INDEX measurements_pull ON measurements (repo_id, pr_number, side, recorded_at)",),
    # 10: the default branch's watch (perfbot.engine.judge.watch): each change of level it
    # told about, under the commit it was first found at (its issue's), and where it is
    # found now; and the acknowledgements of people who accepted a new level, kept for
    # audit (a branch's change now, a pull request's regression later).
    (
        """
        CREATE TABLE watch_changes (
            repo_id {bigint} NOT NULL,
            branch TEXT NOT NULL,
            platform TEXT NOT NULL,
            metric TEXT NOT NULL,
            settings TEXT NOT NULL,
            first_sha TEXT NOT NULL,
            sha TEXT NOT NULL,
            installation_id {bigint},
            issue_number {bigint},
            state TEXT NOT NULL CHECK (state IN ('open', 'closed')),
            closed_reason TEXT,
            direction TEXT NOT NULL,
            change {real} NOT NULL,
            unit TEXT NOT NULL,
            scale TEXT NOT NULL,
            created_at {real} NOT NULL,
            updated_at {real} NOT NULL,
            PRIMARY KEY (repo_id, branch, platform, metric, settings, first_sha)
        )
        """,
        "CREATE INDEX watch_changes_issue ON watch_changes (repo_id, issue_number)",
        "CREATE INDEX watch_changes_installation ON watch_changes (installation_id)",
        """
        CREATE TABLE acknowledgements (
            id {identity},
            repo_id {bigint} NOT NULL,
            installation_id {bigint},
            subject TEXT NOT NULL CHECK (subject IN ('branch', 'pull')),
            branch TEXT NOT NULL,
            pr_number {bigint},
            sha TEXT NOT NULL,
            platform TEXT NOT NULL,
            metric TEXT NOT NULL,
            settings TEXT NOT NULL,
            value {real},
            login TEXT NOT NULL,
            reason TEXT NOT NULL,
            accepted_at {real} NOT NULL,
            revoked_at {real},
            revoked_by TEXT
        )
        """,
        "CREATE INDEX acknowledgements_series"
        " ON acknowledgements (repo_id, subject, branch, platform, metric, settings)",
    ),
    # 11: the pace of GitHub writes per installation, shared by every process and replica
    # (perfbot.github.pacing): a versioned record per key, replaced only by a writer that
    # read its version (compare and swap), so two replicas never book one slot.
    (
        """
        CREATE TABLE write_pace (
            key TEXT PRIMARY KEY,
            version {bigint} NOT NULL,
            state TEXT NOT NULL,
            updated_at {real} NOT NULL
        )
        """,
        "CREATE INDEX write_pace_updated ON write_pace (updated_at)",
    ),
    # 12: configuration files as a process read them from GitHub, so that another process
    # or replica trusts the read for its minute instead of asking GitHub again
    # (perfbot.app.configcache); keyed by the names in lower case, as GitHub's are.
    (
        """
        CREATE TABLE config_files (
            owner TEXT NOT NULL,
            repo TEXT NOT NULL,
            content TEXT,
            read_at {real} NOT NULL,
            PRIMARY KEY (owner, repo)
        )
        """,
        "CREATE INDEX config_files_read ON config_files (read_at)",
    ),
    # 13: a delivery names its job, so a delivery's job is found through the deliveries'
    # primary key: the jobs' index of delivery ids, a second index keyed by GitHub's
    # random GUIDs and written on every delivery, goes (``bench/ingest.py``). A delivery
    # of an older version gets its newest job, the one job_outcome read.
    (
        "ALTER TABLE deliveries ADD COLUMN job_id {bigint}",
        "UPDATE deliveries SET job_id ="
        " (SELECT MAX(j.id) FROM jobs AS j WHERE j.delivery_id = deliveries.id)"
        " WHERE id IN (SELECT delivery_id FROM jobs)",
        "DROP INDEX jobs_delivery",
        # SQLite's index of jobs by serial key becomes PostgreSQL's, partial: only running
        # jobs, what the claim asks it about (KEY_BUSY). A job is queued when inserted, so
        # recording a delivery no longer writes it.
        Each(sqlite="DROP INDEX jobs_serial_key", postgres=None),
        Each(
            sqlite="CREATE INDEX jobs_running_key ON jobs (serial_key, lease_until)"
            " WHERE status = 'running'",
            postgres=None,
        ),
    ),
    # 14: SQLite checks a CHECK's ``x IN (a, b, c)`` (three values or more) by building a
    # temporary b-tree of the list each time a row is written: two per measurement and
    # one per job write, about a twentieth of perfbot's instructions per update
    # (``bench/instructions.py``), where ``x = a OR x = b OR x = c`` costs next to
    # nothing. The constraints are rewritten so in place, as SQLite's documentation on
    # changing a table's schema allows for CHECK constraints (the rows' format does not
    # change, and every row meets the same condition): the tables' text in sqlite_schema,
    # then a table made and dropped, so that every other connection reads the schema
    # again...
    # Where SQLite's defensive mode forbids the edits (``SchemaEdit``), the constraints stay
    # as they were. PostgreSQL checks a list in place: nothing to do there.
    (
        Each(sqlite="PRAGMA writable_schema = ON", postgres=None),
        *(
            SchemaEdit(
                f"UPDATE sqlite_schema SET sql = replace(sql, '{listed}', '{spelled}')"
                f" WHERE type = 'table' AND name = '{table}'"
            )
            for table, listed, spelled in (
                ("jobs", *_spelled_out("status", "queued", "running", "done", "failed")),
                ("measurements", *_spelled_out("scale", "ratio", "points", "count")),
                ("measurements", *_spelled_out("side", "base", "head", "push")),
            )
        ),
        Each(sqlite="PRAGMA writable_schema = OFF", postgres=None),
        Each(sqlite="CREATE TABLE schema_reread (unused INTEGER)", postgres=None),
        Each(sqlite="DROP TABLE schema_reread", postgres=None),
        # ... and this connection, which parsed it before the rewrite.
        Each(sqlite="PRAGMA writable_schema = RESET", postgres=None),
    ),
)


def rendered(statement: str | Each | SchemaEdit, dialect: Dialect) -> str | None:
    if isinstance(statement, SchemaEdit):
        text = statement.sqlite if dialect == "sqlite" else None
    else:
        text = statement if isinstance(statement, str) else getattr(statement, dialect)
    return None if text is None else text.format_map(WORDS[dialect])


def statements(dialect: Dialect) -> tuple[tuple[str, ...], ...]:
    """Each version's statements, as ``dialect`` runs them."""
    return tuple(
        tuple(text for s in version if (text := rendered(s, dialect)) is not None)
        for version in STEPS
    )


_STATEMENTS: Final = {dialect: statements(dialect) for dialect in DIALECTS}
MIGRATIONS: Final = _STATEMENTS["sqlite"]
PG_MIGRATIONS: Final = _STATEMENTS["postgres"]
