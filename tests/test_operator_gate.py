"""``PERFBOT_OPERATOR_TOKEN``: /metrics and /dry-run answer only the operator's bearer token,
in constant time and without echoing it; /healthz and /webhook stay as they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfbot.app.settings import Settings, SettingsError
from tests.harness import World, in_process_service
from tests.test_settings import BASE

TOKEN = "f3" * 16


@pytest.mark.parametrize("page", ["/metrics", "/dry-run"])
def test_an_operator_page_asks_for_the_token(tmp_path: Path, page: str) -> None:
    world = World.create()
    with in_process_service(
        world, tmp_path / "db", PERFBOT_DRY_RUN="1", PERFBOT_OPERATOR_TOKEN=TOKEN
    ) as client:
        refusals = [
            client.get(page),
            client.get(page, headers={"authorization": f"Bearer {TOKEN[:-1]}x"}),
            client.get(page, headers={"authorization": TOKEN}),  # no scheme
            client.get(page, headers={"authorization": f"Basic {TOKEN}"}),
        ]
        allowed = client.get(page, headers={"authorization": f"Bearer {TOKEN}"})
        health = client.get("/healthz")
    for refused in refusals:
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert "PERFBOT_OPERATOR_TOKEN" in refused.text
        assert TOKEN not in refused.text
    assert allowed.status_code == 200
    assert health.status_code == 200  # the proxy's and the orchestrator's check: open


def test_without_a_token_the_pages_are_open_as_before(tmp_path: Path) -> None:
    world = World.create()
    with in_process_service(world, tmp_path / "db") as client:
        assert client.get("/metrics").status_code == 200


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("short", "at least 24 printable ASCII characters"),
        ("é" * 30, "at least 24 printable ASCII characters"),
        ("a" * 12 + " " + "b" * 12, "must not contain spaces"),
    ],
)
def test_a_weak_or_malformed_token_stops_start_up(token: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings.from_env({**BASE, "PERFBOT_OPERATOR_TOKEN": token})


def test_the_token_stays_out_of_the_settings_repr() -> None:
    settings = Settings.from_env({**BASE, "PERFBOT_OPERATOR_TOKEN": TOKEN})
    assert settings.operator_token == TOKEN
    assert TOKEN not in repr(settings)
