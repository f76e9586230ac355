"""The operator kit in ``deploy/``: the compose file is valid Compose, and the kit agrees with
itself and with perfbot (settings, port, served paths, limits the README requires).

Every check is a function of the kit's folder returning what is wrong with it: the real kit
has nothing wrong, and each check is shown to speak up on a copy with one thing broken.
``caddy adapt`` and ``caddy validate`` read the Caddyfile without its ``rate_limit`` block,
a directive of the caddy-ratelimit module that stock caddy does not know; that block is
checked as text here and compiled into the proxy's image by deploy/caddy/Dockerfile, whose
build fails without it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import shutil
import socket
import subprocess
import textwrap
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from jsonschema import Draft7Validator

from perfbot.app import settings as settings_module
from perfbot.app.server import create_app
from perfbot.app.settings import Settings, load_env_file
from perfbot.sandbox.fakegithub import rsa_keypair
from tests.deploykit import (
    DEPLOY,
    InterpolationError,
    Json,
    environment,
    handlers,
    interpolate,
    load_compose,
    read_env_example,
    run_caddy,
    schema,
    variables,
    without_block,
)

Check = Callable[[Path], list[str]]

# What perfbot reads: every PERFBOT_ name settings.py knows, less the deprecated one.
SETTINGS = set(re.findall(r'"(PERFBOT_[A-Z_]+)"', Path(settings_module.__file__).read_text()))
SETTINGS -= {settings_module.DEPRECATED_REDELIVERY_HOURS}
# Never inline in the compose file: they are files in deploy/secrets/.
SECRET_VARIABLES = ("PERFBOT_APP_ID", "PERFBOT_PRIVATE_KEY", "PERFBOT_WEBHOOK_SECRET")
GHES_API = "https://ghes.example.com/api/v3"
# The limits of the README's section Reverse proxy.
HEAD_AND_BODY_SECONDS = 10
HEAD_BYTES = 16 * 1024
DESCRIPTORS = 2048 + 256
NANOSECONDS = 1_000_000_000


def served() -> dict[str, set[str]]:
    """Path -> methods perfbot's server answers (its routes, without starting it)."""
    app = create_app(Settings(app_id=1, private_key="-", webhook_secret="-"))
    return {route.path: set(route.methods or ()) for route in app.routes}  # type: ignore[attr-defined]


def example_env(kit: Path) -> dict[str, str]:
    """The variables compose sees when .env is a copy of .env.example."""
    return read_env_example(kit / ".env.example").active


def compose(kit: Path) -> Json:
    """The compose file as Compose reads it with .env = .env.example."""
    document: Json = interpolate(load_compose(kit / "compose.yaml"), example_env(kit))
    return document


def services(kit: Path) -> dict[str, Json]:
    found: dict[str, Json] = compose(kit)["services"]
    return found


def app_services(kit: Path) -> dict[str, Json]:
    """The services that run ``perfbot serve``: the replicas."""
    return {
        name: service
        for name, service in services(kit).items()
        if "perfbot serve" in " ".join(service.get("command") or [])
    }


def app_port(service: Json) -> int:
    match = re.search(r"--port (\d+)", " ".join(service["command"]))
    assert match, "the replicas' command names no --port"
    return int(match[1])


def caddy_env(kit: Path) -> dict[str, str]:
    return environment(services(kit)["caddy"])


def adapted(kit: Path, *, loopback_upstreams: bool = False) -> tuple[Json | None, str]:
    """``caddy adapt`` of the Caddyfile (without its rate_limit block), in the caddy
    service's environment; ``loopback_upstreams``: then ``caddy validate`` of the same."""
    text, _ = without_block((kit / "Caddyfile").read_text(encoding="utf-8"), "rate_limit")
    work = kit / ".caddy"
    work.mkdir(exist_ok=True)
    if loopback_upstreams:  # validation provisions health checkers: they may only dial here
        for name in app_services(kit):
            text = text.replace(f"{name}:", "127.0.0.1:")
    (work / "Caddyfile").write_text(text, encoding="utf-8")
    env = caddy_env(kit)
    if loopback_upstreams:
        result = run_caddy("validate", "--config", "Caddyfile", cwd=work, env=env)
        return None, "" if result.returncode == 0 else result.stderr.strip()[-500:]
    result = run_caddy("adapt", "--config", "Caddyfile", cwd=work, env=env)
    if result.returncode != 0:
        return None, result.stderr.strip()[-500:]
    document: Json = json.loads(result.stdout)
    return document, ""


