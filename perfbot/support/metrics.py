"""Prometheus metrics of perfbot (served on ``GET /metrics``).

With ``PERFBOT_PROCESSES`` > 1 every process writes its values to files in the folder
``PROMETHEUS_MULTIPROC_DIR`` names (prometheus-client's multiprocess mode, chosen when
the library is imported), and ``/metrics`` answers the sum over all of them.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

MULTIPROCESS_METRICS_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


class Metrics:
    """The process's counters, in their own registry so tests can build fresh ones."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.deliveries = Counter(
            "perfbot_deliveries_total",
            "Webhook deliveries received, by event and outcome.",
            ["event", "outcome"],
            registry=self.registry,
        )
        self.jobs = Counter(
            "perfbot_jobs_total",
            "Jobs finished, by event and outcome (done, retried, failed).",
            ["event", "outcome"],
            registry=self.registry,
        )
        self.github_calls = Counter(
            "perfbot_github_calls_total",
            "Requests to the GitHub API, by method and status (or error).",
            ["method", "status"],
            registry=self.registry,
        )
        self.github_waiting = Gauge(
            "perfbot_github_requests_waiting",
            "GitHub requests waiting for their installation's pace, by kind (write, notify:"
            " a write that notifies people, read: slowed by a low rate limit).",
            ["kind"],
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.github_wait = Histogram(
            "perfbot_github_pace_wait_seconds",
            "How long a GitHub request waited for its installation's pace, by kind.",
            ["kind"],
            buckets=(0.1, 0.5, 1, 2, 3, 5, 10, 30, 60, 300),
            registry=self.registry,
        )
        self.github_remaining = Gauge(
            "perfbot_github_rate_limit_remaining",
            "The lowest x-ratelimit-remaining GitHub reported for an installation whose"
            " window has not reset yet.",
            registry=self.registry,
            multiprocess_mode="min",
        )
        self.jobs_deferred = Counter(
            "perfbot_jobs_deferred_total",
            "Jobs sent back to the queue to wait for their installation's turn (not failures).",
            ["event"],
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "perfbot_queue_depth",
            "Jobs queued or running, as last seen by this process.",
            registry=self.registry,
            # Every process reads the same shared queue: the latest reading is the answer.
            multiprocess_mode="mostrecent",
        )
        self.redeliveries = Counter(
            "perfbot_redeliveries_total",
            "Missed webhook deliveries perfbot asked GitHub to redeliver, by event.",
            ["event"],
            registry=self.registry,
        )
        self.sqlite_writes = Counter(
            "perfbot_sqlite_loop_writes_total",
            "Small SQLite writes tried on the event loop's connection, by outcome: at_once"
            " (committed without waiting), lock_held (another connection, most often another"
            " process, held the write lock: the write waited for it, a moment on the loop, then"
            " on the store's thread).",
            ["outcome"],
            registry=self.registry,
        )
        self.job_latency = Histogram(
            "perfbot_job_latency_seconds",
            "Time from a delivery's arrival to its job finishing.",
            ["event"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800),
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        """The text ``/metrics`` answers: this process's, or every process's together."""
        if os.environ.get(MULTIPROCESS_METRICS_VARIABLE):
            combined = CollectorRegistry()
            MultiProcessCollector(combined)  # type: ignore[no-untyped-call]
            return generate_latest(combined)
        return generate_latest(self.registry)
