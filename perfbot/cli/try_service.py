"""The servers of `perfbot try`, all on 127.0.0.1: `perfbot serve`'s own app and workers
(the real server, in this process), and any ASGI app such as the conversation page."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

from perfbot.app.processes import server_config
from perfbot.app.server import create_app
from perfbot.app.settings import Settings
from perfbot.sandbox.fakegithub import rsa_keypair

WEBHOOK_SECRET = "perfbot-try"
APP_ID = 4242
START_SECONDS = 20.0
STOP_SECONDS = 10.0


def settings_for(github_url: str, database: Path) -> Settings:
    """perfbot serve's settings against the stand-in: its App id and key, a SQLite file,
    writes unpaced (the stand-in has no secondary limits) and no sweep of the delivery log."""
    return Settings.from_env(
        {
            "PERFBOT_APP_ID": str(APP_ID),
            "PERFBOT_PRIVATE_KEY": rsa_keypair().private_pem,
            "PERFBOT_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "PERFBOT_GITHUB_URL": github_url,
            "PERFBOT_DATABASE_URL": str(database),
            "PERFBOT_WORKERS": "2",
            "PERFBOT_WRITE_PACE_SECONDS": "0",
            "PERFBOT_REDELIVERY_MINUTES": "0",
        }
    )


def _socket(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise OSError(f"port {port} on 127.0.0.1 is not free ({exc.strerror})") from None
    sock.listen(128)
    return sock


@contextmanager
def serving(app: Any, port: int = 0, *, lifespan: str = "off") -> Iterator[str]:
    """``app`` under uvicorn in a thread, on 127.0.0.1:``port`` (0: a free one); its URL."""
    sock = _socket(port)
    config = server_config(app, "127.0.0.1", port, lifespan=lifespan, http="h11")
    config.timeout_graceful_shutdown = 2
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: server.run(sockets=[sock]), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_SECONDS
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("a local server of perfbot try did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(STOP_SECONDS)
        sock.close()


@contextmanager
def perfbot_serve(settings: Settings) -> Iterator[str]:
    """`perfbot serve` (its app, its workers, its store) on a free port; its URL."""
    with serving(create_app(settings), lifespan="on") as url:
        yield url
