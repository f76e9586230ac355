"""Prometheus metrics of one perfbot process (served on ``GET /metrics``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


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
        self.queue_depth = Gauge(
            "perfbot_queue_depth",
            "Jobs queued or running, as last seen by this process.",
            registry=self.registry,
        )
        self.job_latency = Histogram(
            "perfbot_job_latency_seconds",
            "Time from a delivery's arrival to its job finishing.",
            ["event"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800),
            registry=self.registry,
        )