# -- the checks ------------------------------------------------------------------------------


def schema_problems(kit: Path) -> list[str]:
    """The compose file against the Compose Specification's JSON schema, interpolated."""
    try:
        document = compose(kit)
    except InterpolationError as exc:
        return [f"interpolation: {exc}"]
    validator = Draft7Validator(schema())
    return [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(document)
    ]


def variable_problems(kit: Path) -> list[str]:
    """Every variable compose reads is described in .env.example; every {$VAR} the
    Caddyfile reads is given to the caddy service."""
    documented = read_env_example(kit / ".env.example").names
    problems = [
        f"compose.yaml reads {name}, which .env.example does not describe"
        for name in sorted(variables((kit / "compose.yaml").read_text()) - documented)
    ]
    lines = (kit / "Caddyfile").read_text().splitlines()
    caddyfile = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
    given = set(caddy_env(kit))
    for name in sorted(set(re.findall(r"\{\$([A-Za-z_][A-Za-z0-9_]*)", caddyfile)) - given):
        problems.append(f"the Caddyfile reads {{${name}}}, which the caddy service is not given")
    return problems


def setting_problems(kit: Path) -> list[str]:
    """Every PERFBOT_ name of the kit is a setting perfbot reads, and every default that
    .env.example shows is perfbot's default."""
    names = set(re.findall(r"PERFBOT_[A-Z_]+", (kit / "compose.yaml").read_text()))
    example = read_env_example(kit / ".env.example")
    names |= {name for name in example.names if name.startswith("PERFBOT_")}
    problems = [f"{name} is not a setting of perfbot" for name in sorted(names - SETTINGS)]
    base = {"PERFBOT_APP_ID": "1", "PERFBOT_PRIVATE_KEY": rsa_keypair().private_pem}
    base["PERFBOT_WEBHOOK_SECRET"] = "-"
    defaults = Settings.from_env(base)
    for name, value in sorted(example.documented.items()):
        if name in SETTINGS and Settings.from_env({**base, name: value}) != defaults:
            problems.append(f".env.example shows {name}={value}, which is not perfbot's default")
    return problems


def secret_problems(kit: Path) -> list[str]:
    """No credential inline: the services take them as secrets, files in deploy/secrets/."""
    document = compose(kit)
    problems = []
    for name, service in document["services"].items():
        for variable, value in environment(service).items():
            if variable in SECRET_VARIABLES or (
                "PASSWORD" in variable and not variable.endswith("_FILE")
            ):
                problems.append(f"{name} sets {variable} inline")
            if "/run/secrets/" in value:
                secret = value.rpartition("/run/secrets/")[2].split()[0]
                if secret not in (service.get("secrets") or []):
                    problems.append(f"{name} reads /run/secrets/{secret} but is not given it")
    for name, secret in document.get("secrets", {}).items():
        if not str(secret.get("file", "")).startswith("./secrets/"):
            problems.append(f"the secret {name} is not a file in deploy/secrets/")
    example = (kit / ".env.example").read_text()
    for line in example.splitlines():
        name, sep, value = line.lstrip("#").partition("=")
        if sep and re.search(r"SECRET|PASSWORD|PRIVATE_KEY|TOKEN", name) and value.strip():
            problems.append(f".env.example gives {name} a value")
    if "PRIVATE KEY" in example:
        problems.append(".env.example holds a private key")
    return problems


