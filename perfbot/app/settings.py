"""Operator settings from the environment, checked once at start-up."""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from dotenv import dotenv_values

from perfbot.errors import PerfbotError
from perfbot.github.wire import API_VERSION, API_VERSIONS

DEFAULT_GITHUB_URL = "https://api.github.com"
DEFAULT_DATABASE_URL = "perfbot.db"
DEFAULT_WORKERS = 16
# Processes of one `perfbot serve` sharing its port (and its SQLite file or PostgreSQL):
# a process runs Python on one core at a time, so a busy host wants one per core.
DEFAULT_PROCESSES = 1
MAX_PROCESSES = 64
# How long a claimed job stays claimed without a sign of life from its worker; after
# that (the process died) another worker, or the restarted process, takes it over. The
# worker renews it every third of it while the job runs, so a long job keeps it; short,
# so that a killed process's jobs resume within 30 s. No shorter than 10 s: a renewal can
# wait 5 s for SQLite's write lock and must still land well inside the lease.
DEFAULT_LEASE_SECONDS = 20.0
MIN_LEASE_SECONDS = 10.0
MAX_LEASE_SECONDS = 3600.0
# The largest webhook body perfbot reads. Its events are tens of KB (a workflow_run is
# 20-30 KB; a comment and its issue at most 65,536 characters each, under 1 MB); an
# installation event lists repositories at ~150 bytes each, so 5 MiB holds 30,000 of them.
# GitHub's own ceiling is 25 MB: nothing larger can be a delivery.
DEFAULT_MAX_BODY_BYTES = 5 * 1024 * 1024
MIN_MAX_BODY_BYTES = 64 * 1024
MAX_MAX_BODY_BYTES = 25 * 1024 * 1024
# How often, in minutes, the App's delivery log is checked for deliveries that never
# reached perfbot (GitHub does not redeliver on its own); 0 turns it off. A sweep with
# nothing new costs one request, so at most 10 minutes: a delivery that failed while
# perfbot was running (a deploy, a network blip) is sent again within minutes.
DEFAULT_REDELIVERY_MINUTES = 5.0
MIN_REDELIVERY_MINUTES = 1.0
MAX_REDELIVERY_MINUTES = 10.0
# How long the measurements of every report are kept for the noise model, in days. Noise
# is learned from measurements of one commit, and a target branch moves on within weeks:
# half a year holds many commits' worth, and older noise says little about today's runners.
DEFAULT_MEASUREMENT_RETENTION_DAYS = 180
MIN_MEASUREMENT_RETENTION_DAYS = 1
MAX_MEASUREMENT_RETENTION_DAYS = 3650
# The seconds between two GitHub writes of one installation (GitHub's best practice: at
# least one; octokit's throttling plugin: one, and three between writes that notify
# people). 0 only for a server without secondary limits (GitHub Enterprise Server with
# them switched off, a test double): then GitHub.com's minute's and hour's caps do not
# apply either, and only the server's own Retry-After and rate-limit resets pace writes.
DEFAULT_WRITE_PACE_SECONDS = 1.0
MAX_WRITE_PACE_SECONDS = 60.0
# The period's former variable, in hours: only its 0 (off) is still honoured.
DEPRECATED_REDELIVERY_HOURS = "PERFBOT_REDELIVERY_HOURS"


# The env file `perfbot serve` reads (`perfbot setup` writes it): PERFBOT_ENV_FILE, else .env.
ENV_FILE_VARIABLE = "PERFBOT_ENV_FILE"
DEFAULT_ENV_FILE = ".env"
_CREDENTIALS = (
    "PERFBOT_APP_ID",
    "PERFBOT_PRIVATE_KEY",
    "PERFBOT_PRIVATE_KEY_PATH",
    "PERFBOT_WEBHOOK_SECRET",
)


class SettingsError(PerfbotError):
    """A setting is missing or invalid; the message is one sentence for the operator."""


