"""POST /webhook served ahead of Starlette: what its error middleware did, it does itself."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from perfbot.app.ingest import WebhookEndpoint
from perfbot.app.settings import Settings
from perfbot.app.triage import sign
from perfbot.support.metrics import Metrics
from tests.harness import SECRET, settings_env


class BrokenStore:
    """A store whose disk has just failed."""

    async def record_delivery(self, *args: Any) -> bool:
        raise OSError("disk I/O error at /var/lib/perfbot/perfbot.db")


def endpoint(tmp_path: Path, store: Any) -> WebhookEndpoint:
    settings = Settings.from_env(settings_env("http://127.0.0.1:9", tmp_path / "db"))
    metrics = Metrics()
    return WebhookEndpoint(lambda: (settings, store, metrics, lambda: None), lambda: 0.0)


async def post(app: WebhookEndpoint, body: bytes, **headers: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://perfbot") as client:
        return await client.post("/webhook", content=body, headers=headers)


async def test_an_unexpected_error_is_a_500_without_details_and_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = b'{"action": "completed"}'
    headers = {
        "x-github-event": "workflow_run",
        "x-github-delivery": "guid-7",
        "x-hub-signature-256": sign(SECRET, body),
    }
    with caplog.at_level(logging.ERROR, logger="perfbot.app"):
        response = await post(endpoint(tmp_path, BrokenStore()), body, **headers)
    assert response.status_code == 500
    assert response.json() == {"error": "internal error: see the perfbot log"}
    assert "disk I/O" not in response.text
    (record,) = caplog.records
    assert record.exc_info is not None
    assert "disk I/O error" in str(record.exc_info[1])
    assert record.__dict__["delivery"] == "guid-7"


async def test_a_refused_delivery_is_answered_before_the_store_is_touched(tmp_path: Path) -> None:
    response = await post(endpoint(tmp_path, BrokenStore()), b"{}", **{"x-github-event": "push"})
    assert response.status_code == 401
    assert response.json() == {"error": "missing or malformed X-Hub-Signature-256 header"}


async def test_a_sender_that_hangs_up_mid_body_gets_no_answer_and_stores_nothing(
    tmp_path: Path,
) -> None:
    messages: list[dict[str, object]] = [
        {"type": "http.request", "body": b'{"action": ', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[object] = []

    async def receive() -> dict[str, object]:
        return messages.pop(0)

    async def send(message: object) -> None:
        sent.append(message)

    # A well-formed signature: a malformed one is refused before the body is read.
    signature = (b"x-hub-signature-256", b"sha256=" + b"0" * 64)
    scope = {"type": "http", "method": "POST", "path": "/webhook", "headers": [signature]}
    await endpoint(tmp_path, BrokenStore())(scope, receive, send)  # the store is never asked
    assert messages == []  # both messages were read
    assert sent == []