def service_problems(kit: Path) -> list[str]:
    """Restart policies and health checks everywhere; start-up order by health; the data
    of PostgreSQL in a named volume; descriptors enough for perfbot's connection cap."""
    document = compose(kit)
    problems = []
    for name, service in document["services"].items():
        if service.get("restart") not in ("always", "unless-stopped", "on-failure"):
            problems.append(f"{name} has no restart policy")
        check = service.get("healthcheck") or {}
        if not check.get("test") or check.get("disable"):
            problems.append(f"{name} has no health check")
        for needed, how in (service.get("depends_on") or {}).items():
            if not isinstance(how, dict) or how.get("condition") != "service_healthy":
                problems.append(f"{name} starts before {needed} is healthy")
    replicas = app_services(kit)
    if len(replicas) < 2:
        problems.append(f"{len(replicas)} perfbot replica(s), not two")
    proxy_waits = set(document["services"]["caddy"].get("depends_on") or {})
    for name, service in replicas.items():
        if name not in proxy_waits:
            problems.append(f"caddy does not wait for {name}")
        if "postgres" not in (service.get("depends_on") or {}):
            problems.append(f"{name} does not wait for postgres")
        nofile = (service.get("ulimits") or {}).get("nofile") or {}
        if not isinstance(nofile, dict) or int(nofile.get("soft", 0)) < DESCRIPTORS:
            problems.append(f"{name} may open fewer than {DESCRIPTORS} descriptors")
    volumes = document["services"]["postgres"].get("volumes") or []
    if not any(
        str(v).endswith(":/var/lib/postgresql/data")
        and str(v).split(":")[0] in document.get("volumes", {})
        for v in volumes
    ):
        problems.append("PostgreSQL's data is not in a named volume")
    return problems


def caddy_problems(kit: Path) -> list[str]:
    """The proxy forwards the served paths, and only them, to every replica on its port,
    with the README's limits; the Caddyfile adapts, validates and is formatted."""
    config, error = adapted(kit)
    if config is None:
        return [f"caddy adapt: {error}"]
    problems = []
    _, validation_error = adapted(kit, loopback_upstreams=True)
    if validation_error:
        problems.append(f"caddy validate: {validation_error}")
    fmt = run_caddy("fmt", "Caddyfile", cwd=kit, env={})
    if fmt.returncode != 0 or fmt.stdout != (kit / "Caddyfile").read_text():
        problems.append("the Caddyfile is not as `caddy fmt` writes it")
    replicas = app_services(kit)
    expected = {f"{name}:{app_port(service)}" for name, service in replicas.items()}
    answered = served()
    public = [h for h in handlers(config) if h.config["handler"] == "reverse_proxy"]
    if len(public) != 1:
        return [*problems, f"{len(public)} reverse_proxy handlers, not one"]
    proxy = public[0]
    dials = {upstream["dial"] for upstream in proxy.config.get("upstreams", [])}
    if dials != expected:
        problems.append(
            f"the proxy forwards to {sorted(dials)}, the replicas are {sorted(expected)}"
        )
    if "/webhook" not in proxy.paths:
        problems.append("the proxy does not forward /webhook")
    for path in proxy.paths:
        if path not in answered or path == "/metrics":
            problems.append(f"the proxy forwards {path}, which perfbot does not serve publicly")
    uri = proxy.config.get("health_checks", {}).get("active", {}).get("uri")
    if "GET" not in answered.get(str(uri), set()):
        problems.append(f"the proxy's health check asks {uri}, which perfbot does not serve")
    body_limit = int(caddy_env(kit)["MAX_BODY_BYTES"])
    perfbot_limit = {int(environment(s)["PERFBOT_MAX_BODY_BYTES"]) for s in replicas.values()}
    sizes = [h.config.get("max_size") for h in handlers(config) if h.server is proxy.server]
    sizes = [size for size in sizes if size is not None]
    if sizes != [body_limit] or perfbot_limit != {body_limit}:
        problems.append(f"body limits: proxy {sizes}, perfbot {sorted(perfbot_limit)}")
    if int(proxy.config.get("request_buffers", 0)) < body_limit:
        problems.append("the proxy does not read a whole body before forwarding it")
    server = proxy.server
    for key in ("read_header_timeout", "read_timeout"):
        if not 0 < int(server.get(key, 0)) <= HEAD_AND_BODY_SECONDS * NANOSECONDS:
            problems.append(f"the proxy's {key} is not at most {HEAD_AND_BODY_SECONDS} s")
    if not 0 < int(server.get("max_header_bytes", 0)) <= HEAD_BYTES:
        problems.append(f"the proxy accepts request heads over {HEAD_BYTES} bytes")
    return problems + rate_limit_problems(kit)