def load_env_file(environ: MutableMapping[str, str]) -> Path | None:
    """Add the variables of the env file to ``environ``, never replacing one already set.

    The file is ``PERFBOT_ENV_FILE`` (it must exist), else ``.env`` in the working directory
    when there is one. Values are taken literally (no ``${...}`` expansion). Returns the file.
    """
    named = environ.get(ENV_FILE_VARIABLE, "").strip()
    path = Path(named or DEFAULT_ENV_FILE)
    if not path.is_file():
        if named:
            raise SettingsError(f"{ENV_FILE_VARIABLE} names {named}, which is not a file.")
        return None
    try:
        values = dotenv_values(path, interpolate=False, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise SettingsError(f"The env file {path} cannot be read: {reason}.") from None
    for name, value in values.items():
        if value is not None and name not in environ:
            environ[name] = value
    return path


@dataclass(frozen=True, slots=True)
class Settings:
    app_id: int
    private_key: str = field(repr=False)
    webhook_secret: str = field(repr=False)
    github_url: str = DEFAULT_GITHUB_URL
    # The REST API version of every request (a GitHub Enterprise Server may serve only the
    # older one).
    github_api_version: str = API_VERSION
    database_url: str = DEFAULT_DATABASE_URL
    disabled_repos: tuple[str, ...] = ()
    workers: int = DEFAULT_WORKERS
    processes: int = DEFAULT_PROCESSES
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    redelivery_minutes: float = DEFAULT_REDELIVERY_MINUTES
    measurement_retention_days: int = DEFAULT_MEASUREMENT_RETENTION_DAYS
    write_pace_seconds: float = DEFAULT_WRITE_PACE_SECONDS
    # Whether the default branch's watch runs where a repository says nothing (`watch:`).
    watch: bool = True
    # Nothing written to GitHub: every write is logged and listed at /dry-run instead.
    dry_run: bool = False
    # What /metrics and /dry-run ask for (Authorization: Bearer …); None: the proxy guards them.
    operator_token: str | None = field(default=None, repr=False)
    # One sentence per deprecated variable that was set, for the service to log.
    deprecations: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read ``PERFBOT_*`` variables; raises SettingsError naming the variable."""
        env = os.environ if environ is None else environ
        return cls(
            app_id=_app_id(env),
            private_key=_private_key(env),
            webhook_secret=_required(env, "PERFBOT_WEBHOOK_SECRET"),
            github_url=_github_url(env),
            github_api_version=github_api_version(env),
            database_url=env.get("PERFBOT_DATABASE_URL", "").strip() or DEFAULT_DATABASE_URL,
            disabled_repos=_patterns(env.get("PERFBOT_DISABLED_REPOS", "")),
            workers=_workers(env),
            processes=_processes(env),
            lease_seconds=_lease(env),
            max_body_bytes=_max_body_bytes(env),
            redelivery_minutes=_redelivery_minutes(env),
            measurement_retention_days=_measurement_retention_days(env),
            write_pace_seconds=_write_pace_seconds(env),
            watch=_switch(env, "PERFBOT_WATCH", default=True),
            dry_run=_switch(env, "PERFBOT_DRY_RUN", default=False),
            operator_token=_operator_token(env),
            deprecations=_deprecations(env),
        )

    def repo_disabled(self, full_name: str) -> bool:
        """Whether the operator denies ``owner/repo`` (patterns like ``owner/*``)."""
        lowered = full_name.lower()
        return any(fnmatchcase(lowered, pattern) for pattern in self.disabled_repos)


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise SettingsError(
            f"{name} is not set: perfbot needs it to talk to GitHub "
            "(see `perfbot setup` or docs/operators/settings.md)."
        )
    return value


# A token anyone could guess protects nothing; `openssl rand -hex 32` gives 64 characters.
MIN_OPERATOR_TOKEN_LENGTH = 24


def _operator_token(env: Mapping[str, str]) -> str | None:
    token = env.get("PERFBOT_OPERATOR_TOKEN", "").strip()
    if not token:
        return None
    if len(token) < MIN_OPERATOR_TOKEN_LENGTH or not token.isascii() or not token.isprintable():
        raise SettingsError(
            f"PERFBOT_OPERATOR_TOKEN must be at least {MIN_OPERATOR_TOKEN_LENGTH} printable "
            "ASCII characters (make one with `openssl rand -hex 32`)."
        )
    if " " in token:
        raise SettingsError("PERFBOT_OPERATOR_TOKEN must not contain spaces.")
    return token


def _app_id(env: Mapping[str, str]) -> int:
    if not any(env.get(name, "").strip() for name in _CREDENTIALS):
        raise SettingsError(
            "PERFBOT_APP_ID is not set, nor any other GitHub App credential: register the App "
            "with `perfbot setup --public-url https://<this host>` (it writes them to .env), "
            "or set PERFBOT_APP_ID, PERFBOT_PRIVATE_KEY_PATH and PERFBOT_WEBHOOK_SECRET."
        )
    raw = _required(env, "PERFBOT_APP_ID")
    if not raw.isdigit() or int(raw) <= 0:
        raise SettingsError(f"PERFBOT_APP_ID must be the App's numeric id, got {raw[:20]!r}.")
    return int(raw)


def _private_key(env: Mapping[str, str]) -> str:
    inline = env.get("PERFBOT_PRIVATE_KEY", "").strip()
    path = env.get("PERFBOT_PRIVATE_KEY_PATH", "").strip()
    if inline and path:
        raise SettingsError("Set PERFBOT_PRIVATE_KEY or PERFBOT_PRIVATE_KEY_PATH, not both.")
    if path:
        try:
            inline = Path(path).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not a text file"
            raise SettingsError(
                f"PERFBOT_PRIVATE_KEY_PATH {path} cannot be read: {reason}."
            ) from None
    if not inline:
        raise SettingsError(
            "PERFBOT_PRIVATE_KEY or PERFBOT_PRIVATE_KEY_PATH is not set: perfbot needs the "
            "App's private key (a .pem file from the App's settings page)."
        )
    # Keys pasted into one-line environments often carry literal "\n" sequences.
    inline = inline.replace("\\n", "\n")
    if "-----BEGIN" not in inline or "PRIVATE KEY-----" not in inline:
        raise SettingsError(
            "The App's private key is not a PEM key (it should start with "
            "-----BEGIN RSA PRIVATE KEY-----)."
        )
    return inline + "\n"


def _github_url(env: Mapping[str, str]) -> str:
    url = env.get("PERFBOT_GITHUB_URL", "").strip() or DEFAULT_GITHUB_URL
    if not url.startswith(("https://", "http://")):
        raise SettingsError(f"PERFBOT_GITHUB_URL must be an http(s) URL, got {url[:60]!r}.")
    return url.rstrip("/")


def github_api_version(env: Mapping[str, str]) -> str:
    """``PERFBOT_GITHUB_API_VERSION`` checked (the App's and ``perfbot comment``'s)."""
    version = env.get("PERFBOT_GITHUB_API_VERSION", "").strip() or API_VERSION
    if version not in API_VERSIONS:
        raise SettingsError(
            f"PERFBOT_GITHUB_API_VERSION must be one of {', '.join(API_VERSIONS)} (the REST "
            f"API versions perfbot speaks), got {version[:20]!r}."
        )
    return version


def _patterns(raw: str) -> tuple[str, ...]:
    patterns = tuple(p.strip().lower() for p in raw.split(",") if p.strip())
    for pattern in patterns:
        if "/" not in pattern:
            raise SettingsError(
                f"PERFBOT_DISABLED_REPOS entries are owner/repo or owner/*, got {pattern!r}."
            )
    return patterns


_ON, _OFF = frozenset({"on", "true", "1", "yes"}), frozenset({"off", "false", "0", "no"})


def _switch(env: Mapping[str, str], name: str, *, default: bool) -> bool:
    """``on`` or ``off`` (or true/false, 1/0, yes/no, any case); unset or empty: ``default``."""
    value = env.get(name, "").strip().lower()
    if not value:
        return default
    if value in _ON | _OFF:
        return value in _ON
    raise SettingsError(f"{name} must be on or off, got {value[:20]!r}.")


def _workers(env: Mapping[str, str]) -> int:
    return _whole_number(env, "PERFBOT_WORKERS", DEFAULT_WORKERS, 256)


def _processes(env: Mapping[str, str]) -> int:
    return _whole_number(env, "PERFBOT_PROCESSES", DEFAULT_PROCESSES, MAX_PROCESSES)


def _whole_number(env: Mapping[str, str], name: str, default: int, highest: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= highest:
        raise SettingsError(f"{name} must be a number from 1 to {highest}, got {raw[:20]!r}.")
    return int(raw)


def _max_body_bytes(env: Mapping[str, str]) -> int:
    raw = env.get("PERFBOT_MAX_BODY_BYTES", "").strip()
    if not raw:
        return DEFAULT_MAX_BODY_BYTES
    if (
        not (raw.isascii() and raw.isdigit())
        or not MIN_MAX_BODY_BYTES <= int(raw) <= MAX_MAX_BODY_BYTES
    ):
        raise SettingsError(
            f"PERFBOT_MAX_BODY_BYTES must be bytes from {MIN_MAX_BODY_BYTES} (64 KiB) to "
            f"{MAX_MAX_BODY_BYTES} (25 MiB, GitHub's ceiling), got {raw[:20]!r}."
        )
    return int(raw)


def _lease(env: Mapping[str, str]) -> float:
    raw = env.get("PERFBOT_LEASE_SECONDS", "").strip()
    if not raw:
        return DEFAULT_LEASE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not MIN_LEASE_SECONDS <= value <= MAX_LEASE_SECONDS:
        raise SettingsError(
            f"PERFBOT_LEASE_SECONDS must be seconds from {MIN_LEASE_SECONDS:g}"
            f" to {MAX_LEASE_SECONDS:g}, got {raw[:20]!r}."
        )
    return value


def _redelivery_minutes(env: Mapping[str, str]) -> float:
    raw = env.get("PERFBOT_REDELIVERY_MINUTES", "").strip()
    if not raw:
        # Set to 0 under its former name, the sweep stays off.
        return 0.0 if _redelivery_hours_off(env) else DEFAULT_REDELIVERY_MINUTES
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value != 0 and not MIN_REDELIVERY_MINUTES <= value <= MAX_REDELIVERY_MINUTES:
        raise SettingsError(
            f"PERFBOT_REDELIVERY_MINUTES must be 0 (off) or minutes from 1 to 10, got {raw[:20]!r}."
        )
    return value


def _measurement_retention_days(env: Mapping[str, str]) -> int:
    raw = env.get("PERFBOT_MEASUREMENT_RETENTION_DAYS", "").strip()
    if not raw:
        return DEFAULT_MEASUREMENT_RETENTION_DAYS
    low, high = MIN_MEASUREMENT_RETENTION_DAYS, MAX_MEASUREMENT_RETENTION_DAYS
    if not (raw.isascii() and raw.isdigit()) or not low <= int(raw) <= high:
        raise SettingsError(
            f"PERFBOT_MEASUREMENT_RETENTION_DAYS must be whole days from {low} to {high},"
            f" got {raw[:20]!r}."
        )
    return int(raw)


def _write_pace_seconds(env: Mapping[str, str]) -> float:
    raw = env.get("PERFBOT_WRITE_PACE_SECONDS", "").strip()
    if not raw:
        return DEFAULT_WRITE_PACE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= MAX_WRITE_PACE_SECONDS:
        raise SettingsError(
            f"PERFBOT_WRITE_PACE_SECONDS must be seconds from 0 to {MAX_WRITE_PACE_SECONDS:g},"
            f" got {raw[:20]!r}."
        )
    return value


def _redelivery_hours_off(env: Mapping[str, str]) -> bool:
    try:
        return float(env.get(DEPRECATED_REDELIVERY_HOURS, "").strip()) == 0
    except ValueError:
        return False


def _deprecations(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get(DEPRECATED_REDELIVERY_HOURS, "").strip()
    if not raw:
        return ()
    if env.get("PERFBOT_REDELIVERY_MINUTES", "").strip():
        effect = "it is ignored, PERFBOT_REDELIVERY_MINUTES is set"
    elif _redelivery_hours_off(env):
        effect = "its 0 still turns the sweep off"
    else:
        effect = (
            f"its value is ignored, the sweep runs every {DEFAULT_REDELIVERY_MINUTES:g} minutes"
        )
    return (
        f"{DEPRECATED_REDELIVERY_HOURS} is deprecated ({effect}): "
        "set PERFBOT_REDELIVERY_MINUTES instead (0 turns the sweep off, else 1 to 10).",
    )
