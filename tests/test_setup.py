"""``perfbot setup``: the App manifest, the one-click registration against the fake GitHub,
and ``perfbot serve`` reading the ``.env`` file it writes."""

from __future__ import annotations

import html
import json
import os
import re
import select
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from dotenv import dotenv_values
from githubkit_schemas.latest.models import AppManifestsCodeConversionsPostResponse201

from perfbot.app.routes import SUBSCRIBED_EVENTS
from perfbot.app.settings import Settings, SettingsError, load_env_file
from perfbot.cli import main
from perfbot.github.manifest import EVENTS, PERMISSIONS, ManifestError, build_manifest
from perfbot.github.setup import (
    SetupError,
    SetupOptions,
    api_url_for,
    check_targets,
    create_setup_app,
    exchange_code,
    key_path_for,
    new_app_url,
)
from perfbot.sandbox.fakegithub import DEFAULT_PERMISSIONS, FakeGitHub, app_client, serve
from tests.harness import perfbot_process

PUBLIC = "https://perfbot.example.org"
STATE = "s" * 43


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any PERFBOT_* variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFBOT_")}
    return {**env, **extra}


def form_of(page: str) -> tuple[str, dict[str, Any]]:
    """The setup page's form: where it posts, and the manifest it carries."""
    action = re.search(r'<form method="post" action="([^"]*)">', page)
    value = re.search(r'<input type="hidden" name="manifest" value="([^"]*)">', page)
    assert action is not None, page
    assert value is not None, page
    return html.unescape(action.group(1)), json.loads(html.unescape(value.group(1)))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---------------------------------------------------------------------------------------------
# The manifest


def test_manifest_asks_for_the_least_perfbot_needs() -> None:
    manifest = build_manifest(PUBLIC + "/", "http://127.0.0.1:3000/callback")
    assert manifest["default_permissions"] == {
        "actions": "write",
        "checks": "write",
        "contents": "read",
        "issues": "write",
        "metadata": "read",
        "pull_requests": "read",
    }
    # What the service tests run with is exactly what the App asks for.
    assert manifest["default_permissions"] == dict(DEFAULT_PERMISSIONS)
    # Every event perfbot handles, except those GitHub sends every App unasked.
    assert sorted(manifest["default_events"]) == sorted(SUBSCRIBED_EVENTS)
    assert manifest["default_events"] == [
        "check_run",
        "check_suite",
        "issue_comment",
        "workflow_run",
    ]
    assert manifest["hook_attributes"] == {"url": f"{PUBLIC}/webhook", "active": True}
    assert manifest["redirect_url"] == "http://127.0.0.1:3000/callback"
    assert manifest["url"] == PUBLIC
    assert manifest["public"] is False
    assert manifest["name"] == "perfbot"
    assert manifest["request_oauth_on_install"] is False
    json.dumps(manifest)  # it travels as JSON


