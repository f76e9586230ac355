"""Several ``perfbot serve`` processes on one port (``PERFBOT_PROCESSES`` > 1).

uvicorn's supervisor binds the socket once and starts the processes; each builds its
app from the environment (``perfbot.app.app_from_environment``). The processes share
the store (SQLite in WAL mode, or PostgreSQL), which already serialises the jobs of one
pull request and hands each job to one worker, so they need nothing else in common.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.supervisors import Multiprocess

from perfbot.app import LOG_LEVEL_VARIABLE
from perfbot.metrics import MULTIPROCESS_METRICS_VARIABLE

APP_FACTORY = "perfbot.app:app_from_environment"


class _Config(uvicorn.Config):
    def bind_socket(self) -> socket.socket:
        sock = super().bind_socket()
        # uvicorn creates this socket with proto 0, so asyncio does not set TCP_NODELAY on
        # the connections it accepts; set here, every accepted connection inherits it.
        # Without it a response written in two parts waits 40 ms for a delayed ACK.
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock


def server_config(
    app: Callable[..., Any] | str, host: str, port: int, **extra: Any
) -> uvicorn.Config:
    """uvicorn as perfbot runs it, in one process or several.

    No proxy headers: perfbot logs no client address and trusts none (a delivery's
    signature is its only credential), and reading ``X-Forwarded-*`` cost every request.
    No ``Server`` header either.
    """
    return _Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="on",
        proxy_headers=False,
        server_header=False,
        **extra,
    )


def serve_processes(host: str, port: int, count: int, log_level: str) -> None:
    """Run ``count`` serving processes until interrupted (SIGINT or SIGTERM)."""
    with tempfile.TemporaryDirectory(prefix="perfbot-metrics-") as metrics_dir:
        # Inherited by the processes: /metrics sums the values of all of them.
        os.environ[MULTIPROCESS_METRICS_VARIABLE] = metrics_dir
        os.environ[LOG_LEVEL_VARIABLE] = log_level
        config = server_config(APP_FACTORY, host, port, factory=True, workers=count)
        Multiprocess(config, sockets=[config.bind_socket()]).run()