MAX_EVENTS_PER_SECOND = 1000


def rate_limit_problems(kit: Path) -> list[str]:
    """A rate_limit zone per client address (the TCP peer), with events and a window."""
    _, block = without_block((kit / "Caddyfile").read_text(encoding="utf-8"), "rate_limit")
    if block is None:
        return ["the Caddyfile has no rate_limit: nothing limits one client address"]
    words = dict(line.split(None, 1) for line in block.splitlines() if len(line.split()) == 2)
    problems = []
    if words.get("key") != "{remote_host}":
        problems.append(f"the rate limit is keyed by {words.get('key')}, not the client address")
    if "zone" not in block or "events" not in words or "window" not in words:
        problems.append("the rate_limit block lacks a zone, events or a window")
        return problems
    # The defaults a .env that says nothing gets: a limit a webhook sender never meets
    # (GitHub sends a few a second) but a flood does.
    events = re.fullmatch(r"\{\$\w+:(\d+)\}|(\d+)", words["events"])
    window = re.fullmatch(r"\{\$\w+:(\d+)s\}|(\d+)s", words["window"])
    if events is None or window is None:
        problems.append("the rate limit's events or window is not a number of events and seconds")
    else:
        per_second = int(events.group(1) or events.group(2)) / int(
            window.group(1) or window.group(2)
        )
        if not 1 <= per_second <= MAX_EVENTS_PER_SECOND:
            problems.append(f"the rate limit lets {per_second:g} requests a second through")
    # rate_limit has no place in Caddy's directive order: outside a route (or a global
    # `order`), the real image refuses the Caddyfile at start-up.
    text = (kit / "Caddyfile").read_text(encoding="utf-8")
    opener = [line.strip() for line in text[: text.index("rate_limit {")].splitlines()]
    enclosing = next((line for line in reversed(opener) if line.endswith("{")), "")
    if enclosing != "route {" and not re.search(r"^\s*order rate_limit", text, re.MULTILINE):
        problems.append("rate_limit is outside a route block and no global order places it")
    return problems


def health_check_problems(kit: Path) -> list[str]:
    """Each container's own health check asks a path its server serves."""
    problems = []
    answered = served()
    for name, service in app_services(kit).items():
        code = service["healthcheck"]["test"][-1]
        match = re.search(r"http://127\.0\.0\.1:(\d+)(/[^'\"]*)", code)
        if (
            not match
            or int(match[1]) != app_port(service)
            or "GET" not in answered.get(match[2], set())
        ):
            problems.append(f"{name}'s health check does not ask a path perfbot serves")
        compile(code, "<healthcheck>", "exec")
    config, error = adapted(kit)
    if config is None:
        return [*problems, f"caddy adapt: {error}"]
    url = services(kit)["caddy"]["healthcheck"]["test"][-1]
    loopback = [
        h
        for h in handlers(config)
        if h.config["handler"] == "static_response"
        and h.config.get("status_code") == 200
        and url in {f"http://{a}{p}" for a in h.server.get("listen", []) for p in h.paths}
    ]
    if not loopback:
        problems.append(f"caddy's health check asks {url}, which the Caddyfile does not answer")
    postgres = " ".join(services(kit)["postgres"]["healthcheck"]["test"])
    if "pg_isready" not in postgres:
        problems.append("postgres's health check does not ask the server")
    return problems