@pytest.mark.parametrize(
    ("public", "name", "message"),
    [
        ("perfbot.example.org", "perfbot", "http\\(s\\) URL"),
        ("ftp://perfbot.example.org", "perfbot", "http\\(s\\) URL"),
        ("https://perfbot.example.org/?x=1", "perfbot", "query"),
        (PUBLIC, "", "1 to 34"),
        (PUBLIC, "p" * 35, "1 to 34"),
    ],
)
def test_manifest_refuses_what_github_would(public: str, name: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        build_manifest(public, "http://127.0.0.1:3000/callback", name)


def test_urls_and_paths() -> None:
    assert api_url_for("https://github.com/") == "https://api.github.com"
    assert api_url_for("https://ghe.example.com") == "https://ghe.example.com/api/v3"
    assert new_app_url("https://github.com", None, "a b") == (
        "https://github.com/settings/apps/new?state=a+b"
    )
    assert new_app_url("https://ghe.example.com/", "acme-net", "x") == (
        "https://ghe.example.com/organizations/acme-net/settings/apps/new?state=x"
    )
    with pytest.raises(SetupError, match="organisation name"):
        new_app_url("https://github.com", "acme/../../evil", "x")
    assert key_path_for(Path("/etc/perfbot/.env")) == Path("/etc/perfbot/perfbot.private-key.pem")
    assert key_path_for(Path("staging.env")) == Path("staging.env.private-key.pem")
    assert SetupOptions(PUBLIC, api_url="http://127.0.0.1:9/").api == "http://127.0.0.1:9"


# ---------------------------------------------------------------------------------------------
# The pages, in-process (the fake GitHub through its in-process transport)


@asynccontextmanager
async def setup_client(fake: FakeGitHub, options: SetupOptions) -> AsyncIterator[httpx.AsyncClient]:
    app = create_setup_app(options, state=STATE, transport=fake.transport())
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:3000") as client:
        yield client


def options_in(tmp_path: Path, fake: FakeGitHub, **changes: Any) -> SetupOptions:
    values: dict[str, Any] = {
        "public_url": PUBLIC,
        "api_url": fake.api_url,
        "env_file": tmp_path / ".env",
        **changes,
    }
    return SetupOptions(**values)


async def test_page_escapes_everything_and_locks_the_form_to_github(tmp_path: Path) -> None:
    fake = FakeGitHub()
    name = 'perf"><b>x</b>'
    options = options_in(tmp_path, fake, name=name, org="acme-net")
    async with setup_client(fake, options) as client:
        page = await client.get("/")
        assert page.status_code == 200
        assert "<b>x</b>" not in page.text
        assert 'perf">' not in page.text
        action, manifest = form_of(page.text)
        assert manifest["name"] == name
        assert manifest["redirect_url"] == "http://127.0.0.1:3000/callback"
        assert (
            action == f"https://github.com/organizations/acme-net/settings/apps/new?state={STATE}"
        )
        policy = page.headers["content-security-policy"]
        assert "form-action https://github.com;" in policy
        assert "frame-ancestors 'none'" in policy
        assert page.headers["referrer-policy"] == "no-referrer"
        # A page of another site whose name was rebound to 127.0.0.1 cannot read the state.
        evil = await client.get("/", headers={"host": "evil.example"})
        assert evil.status_code == 400


async def test_wrong_state_writes_nothing_and_keeps_the_code(tmp_path: Path) -> None:
    fake = FakeGitHub()
    options = options_in(tmp_path, fake)
    async with setup_client(fake, options) as client:
        _, manifest = form_of((await client.get("/")).text)
        code = fake.add_manifest_code(manifest)
        for query in (
            {"code": code, "state": "x" + STATE[1:]},
            {"code": code},
            {"code": code, "state": STATE + "x"},
        ):
            page = await client.get("/callback", params=query)
            assert page.status_code == 400
            assert "nothing was written" in page.text
    assert list(tmp_path.iterdir()) == []
    assert code in fake.manifest_codes  # never sent to GitHub
    assert not [r for r in fake.requests if "app-manifests" in r.path]


async def test_a_code_converts_once(tmp_path: Path) -> None:
    fake = FakeGitHub()
    code = fake.add_manifest_code(build_manifest(PUBLIC, "http://127.0.0.1:3000/callback"))
    credentials = await exchange_code(fake.api_url, code, transport=fake.transport())
    assert credentials.app_id == fake.app_id
    assert credentials.pem.startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert credentials.webhook_secret
    # The fake answers what GitHub's schema describes.
    app = AppManifestsCodeConversionsPostResponse201.model_validate(fake.converted_apps[0])
    assert app.permissions.model_dump(exclude_unset=True) == dict(PERMISSIONS)
    assert app.events == list(EVENTS)
    assert app.html_url == "https://github.com/apps/perfbot"
    with pytest.raises(SetupError, match="already used"):
        await exchange_code(fake.api_url, code, transport=fake.transport())
    with pytest.raises(SetupError, match="malformed"):
        await exchange_code(fake.api_url, "../../user", transport=fake.transport())
    (request,) = [r for r in fake.requests if r.status == 201]
    assert request.auth is None  # the code is the only credential


@pytest.mark.parametrize(
    "answer", [b"<html>proxy error</html>", b'{"id": 1}'], ids=["not-json", "not-an-app"]
)
async def test_an_unreadable_conversion_says_what_to_do(answer: bytes) -> None:
    def github(request: httpx.Request) -> httpx.Response:
        return httpx.Response(201, content=answer, headers={"content-type": "application/json"})

    with pytest.raises(SetupError, match="generate a private key"):
        await exchange_code(
            "http://api.example.test", "abc123", transport=httpx.MockTransport(github)
        )


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "perfbot.example.org"])
def test_the_setup_page_is_served_on_loopback_only(
    host: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env_file = str(tmp_path / ".env")
    arguments = ["setup", "--public-url", PUBLIC, "--host", host, "--env-file", env_file]
    assert main([*arguments, "--port", "0"]) == 2
    assert "not a loopback address" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


async def test_reused_code_is_a_clear_error_page(tmp_path: Path) -> None:
    fake = FakeGitHub()
    manifest = build_manifest(PUBLIC, "http://127.0.0.1:3000/callback")
    code = fake.add_manifest_code(manifest)
    fake.manifest_codes.pop(code)  # converted by someone else meanwhile
    async with setup_client(fake, options_in(tmp_path, fake)) as client:
        page = await client.get("/callback", params={"code": code, "state": STATE})
    assert page.status_code == 400
    assert "already used" in page.text
    assert "Nothing was written" in page.text
    assert list(tmp_path.iterdir()) == []


async def test_a_file_that_appears_meanwhile_is_not_overwritten(tmp_path: Path) -> None:
    fake = FakeGitHub()
    options = options_in(tmp_path, fake)
    check_targets(options)
    async with setup_client(fake, options) as client:
        _, manifest = form_of((await client.get("/")).text)
        options.env_file.write_text("MINE=1\n")  # written by someone else meanwhile
        code = fake.add_manifest_code(manifest)
        page = await client.get("/callback", params={"code": code, "state": STATE})
    assert page.status_code == 500
    assert "appeared while the App was being registered" in page.text
    assert f"(id {fake.app_id}) was created" in page.text
    assert options.env_file.read_text() == "MINE=1\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


async def test_force_replaces_the_files_and_keeps_them_private(tmp_path: Path) -> None:
    fake = FakeGitHub()
    env_file = tmp_path / ".env"
    env_file.write_text("OLD=1\n")
    env_file.chmod(0o644)
    options = options_in(tmp_path, fake, force=True)
    check_targets(options)  # --force: no refusal
    async with setup_client(fake, options) as client:
        _, manifest = form_of((await client.get("/")).text)
        code = fake.add_manifest_code(manifest)
        page = await client.get("/callback", params={"code": code, "state": STATE})
        assert page.status_code == 200
        assert "https://github.com/apps/perfbot/installations/new" in page.text
        again = await client.get("/callback", params={"code": code, "state": STATE})
        assert again.status_code == 409  # done once; the code is not sent twice
    assert "OLD" not in env_file.read_text()
    assert mode(env_file) == 0o600
    assert mode(options.key_file) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == [".env", "perfbot.private-key.pem"]


def test_existing_env_file_is_refused_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env_file = tmp_path / "prod.env"
    env_file.write_text("PERFBOT_APP_ID=1\n")
    argv = ["setup", "--public-url", PUBLIC, "--env-file", str(env_file), "--port", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"perfbot setup: {env_file} already exists")
    assert "--force" in err
    assert env_file.read_text() == "PERFBOT_APP_ID=1\n"
    # The key file beside it counts too: its loss would orphan the App.
    env_file.unlink()
    key_path_for(env_file).write_text("key")
    assert main(argv) == 2
    assert "private-key.pem already exists" in capsys.readouterr().err


def test_bad_options_are_refused_before_anything_is_served(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["setup", "--public-url", "perfbot.example.org", "--port", "0"]) == 2
    assert "public URL must be an http(s) URL" in capsys.readouterr().err
    assert main(["setup", "--public-url", PUBLIC, "--org", "a/b", "--port", "0"]) == 2
    assert "--org must be" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# The whole flow: `perfbot setup` and `perfbot serve` as processes, the fake GitHub on loopback


def read_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, "perfbot setup printed nothing"
    return process.stdout.readline()


def test_one_click_setup_then_serve(tmp_path: Path) -> None:
    fake = FakeGitHub()
    config = tmp_path / "config"
    config.mkdir()
    argv = ["setup", "--public-url", PUBLIC, "--port", "0", "--api-url"]
    with (
        serve(fake),
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "perfbot",
                *argv,
                fake.api_url,
                "--env-file",
                str(config / ".env"),
            ],
            env=clean_env(),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as process,
    ):
        try:
            line = read_line(process, 30)
            found = re.search(r"open (http://127\.0\.0\.1:\d+/) in your browser", line)
            assert found, line
            with httpx.Client(base_url=found.group(1), timeout=10) as browser:
                action, manifest = form_of(browser.get("/").text)
                state = action.partition("?state=")[2]
                assert action == f"https://github.com/settings/apps/new?state={state}"
                assert len(state) >= 32
                assert manifest["redirect_url"] == found.group(1) + "callback"
                assert manifest["hook_attributes"]["url"] == f"{PUBLIC}/webhook"
                # The operator confirms on github.com, which redirects back with a code.
                code = fake.add_manifest_code(manifest)
                page = browser.get("/callback", params={"code": code, "state": state})
            assert page.status_code == 200
            assert process.wait(timeout=20) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        out = process.stdout.read() if process.stdout else ""
        assert "installations/new" in out

        env_file, key_file = config / ".env", config / "perfbot.private-key.pem"
        assert mode(env_file) == 0o600
        assert mode(key_file) == 0o600
        app = fake.converted_apps[0]
        assert "https://github.com/apps/perfbot/installations/new" in page.text
        assert dotenv_values(env_file) == {
            "PERFBOT_APP_ID": str(fake.app_id),
            "PERFBOT_PRIVATE_KEY_PATH": str(key_file),
            "PERFBOT_WEBHOOK_SECRET": app["webhook_secret"],
            "PERFBOT_GITHUB_URL": fake.api_url,
        }
        assert key_file.read_text() == app["pem"].strip() + "\n"

        # perfbot serve starts from the env file alone (pointed at with PERFBOT_ENV_FILE) …
        env = {"PERFBOT_ENV_FILE": str(env_file), "PERFBOT_DATABASE_URL": str(tmp_path / "db")}
        with perfbot_process(env, tmp_path / "serve.log") as running:
            assert running.client.get("/healthz").json()["status"] == "ok"
        # … and the key it was given is the App's: GitHub accepts its JWT.
        settings = Settings.from_env(_loaded({}, env_file))
        assert settings.app_id == fake.app_id
        assert settings.webhook_secret == app["webhook_secret"]
        with app_client(fake, settings.private_key, in_process=False) as github:
            assert github.rest.apps.get_authenticated().parsed_data.slug == "perfbot"


