"""Operator settings: defaults, and one clear sentence per missing or invalid variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfbot.app.settings import Settings, SettingsError

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"
BASE = {"PERFBOT_APP_ID": "42", "PERFBOT_PRIVATE_KEY": PEM, "PERFBOT_WEBHOOK_SECRET": "zesecret"}


def test_defaults() -> None:
    settings = Settings.from_env(BASE)
    assert settings.app_id == 42
    assert settings.github_url == "https://api.github.com"
    assert settings.database_url == "perfbot.db"
    assert settings.workers >= 1
    assert settings.disabled_repos == ()
    assert "zesecret" not in repr(settings)  # secrets stay out of reprs and logs
    assert "PRIVATE KEY" not in repr(settings)


def test_key_from_a_file_and_escaped_newlines(tmp_path: Path) -> None:
    key = tmp_path / "app.pem"
    key.write_text(PEM + "\n")
    env = dict(BASE, PERFBOT_PRIVATE_KEY="")
    env["PERFBOT_PRIVATE_KEY_PATH"] = str(key)
    assert Settings.from_env(env).private_key.startswith("-----BEGIN RSA")
    one_line = dict(BASE, PERFBOT_PRIVATE_KEY=PEM.replace("\n", "\\n"))
    assert "\n" in Settings.from_env(one_line).private_key


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"PERFBOT_APP_ID": ""}, "PERFBOT_APP_ID is not set"),
        ({"PERFBOT_APP_ID": "my-app"}, "numeric id"),
        ({"PERFBOT_WEBHOOK_SECRET": ""}, "PERFBOT_WEBHOOK_SECRET is not set"),
        ({"PERFBOT_PRIVATE_KEY": ""}, "PERFBOT_PRIVATE_KEY or PERFBOT_PRIVATE_KEY_PATH is not set"),
        ({"PERFBOT_PRIVATE_KEY": "hunter2"}, "not a PEM key"),
        ({"PERFBOT_PRIVATE_KEY_PATH": "/nonexistent/key.pem"}, "not both"),
        ({"PERFBOT_GITHUB_URL": "ftp://x"}, "http(s) URL"),
        ({"PERFBOT_WORKERS": "0"}, "PERFBOT_WORKERS must be a number from 1 to 256"),
        ({"PERFBOT_PROCESSES": "two"}, "PERFBOT_PROCESSES must be a number from 1 to 64"),
        ({"PERFBOT_PROCESSES": "65"}, "PERFBOT_PROCESSES must be a number from 1 to 64"),
        ({"PERFBOT_LEASE_SECONDS": "0.5"}, "PERFBOT_LEASE_SECONDS must be seconds"),
        ({"PERFBOT_REDELIVERY_MINUTES": "11"}, "PERFBOT_REDELIVERY_MINUTES must be 0 (off) or"),
        ({"PERFBOT_REDELIVERY_MINUTES": "0.5"}, "minutes from 1 to 10, got '0.5'"),
        ({"PERFBOT_REDELIVERY_MINUTES": "nan"}, "PERFBOT_REDELIVERY_MINUTES must be"),
        ({"PERFBOT_REDELIVERY_MINUTES": "-1"}, "PERFBOT_REDELIVERY_MINUTES must be"),
        ({"PERFBOT_REDELIVERY_MINUTES": "six"}, "PERFBOT_REDELIVERY_MINUTES must be"),
        ({"PERFBOT_DISABLED_REPOS": "justaname"}, "owner/repo or owner/*"),
    ],
)
def test_invalid_settings_say_which_and_why(change: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Settings.from_env({**BASE, **change})


def test_unreadable_key_file() -> None:
    env = {**BASE, "PERFBOT_PRIVATE_KEY": "", "PERFBOT_PRIVATE_KEY_PATH": "/nonexistent/k.pem"}
    with pytest.raises(SettingsError, match="cannot be read"):
        Settings.from_env(env)


def test_disabled_repo_patterns() -> None:
    settings = Settings.from_env({**BASE, "PERFBOT_DISABLED_REPOS": "acme/*, Other/Repo"})
    assert settings.repo_disabled("acme/anything")
    assert settings.repo_disabled("other/repo")
    assert not settings.repo_disabled("other/repo2")


def test_processes_default_to_one_and_take_a_number() -> None:
    assert Settings.from_env(BASE).processes == 1
    assert Settings.from_env({**BASE, "PERFBOT_PROCESSES": "4"}).processes == 4


def test_max_body_bytes_defaults_to_5_mib_and_stays_within_githubs_ceiling() -> None:
    assert Settings.from_env(BASE).max_body_bytes == 5 * 1024 * 1024
    assert Settings.from_env({**BASE, "PERFBOT_MAX_BODY_BYTES": "65536"}).max_body_bytes == 65536
    for bad in ("1k", "65535", str(25 * 1024 * 1024 + 1), "-1", "²"):
        with pytest.raises(SettingsError, match=r"PERFBOT_MAX_BODY_BYTES must be bytes from 65536"):
            Settings.from_env({**BASE, "PERFBOT_MAX_BODY_BYTES": bad})


@pytest.mark.parametrize(
    ("raw", "minutes"), [("", 5.0), ("0", 0.0), ("1", 1.0), (" 2.5 ", 2.5), ("10", 10.0)]
)
def test_the_redelivery_period_is_minutes_at_most_ten(raw: str, minutes: float) -> None:
    settings = Settings.from_env({**BASE, "PERFBOT_REDELIVERY_MINUTES": raw})
    assert settings.redelivery_minutes == minutes
    assert settings.deprecations == ()


@pytest.mark.parametrize(
    ("change", "minutes", "effect"),
    [
        ({"PERFBOT_REDELIVERY_HOURS": "0"}, 0.0, "its 0 still turns the sweep off"),
        ({"PERFBOT_REDELIVERY_HOURS": "6"}, 5.0, "its value is ignored, the sweep runs every 5"),
        ({"PERFBOT_REDELIVERY_HOURS": "six"}, 5.0, "its value is ignored"),
        (
            {"PERFBOT_REDELIVERY_HOURS": "0", "PERFBOT_REDELIVERY_MINUTES": "3"},
            3.0,
            "it is ignored, PERFBOT_REDELIVERY_MINUTES is set",
        ),
    ],
)
def test_the_former_redelivery_hours_is_deprecated(
    change: dict[str, str], minutes: float, effect: str
) -> None:
    settings = Settings.from_env({**BASE, **change})
    assert settings.redelivery_minutes == minutes
    (notice,) = settings.deprecations
    assert notice.startswith(f"PERFBOT_REDELIVERY_HOURS is deprecated ({effect}")
    assert "set PERFBOT_REDELIVERY_MINUTES instead" in notice
    assert "\n" not in notice