OPERATOR_TOKEN = "0123456789abcdef" * 4


def container_problems(kit: Path) -> list[str]:
    """A replica's start as the container runs it: the command's wrapper hands perfbot the
    database password; settings from the environment and the credentials file that
    `perfbot setup` writes are valid, compose's win, and the file's GitHub URL survives."""
    run = kit / ".run"
    secrets = run / "secrets"
    secrets.mkdir(parents=True, exist_ok=True)
    key = rsa_keypair().private_pem
    files = {
        "perfbot_env": (
            "PERFBOT_APP_ID=12345\nPERFBOT_WEBHOOK_SECRET=s3cret\n"
            f"PERFBOT_GITHUB_URL={GHES_API}\nPERFBOT_PRIVATE_KEY_PATH=/elsewhere/key.pem\n"
            f"PERFBOT_OPERATOR_TOKEN={OPERATOR_TOKEN}\n"
        ),
        "perfbot_private_key": key,
        "postgres_password": "pw-from-the-secret\n",
    }
    problems = []
    for name, service in app_services(kit).items():
        for secret in service.get("secrets") or []:
            (secrets / secret).write_text(files.get(secret, ""))
        env = {
            variable: value.replace("/run/secrets/", f"{secrets}/")
            for variable, value in environment(service).items()
        }
        try:
            load_env_file(env)
            loaded = Settings.from_env(env)
        except settings_module.SettingsError as exc:
            problems.append(f"{name}: {exc}")
            continue
        if loaded.github_url != GHES_API:
            problems.append(f"{name} loses the credentials file's PERFBOT_GITHUB_URL")
        if loaded.operator_token != OPERATOR_TOKEN:
            problems.append(f"{name} loses the credentials file's PERFBOT_OPERATOR_TOKEN")
        if loaded.private_key != key.strip() + "\n":
            problems.append(f"{name} does not read the App's key from its secret")
        if (
            not loaded.database_url.startswith("postgresql://")
            or ":" in loaded.database_url[13:].partition("@")[0]
        ):
            problems.append(f"{name}'s database URL is not PostgreSQL without a password")
        problems += wrapper_problems(name, service, secrets, run)
    return problems


def wrapper_problems(name: str, service: Json, secrets: Path, run: Path) -> list[str]:
    """The command run by sh, with a stand-in ``perfbot`` that prints what it got."""
    stand_in = run / "bin" / "perfbot"
    stand_in.parent.mkdir(exist_ok=True)
    stand_in.write_text('#!/bin/sh\necho "$PGPASSWORD|$*"\n')
    stand_in.chmod(0o755)
    argv = [part.replace("/run/secrets/", f"{secrets}/") for part in service["command"]]
    result = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={"PATH": f"{stand_in.parent}:/usr/bin:/bin"},
    )
    port = app_port(service)
    if result.stdout != f"pw-from-the-secret|serve --host 0.0.0.0 --port {port}\n":
        return [f"{name}'s command does not start perfbot with the password: {result.stdout!r}"]
    return []


def pin_problems(kit: Path) -> list[str]:
    """The proxy's image is the Caddy version the tests validate the Caddyfile with."""
    dockerfile = (kit / "caddy" / "Dockerfile").read_text()
    pinned = re.search(r"^ARG CADDY_VERSION=(\S+)$", dockerfile, re.MULTILINE)
    here = run_caddy("version", cwd=kit, env={}).stdout.split()
    if not pinned or not here or here[0] != f"v{pinned[1]}":
        return [f"deploy/caddy/Dockerfile pins {pinned and pinned[1]}, the tests run {here[:1]}"]
    if not re.search(r"caddy-ratelimit@[0-9a-f]{40}\b", dockerfile):
        return ["the rate-limit module is not pinned to a commit"]
    return []