def _loaded(environ: dict[str, str], env_file: Path) -> dict[str, str]:
    environ["PERFBOT_ENV_FILE"] = str(env_file)
    load_env_file(environ)
    return environ


# ---------------------------------------------------------------------------------------------
# `perfbot serve` and the env file


def test_serve_without_credentials_says_how_to_get_them(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "perfbot", "serve", "--port", "0"],
        env=clean_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1
    assert message.startswith("perfbot: PERFBOT_APP_ID is not set")
    assert "perfbot setup --public-url https://" in message
    assert "PERFBOT_PRIVATE_KEY_PATH" in message
    assert "PERFBOT_WEBHOOK_SECRET" in message


def test_serve_reads_dot_env_in_its_working_directory(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("PERFBOT_APP_ID=77\nPERFBOT_WEBHOOK_SECRET=s\n")
    result = subprocess.run(
        [sys.executable, "-m", "perfbot", "serve", "--port", "0"],
        env=clean_env(PERFBOT_APP_ID="not-a-number-but-set-first"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # The set variable wins over the file's value: its error is the one reported.
    assert result.returncode == 2
    assert "PERFBOT_APP_ID must be the App's numeric id" in result.stderr


def test_load_env_file_never_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_env_file({}) is None  # no .env: nothing, no error
    (tmp_path / ".env").write_text(
        "# a comment\nPERFBOT_APP_ID=5\nPERFBOT_WEBHOOK_SECRET='a ${B} #c'\nPERFBOT_WORKERS=3\n"
    )
    environ = {"PERFBOT_WORKERS": "9", "PERFBOT_DISABLED_REPOS": ""}
    assert load_env_file(environ) == Path(".env")
    assert environ == {
        "PERFBOT_WORKERS": "9",  # already set: kept
        "PERFBOT_DISABLED_REPOS": "",  # set, even if empty: kept
        "PERFBOT_APP_ID": "5",
        "PERFBOT_WEBHOOK_SECRET": "a ${B} #c",  # literal, no expansion
    }
    other = tmp_path / "elsewhere.env"
    other.write_text("PERFBOT_APP_ID=6\n")
    environ = {"PERFBOT_ENV_FILE": str(other)}
    load_env_file(environ)
    assert environ["PERFBOT_APP_ID"] == "6"
    with pytest.raises(SettingsError, match=r"PERFBOT_ENV_FILE names .*missing\.env"):
        load_env_file({"PERFBOT_ENV_FILE": str(tmp_path / "missing.env")})
