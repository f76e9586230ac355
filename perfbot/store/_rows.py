"""The columns the store's statements name (a job's, a pull request's state, a
measurement's) and the conversions between rows and perfbot's types, shared by both
backends: a row read back becomes a Job, a JobOutcome or a PullState; a record to store
becomes its row."""

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


def pull_params(state: PullState) -> dict[str, Any]:
    """The parameters of a PR's state, by column name."""
    return {name: getattr(state, name) for name in PULL_COLUMNS}


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


def measurement_row(record: MeasurementRecord) -> tuple[Any, ...]:
    """A record's values in ``MEASUREMENT_COLUMNS``' order (a bulk write binds them by
    position); every text that may come from an artifact or a payload is ``storable``."""
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
