"""The web app: webhook ingest (``perfbot.app.ingest``), health and metrics, and the lifespan."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from perfbot.app.dryrun_page import dry_run_endpoint
from perfbot.app.ingest import WebhookEndpoint
from perfbot.app.measurements import MeasurementRetention
from perfbot.app.operator_gate import for_operator
from perfbot.app.redeliver import Redeliverer, Sleep
from perfbot.app.settings import Settings
from perfbot.app.worker import Worker
from perfbot.github.app import GitHubApp
from perfbot.github.dryrun import DryRun
from perfbot.github.pacing import Pacer
from perfbot.github.transport import Transport
from perfbot.store import Store, open_store
from perfbot.store.sqlite import WRITE_OUTCOMES, SQLiteStore
from perfbot.support import logs
from perfbot.support.metrics import Metrics

log = logging.getLogger("perfbot.app")

# Set by `perfbot serve` for the processes it starts when PERFBOT_PROCESSES > 1.
LOG_LEVEL_VARIABLE = "PERFBOT_LOG_LEVEL"


@dataclass
class Services:
    """What the lifespan opens and the routes use."""

    settings: Settings
    store: Store
    metrics: Metrics
    worker: Worker | None = None
    on_enqueue: Callable[[], None] = lambda: None


def _count_sqlite_writes(store: Store, metrics: Metrics) -> None:
    """Processes sharing one SQLite file wait for each other's writes: how often, as a
    metric, tells an operator when PostgreSQL would serve better."""
    if isinstance(store, SQLiteStore):
        # The children looked up once: a label lookup per write cost more than the count.
        counted = {outcome: metrics.sqlite_writes.labels(outcome) for outcome in WRITE_OUTCOMES}
        store.observe_writes(lambda outcome: counted[outcome].inc())


def create_app(
    settings: Settings,
    *,
    github_transport: Transport | None = None,
    run_workers: bool = True,
    clock: Callable[[], float] = time.time,
    redelivery_sleep: Sleep = asyncio.sleep,
    pace_sleep: Sleep = asyncio.sleep,
) -> PerfbotApp:
    """The ASGI app of ``perfbot serve``; the lifespan owns the store, GitHub and workers.

    ``redelivery_sleep``: how the sweep for missed deliveries waits, ``pace_sleep`` how a
    write waits for its installation's pace (tests pass their own, with ``clock``).
    """
    metrics = Metrics()
    holder: dict[str, Services] = {}
    # The writes of a dry run, kept for /dry-run (this process's; the log has them all).
    dry_run = DryRun(clock=clock) if settings.dry_run else None
    operator_token = settings.operator_token

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        store = open_store(settings.database_url)
        await store.setup()
        _count_sqlite_writes(store, metrics)
        services = Services(settings, store, metrics)
        # Every write of every installation in one pace, shared through the store.
        pacer = Pacer(
            store,
            interval=settings.write_pace_seconds,
            clock=clock,
            sleep=pace_sleep,
            metrics=metrics,
        )
        github = GitHubApp(
            settings.app_id,
            settings.private_key,
            settings.github_url,
            transport=github_transport,
            metrics=metrics,
            pacer=pacer,
            dry_run=dry_run,
            api_version=settings.github_api_version,
        )
        if dry_run is not None:
            log.warning(
                "dry run: nothing is written to GitHub; each write perfbot would make is "
                "logged (key would_write) and listed at GET /dry-run"
            )
        if run_workers:
            worker = Worker(
                store,
                github,
                concurrency=settings.workers,
                repo_disabled=settings.repo_disabled,
                metrics=metrics,
                clock=clock,
                lease_seconds=settings.lease_seconds,
                watch_by_default=settings.watch,
            )
            worker.start()
            services.worker, services.on_enqueue = worker, worker.wake
        for notice in settings.deprecations:
            log.warning(notice)
        redeliverer = None
        if settings.redelivery_minutes > 0:
            redeliverer = Redeliverer(
                github,
                store,
                interval=settings.redelivery_minutes * 60,
                sleep=redelivery_sleep,
                metrics=metrics,
                clock=clock,
            )
            redeliverer.start()
        else:
            log.info("the sweep for missed deliveries is off (PERFBOT_REDELIVERY_MINUTES is 0)")
        retention = MeasurementRetention(
            store, retention_days=settings.measurement_retention_days, clock=clock
        )
        retention.start()
        holder["services"] = services
        # Everything loaded so far (githubkit's and pydantic's models above all) lives as
        # long as the process: out of the collector's sight, the full collections that
        # request garbage triggers no longer walk it over and over.
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            await retention.stop()
            if redeliverer is not None:
                await redeliverer.stop()
            if services.worker is not None:
                await services.worker.stop()
            await github.close()
            await store.close()

    def services_for_ingest() -> tuple[Settings, Store, Metrics, Callable[[], None]]:
        services = holder["services"]
        return services.settings, services.store, services.metrics, services.on_enqueue

    async def healthz(request: Request) -> Response:
        services = holder["services"]
        depth = await services.store.queue_depth(clock())
        return JSONResponse({"status": "ok", "queue_depth": depth})

    async def metrics_endpoint(request: Request) -> Response:
        services = holder["services"]
        services.metrics.queue_depth.set(await services.store.queue_depth(clock()))
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    webhook = WebhookEndpoint(services_for_ingest, clock)
    return PerfbotApp(
        webhook,
        routes=[
            # Reached only by other methods (405): POST never gets this far.
            Route("/webhook", webhook, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            # For the operator only: restricted at the proxy, and by perfbot itself when
            # PERFBOT_OPERATOR_TOKEN is set.
            Route("/metrics", for_operator(metrics_endpoint, operator_token), methods=["GET"]),
            Route(
                "/dry-run",
                for_operator(dry_run_endpoint(dry_run), operator_token),
                methods=["GET"],
            ),
        ],
        lifespan=lifespan,
    )


class PerfbotApp(Starlette):
    """Starlette, with ``POST /webhook`` served before its middleware and router.

    The webhook is perfbot's one hot path (``perfbot.app.ingest``); everything else, the
    lifespan included, is plain Starlette.
    """

    def __init__(self, webhook: WebhookEndpoint, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._webhook = webhook

    @property
    def webhook(self) -> WebhookEndpoint:
        """``POST /webhook`` (``perfbot.app.fastpath`` answers a whole request with it)."""
        return self._webhook

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/webhook":
            await self._webhook(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)


def app_from_environment() -> Starlette:
    """The app of one of several ``perfbot serve`` processes (uvicorn's factory).

    The parent has already read the env file and checked the settings; a child reads
    the same environment again.
    """
    logs.configure(os.environ.get(LOG_LEVEL_VARIABLE, "info"))
    return create_app(Settings.from_env())