CHECKS: dict[str, Check] = {
    "schema": schema_problems,
    "variables": variable_problems,
    "settings": setting_problems,
    "secrets": secret_problems,
    "services": service_problems,
    "caddy": caddy_problems,
    "health checks": health_check_problems,
    "container": container_problems,
    "pins": pin_problems,
}


@pytest.fixture
def kit(tmp_path: Path) -> Path:
    """A copy of deploy/ to break."""
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy, ignore=shutil.ignore_patterns(".env", "secrets"))
    return copy


@pytest.mark.parametrize("name", CHECKS)
def test_the_kit_has_nothing_wrong(name: str, kit: Path) -> None:
    assert CHECKS[name](kit) == []


# (check, file, text, replacement, what the check must say)
BREAKAGES = [
    (
        "schema",
        "compose.yaml",
        "postgres:\n      condition: service_healthy",
        "postgres:\n      condition: healthy",
        "perfbot-1/depends_on",
    ),
    (
        "schema",
        "compose.yaml",
        '    healthcheck:\n      test: ["CMD", "wget"',
        '    healthcheck:\n      tset: ["CMD", "wget"',
        "tset",
    ),
    ("schema", "compose.yaml", "${PUBLIC_HOST:?", "${PUBLIC_HOST_NAME:?", "PUBLIC_HOST_NAME"),
    (
        "variables",
        "compose.yaml",
        "${WEBHOOK_RATE_EVENTS:-500}",
        "${RATE_EVENTS:-500}",
        "RATE_EVENTS",
    ),
    ("variables", "Caddyfile", "{$WEBHOOK_RATE_WINDOW:5s}", "{$RATE_WINDOW:5s}", "RATE_WINDOW"),
    (
        "settings",
        "compose.yaml",
        "PERFBOT_WORKERS: $",
        "PERFBOT_WORKER: $",
        "PERFBOT_WORKER is not",
    ),
    ("settings", ".env.example", "#PERFBOT_WORKERS=16", "#PERFBOT_WORKERS=8", "PERFBOT_WORKERS=8"),
    (
        "secrets",
        "compose.yaml",
        "    PERFBOT_ENV_FILE:",
        "    PERFBOT_WEBHOOK_SECRET: change-me\n    PERFBOT_ENV_FILE:",
        "PERFBOT_WEBHOOK_SECRET",
    ),
    (
        "secrets",
        ".env.example",
        "#POSTGRES_DB=perfbot",
        "POSTGRES_PASSWORD=hunter2",
        "POSTGRES_PASSWORD",
    ),
    (
        "secrets",
        "compose.yaml",
        "file: ./secrets/postgres-password",
        "file: ../postgres-password",
        "postgres_password",
    ),
    (
        "services",
        "compose.yaml",
        '    healthcheck:\n      test: ["CMD-SHELL"',
        '    x-healthcheck:\n      test: ["CMD-SHELL"',
        "postgres has no health",
    ),
    (
        "services",
        "compose.yaml",
        "restart: unless-stopped\n    ports:",
        'restart: "no"\n    ports:',
        "caddy has no restart",
    ),
    (
        "services",
        "compose.yaml",
        "      perfbot-2:\n        condition: service_healthy",
        "      perfbot-2:\n        condition: service_started",
        "before perfbot-2",
    ),
    ("services", "compose.yaml", "  perfbot-2: *perfbot\n", "", "replica"),
    ("services", "compose.yaml", "soft: 4096", "soft: 1024", "descriptors"),
    (
        "services",
        "compose.yaml",
        "      - postgres-data:/var/lib/postgresql/data",
        "      - ./pgdata:/var/lib/postgresql/data",
        "named volume",
    ),
    ("caddy", "Caddyfile", "perfbot-2:8080", "perfbot-2:8000", "perfbot-2:8000"),
    (
        "caddy",
        "Caddyfile",
        "to perfbot-1:8080 perfbot-2:8080",
        "to perfbot-1:8080",
        "the replicas are",
    ),
    ("caddy", "Caddyfile", "max_size {$MAX_BODY_BYTES:5242880}", "max_size 50MB", "body limits"),
    (
        "caddy",
        "compose.yaml",
        "MAX_BODY_BYTES: ${PERFBOT_MAX_BODY_BYTES:-5242880}\n      WEBHOOK",
        "MAX_BODY_BYTES: 26214400\n      WEBHOOK",
        "body limits",
    ),
    ("caddy", "Caddyfile", "\t\t\trequest_buffers {$MAX_BODY_BYTES:5242880}\n", "", "whole body"),
    (
        "caddy",
        "Caddyfile",
        "key {remote_host}",
        "key {http.request.header.X-Forwarded-For}",
        "client address",
    ),
    ("caddy", "Caddyfile", "rate_limit {", "rate_limits {", "rate_limit"),
    ("caddy", "Caddyfile", "\troute {", "\thandle {", "outside a route"),
    ("caddy", "Caddyfile", "WEBHOOK_RATE_EVENTS:500}", "WEBHOOK_RATE_EVENTS:50000000}", "a second"),
    ("caddy", "Caddyfile", "read_body 10s", "read_body 5m", "read_timeout"),
    ("caddy", "Caddyfile", "max_header_size 16KiB", "max_header_size 1MiB", "heads over"),
    ("caddy", "Caddyfile", "health_uri /healthz", "health_uri /health", "/health,"),
    (
        "caddy",
        "Caddyfile",
        "@perfbot path /webhook /healthz",
        "@perfbot path /webhook /healthz /metrics",
        "/metrics",
    ),
    ("caddy", "Caddyfile", "\t\trespond 404\n", "\t\trespond 404 {\n", "caddy adapt"),
    ("caddy", "Caddyfile", "health_interval 10s", "health_interval 10", "caddy"),
    ("caddy", "Caddyfile", "\tbind 127.0.0.1\n", "bind 127.0.0.1\n", "caddy fmt"),
    ("health checks", "compose.yaml", "8080/healthz'", "8080/health'", "perfbot-1's health check"),
    ("health checks", "compose.yaml", "127.0.0.1:8081/healthz", "127.0.0.1:8082/healthz", "8082"),
    ("health checks", "compose.yaml", "pg_isready -q", "true", "postgres"),
    (
        "container",
        "compose.yaml",
        "    PERFBOT_ENV_FILE:",
        "    PERFBOT_GITHUB_URL: ${PERFBOT_WATCH:-}\n    PERFBOT_ENV_FILE:",
        "PERFBOT_GITHUB_URL",
    ),
    (
        "container",
        "compose.yaml",
        "PERFBOT_PRIVATE_KEY_PATH: /run/secrets/perfbot_private_key",
        "PERFBOT_PRIVATE_KEY_PATH: /run/secrets/perfbot_env",
        "perfbot-1",
    ),
    (
        "container",
        "compose.yaml",
        "cat /run/secrets/postgres_password",
        "cat /run/secrets/postgres-password",
        "password",
    ),
    (
        "container",
        "compose.yaml",
        "@postgres:5432",
        ":${POSTGRES_DB:-perfbot}@postgres:5432",
        "without a password",
    ),
    (
        "pins",
        "caddy/Dockerfile",
        "ARG CADDY_VERSION=",
        "ARG CADDY_VERSION=2.6.2\nARG OLD=",
        "pins 2.6.2",
    ),
    ("pins", "caddy/Dockerfile", "@5625512f24f6f59d6f64fb3aafe5eecff0b286db", "@v0.1.0", "commit"),
]


