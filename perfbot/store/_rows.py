"""What both backends share of their SQL: the columns of a pull request's state and of a
measurement, and turning the rows they read back into Jobs and PullStates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any, Final

from perfbot.store.base import Job, JobOutcome, JobStatus, PullState
from perfbot.store.measurements import (
    MeasurementRecord,
    labels_text,
    samples_text,
    settings_text,
    storable,
)

# The columns of a job that ``job_from_row`` reads, in its order.
JOB_COLUMNS: Final = (
    "id, delivery_id, event, payload, serial_key, installation_id,"
    " attempts, created_at, lease_owner, lease_until"
)
# The columns of the pulls table: PullState's fields, in their order.
PULL_COLUMNS: Final = tuple(field.name for field in fields(PullState))
_KEY: Final = ("repo_id", "number")
# The columns of the measurements table a record fills, in ``measurement_row``'s order.
MEASUREMENT_COLUMNS: Final = (
    "repo_id",
    "repo_full_name",
    "installation_id",
    "platform",
    "metric",
    "unit",
    "better",
    "scale",
    "side",
    "sha",
    "run_id",
    "run_attempt",
    "workflow_id",
    "workflow_name",
    "event",
    "branch",
    "pr_number",
    "from_fork",
    "samples",
    "settings",
    "runner_name",
    "runner_labels",
    "recorded_at",
)


def select_pull(placeholder: str) -> str:
    """The query for one PR's state; ``placeholder`` is the driver's (``?`` or ``%s``)."""
    return (
        f"SELECT {', '.join(PULL_COLUMNS)} FROM pulls"
        f" WHERE repo_id = {placeholder} AND number = {placeholder}"
    )


def upsert_pull(placeholder: str) -> str:
    """The statement that inserts or replaces one PR's state (parameters: ``pull_row``)."""
    updates = ", ".join(f"{name} = excluded.{name}" for name in PULL_COLUMNS if name not in _KEY)
    return (
        f"INSERT INTO pulls ({', '.join(PULL_COLUMNS)})"
        f" VALUES ({', '.join([placeholder] * len(PULL_COLUMNS))})"
        f" ON CONFLICT (repo_id, number) DO UPDATE SET {updates}"
    )


def set_suspended(placeholder: str) -> str:
    """The statement that records an installation's suspension state unless the state
    recorded is final or set by a newer event (see ``Store.set_suspended``); at equal
    times only the active state is recorded. Parameters: id, suspended, deleted, the
    event's time, now."""
    return (
        "INSERT INTO installation_states (id, suspended, deleted, event_at, recorded_at)"
        f" VALUES ({', '.join([placeholder] * 5)})"
        " ON CONFLICT (id) DO UPDATE SET suspended = excluded.suspended,"
        " deleted = excluded.deleted, event_at = excluded.event_at,"
        " recorded_at = excluded.recorded_at"
        " WHERE NOT installation_states.deleted AND (excluded.deleted"
        " OR excluded.event_at > installation_states.event_at"
        " OR (excluded.event_at = installation_states.event_at AND NOT excluded.suspended))"
    )


def pull_row(state: PullState) -> tuple[Any, ...]:
    return tuple(getattr(state, name) for name in PULL_COLUMNS)


def pull_from_row(row: Sequence[Any]) -> PullState:
    values = dict(zip(PULL_COLUMNS, row, strict=True))
    values["updated_at"] = float(values["updated_at"])  # PostgreSQL's numeric arrives Decimal
    return PullState(**values)


def job_from_row(row: Sequence[Any]) -> Job:
    """A Job from a row of ``JOB_COLUMNS``."""
    (
        job_id,
        delivery_id,
        event,
        payload,
        serial_key,
        installation_id,
        attempts,
        created_at,
        lease_owner,
        lease_until,
    ) = row
    return Job(
        id=job_id,
        delivery_id=delivery_id,
        event=event,
        payload=payload,
        serial_key=serial_key,
        installation_id=installation_id,
        attempts=attempts,
        created_at=float(created_at),
        lease_owner=lease_owner,
        lease_until=float(lease_until),
    )


def outcome_from_row(row: Sequence[Any]) -> JobOutcome:
    """A JobOutcome from a row of (status, attempts, last_error, reason)."""
    status, attempts, last_error, reason = row
    return JobOutcome(JobStatus(status), int(attempts), last_error, reason)


def insert_measurement(placeholder: str) -> str:
    """The statement storing one record (parameters: ``measurement_row``), unless its
    (repository, run, attempt, side, platform, metric) is stored already."""
    return (
        f"INSERT INTO measurements ({', '.join(MEASUREMENT_COLUMNS)})"
        f" VALUES ({', '.join([placeholder] * len(MEASUREMENT_COLUMNS))})"
        " ON CONFLICT (repo_id, run_id, run_attempt, side, platform, metric) DO NOTHING"
    )


def measurement_row(record: MeasurementRecord) -> tuple[Any, ...]:
    """The parameters of ``insert_measurement``; every text that may come from an artifact
    or a payload is made ``storable``."""
    text = storable
    return (
        record.repo_id,
        record.repo_full_name,
        record.installation_id,
        text(record.platform),
        text(record.metric),
        text(record.unit),
        record.better.value,
        record.scale.value,
        record.side,
        record.sha,
        record.run_id,
        record.run_attempt,
        record.workflow_id,
        text(record.workflow_name),
        record.event,
        text(record.branch),
        record.pr_number,
        record.from_fork,
        samples_text(record.samples),
        settings_text(record.settings),
        None if record.runner_name is None else text(record.runner_name),
        labels_text(record.runner_labels),
        record.recorded_at,
    )