@pytest.mark.parametrize(("check", "file", "text", "replacement", "said"), BREAKAGES)
def test_each_check_finds_a_broken_kit(
    check: str, file: str, text: str, replacement: str, said: str, kit: Path
) -> None:
    path = kit / file
    original = path.read_text(encoding="utf-8")
    assert text in original, f"{file} no longer contains {text!r}: update this breakage"
    path.write_text(original.replace(text, replacement, 1), encoding="utf-8")
    problems = CHECKS[check](kit)
    assert problems, f"{check} found nothing wrong after {text!r} -> {replacement!r}"
    assert any(said in problem for problem in problems), problems


def test_every_check_has_a_breakage() -> None:
    assert {check for check, *_ in BREAKAGES} == set(CHECKS)


def test_the_secrets_folder_keeps_its_files_out_of_git() -> None:
    ignore = (DEPLOY / "secrets" / ".gitignore").read_text().split()
    assert ignore == ["*", "!.gitignore"]
    tracked = subprocess.run(
        ["git", "ls-files", "deploy/secrets"],
        capture_output=True,
        text=True,
        check=True,
        cwd=DEPLOY.parent,
        timeout=30,
    ).stdout.split()
    assert tracked in ([], ["deploy/secrets/.gitignore"])


# -- the kit, brought up ------------------------------------------------------------------------


def _docker_works() -> bool:
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, timeout=20, check=False)
        compose_v2 = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return info.returncode == 0 and compose_v2.returncode == 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.slow
@pytest.mark.skipif(not _docker_works(), reason="needs a Docker daemon and docker compose")
def test_the_kit_comes_up_and_answers_a_signed_ping(kit: Path) -> None:
    """Builds and starts the kit on this machine (Caddy's own CA for ``localhost``, its
    HTTPS port published on 127.0.0.1 only), then sends a signed ``ping`` through it."""
    secret, port, project = "kit-test-secret", _free_port(), f"perfbot-kit-{uuid.uuid4().hex[:8]}"
    (kit / "secrets").mkdir()
    (kit / "secrets" / "perfbot.env").write_text(
        f"PERFBOT_APP_ID=12345\nPERFBOT_WEBHOOK_SECRET={secret}\n"
    )
    (kit / "secrets" / "perfbot.env.private-key.pem").write_text(rsa_keypair().private_pem)
    (kit / "secrets" / "postgres-password").write_text(uuid.uuid4().hex + "\n")
    for path in (kit / "secrets").iterdir():
        path.chmod(0o644)
    # No call to GitHub: the sweep for missed deliveries is what would make one at start.
    (kit / ".env").write_text(
        "PUBLIC_HOST=localhost\nACME_EMAIL=ops@example.org\nPERFBOT_REDELIVERY_MINUTES=0\n"
    )
    (kit / "compose.test.yaml").write_text(
        textwrap.dedent(f"""\
            services:
              caddy:
                ports: !override
                  - "127.0.0.1:{port}:443"
            """)
    )
    # The replicas build from the repository's Dockerfile, two levels up from the copy's.
    text = (
        (kit / "compose.yaml").read_text().replace("context: ..\n", f"context: {DEPLOY.parent}\n")
    )
    (kit / "compose.yaml").write_text(text)
    base = ["docker", "compose", "-p", project, "-f", "compose.yaml", "-f", "compose.test.yaml"]
    try:
        up = subprocess.run(
            [*base, "up", "-d", "--build", "--wait", "--wait-timeout", "240"],
            cwd=kit,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert up.returncode == 0, up.stderr[-3000:]
        body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
        signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        headers = {
            "Content-Type": "application/json",
            "X-GitHub-Event": "ping",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": f"sha256={signature}",
        }
        answer = None
        with httpx.Client(verify=False, timeout=10) as client:  # Caddy's local CA
            for _ in range(30):  # the certificate is issued just after start
                try:
                    answer = client.post(
                        f"https://localhost:{port}/webhook", content=body, headers=headers
                    )
                    break
                except httpx.TransportError:
                    time.sleep(1)
        assert answer is not None
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"status": "pong"}
    finally:
        subprocess.run(
            [*base, "down", "-v", "--remove-orphans"],
            cwd=kit,
            capture_output=True,
            timeout=300,
            check=False,
        )
