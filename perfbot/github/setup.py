"""``perfbot setup``: register the GitHub App in one click (GitHub's App-manifest flow).

A small page on a loopback port holds a form that posts perfbot's manifest to GitHub.
The operator confirms there; GitHub sends the browser back to ``/callback`` with a one-time
code, which this module exchanges (``POST /app-manifests/{code}/conversions``, no credential)
for the App's id, private key and webhook secret. Those are written to a ``.env`` file and a
key file beside it, both readable by the owner only, and the command exits.
"""

from __future__ import annotations

import asyncio
import hmac
import html
import ipaddress
import json
import os
import re
import secrets
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, TextIO
from urllib.parse import quote, urlencode, urlsplit

import httpx
import uvicorn
from githubkit import GitHub
from githubkit.exception import RequestError as GitHubRequestError
from githubkit.exception import RequestFailed, RequestTimeout
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from perfbot.errors import PerfbotError
from perfbot.github.manifest import EVENTS, PERMISSIONS, base_url, build_manifest
from perfbot.github.transport import USER_AGENT

DEFAULT_GITHUB_URL: Final = "https://github.com"
DEFAULT_PORT: Final = 3000
EXCHANGE_TIMEOUT: Final = 30.0
# GitHub's codes are short hex strings; anything else never reaches the URL path.
_CODE: Final = re.compile(r"[A-Za-z0-9_-]{1,100}")
# GitHub account names: alphanumerics and single hyphens, at most 39 characters.
_ORG: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?")
_ENV_SAFE: Final = re.compile(r"[A-Za-z0-9_./:@+,=-]*")
_LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "::1", "[::1]")


class SetupError(PerfbotError):
    """``perfbot setup`` cannot go on; the message says why and what to do."""


@dataclass(frozen=True)
class SetupOptions:
    """What ``perfbot setup`` was asked to do."""

    public_url: str
    github_url: str = DEFAULT_GITHUB_URL
    api_url: str | None = None
    org: str | None = None
    env_file: Path = Path(".env")
    name: str = "perfbot"
    force: bool = False

    @property
    def api(self) -> str:
        return base_url(self.api_url, "--api-url") if self.api_url else api_url_for(self.github_url)

    @property
    def key_file(self) -> Path:
        return key_path_for(self.env_file)


@dataclass(frozen=True)
class Credentials:
    """What GitHub hands over for a new App, once."""

    app_id: int
    name: str
    html_url: str
    pem: str
    webhook_secret: str | None


def api_url_for(github_url: str) -> str:
    """The REST API base of a GitHub web URL: github.com's own host, else GHES's ``/api/v3``."""
    web = base_url(github_url, "--github-url")
    host = urlsplit(web).hostname
    if host in ("github.com", "www.github.com"):
        return "https://api.github.com"
    return f"{web}/api/v3"


def key_path_for(env_file: Path) -> Path:
    """The private key's file, beside the env file: ``.env`` → ``perfbot.private-key.pem``."""
    stem = "perfbot" if env_file.name == ".env" else env_file.name
    return env_file.with_name(f"{stem}.private-key.pem")


def new_app_url(github_url: str, org: str | None, state: str) -> str:
    """Where the manifest form posts: the user's (or the organisation's) new-App page."""
    web = base_url(github_url, "--github-url")
    if org is None:
        path = "/settings/apps/new"
    elif _ORG.fullmatch(org):
        path = f"/organizations/{quote(org, safe='')}/settings/apps/new"
    else:
        raise SetupError(f"--org must be a GitHub organisation name, got {org[:40]!r}.")
    return f"{web}{path}?{urlencode({'state': state})}"


def validate(options: SetupOptions) -> None:
    """Every option checked before the page is served: a mistake costs no App registration."""
    build_manifest(options.public_url, "http://127.0.0.1/callback", options.name)
    new_app_url(options.github_url, options.org, "state")
    api_url_for(options.github_url)
    if options.api_url:
        base_url(options.api_url, "--api-url")
    check_targets(options)


def check_targets(options: SetupOptions) -> None:
    """Refuse, before anything is registered, to replace existing files without ``--force``."""
    if not options.env_file.parent.is_dir():
        raise SetupError(f"the directory of {options.env_file} does not exist.")
    if options.force:
        return
    for path in (options.env_file, options.key_file):
        if path.exists():
            raise SetupError(
                f"{path} already exists; perfbot setup does not overwrite it. Move it away, "
                "choose another --env-file, or pass --force to replace it."
            )


def env_file_text(credentials: Credentials, key_file: Path, api_url: str) -> str:
    """Plain ``NAME=value`` lines, as python-dotenv and ``docker run --env-file`` read them."""
    values = {
        "PERFBOT_APP_ID": str(credentials.app_id),
        "PERFBOT_PRIVATE_KEY_PATH": str(key_file.resolve()),
        "PERFBOT_WEBHOOK_SECRET": credentials.webhook_secret or "",
        "PERFBOT_GITHUB_URL": api_url,
    }
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [  # repr(): nothing from GitHub's answer can start a line of its own
        f"# Written by `perfbot setup` on {stamp} for the GitHub App {credentials.name!r}",
        f"# ({credentials.html_url!r}). Keep this file and the key file private.",
    ]
    lines += [f"{name}={_env_value(value)}" for name, value in values.items()]
    return "\n".join(lines) + "\n"


def _env_value(value: str) -> str:
    if _ENV_SAFE.fullmatch(value):
        return value
    # Single quotes: python-dotenv takes the content literally (no expansion, no escapes).
    if "'" in value or "\n" in value:
        raise SetupError(f"cannot write the value {value[:40]!r} to an env file.")
    return f"'{value}'"


def write_credentials(credentials: Credentials, options: SetupOptions) -> None:
    """The key file, then the env file (so the env file never names a missing key); 0600."""
    _write_private(options.key_file, credentials.pem.strip() + "\n", options.force)
    _write_private(
        options.env_file,
        env_file_text(credentials, options.key_file, options.api),
        options.force,
    )


def _write_private(path: Path, text: str, force: bool) -> None:
    """Write ``text`` to a new file only its owner can read; replace one only with ``force``."""
    if not force:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise SetupError(
                f"{path} appeared while the App was being registered; not overwritten."
            ) from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return
    # Replacing: a fresh 0600 file renamed over the old one, whatever the old one's mode.
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


async def exchange_code(
    api_url: str, code: str, *, transport: httpx.AsyncBaseTransport | None = None
) -> Credentials:
    """The App behind ``code``, from ``POST /app-manifests/{code}/conversions`` (no auth)."""
    if not _CODE.fullmatch(code):
        raise SetupError("the code from GitHub is malformed.")
    github = GitHub(
        base_url=api_url.rstrip("/") + "/",
        user_agent=USER_AGENT,
        timeout=EXCHANGE_TIMEOUT,
        async_transport=transport,
        http_cache=False,
        auto_retry=False,  # a code is good for one conversion: never send it twice
    )
    try:
        response = await github.rest.apps.async_create_from_manifest(code)
    except RequestFailed as exc:
        status = exc.response.status_code
        if status in (404, 422):
            raise SetupError(
                "GitHub does not accept this code: it was already used, or it is more than "
                "an hour old. Nothing was written; start again from the setup page."
            ) from None
        raise SetupError(
            f"GitHub answered {status} to the code exchange; nothing was written."
        ) from None
    except RequestTimeout:
        raise SetupError(f"{api_url} did not answer in time; nothing was written.") from None
    except GitHubRequestError as exc:
        raise SetupError(f"cannot reach {api_url} ({exc}); nothing was written.") from None
    try:
        app = response.parsed_data
    except ValueError:  # not JSON, or not an App (pydantic's ValidationError is one)
        raise SetupError(
            "GitHub accepted the code but its answer could not be read, so the App may "
            "exist without its key here: open it under your GitHub settings (Developer "
            "settings, GitHub Apps), generate a private key and a webhook secret, and set "
            "PERFBOT_APP_ID, PERFBOT_PRIVATE_KEY_PATH and PERFBOT_WEBHOOK_SECRET yourself."
        ) from None
    return Credentials(
        app_id=app.id,
        name=app.name,
        html_url=app.html_url,
        pem=app.pem,
        webhook_secret=app.webhook_secret,
    )


# ---------------------------------------------------------------------------------------------
# The pages


_SECURITY_HEADERS: Final = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",  # the callback's URL carries the code
    "X-Content-Type-Options": "nosniff",
}


def _page(title: str, body: str, status: int = 200, *, form_action: str = "'none'") -> HTMLResponse:
    document = (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font:16px/1.5 system-ui,sans-serif;max-width:42em;margin:3em auto;"
        "padding:0 1em}code{background:#eee;padding:0 .2em}button{font-size:1.1em;"
        "padding:.5em 1em}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{body}</body></html>\n"
    )
    policy = (
        f"default-src 'none'; style-src 'unsafe-inline'; form-action {form_action}; "
        "frame-ancestors 'none'; base-uri 'none'"
    )
    headers = {**_SECURITY_HEADERS, "Content-Security-Policy": policy}
    return HTMLResponse(document, status_code=status, headers=headers)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


@dataclass
class _Flow:
    """The state of one setup: a secret state token, and whether it is done."""

    state: str
    done: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def create_setup_app(
    options: SetupOptions,
    *,
    on_done: Callable[[Credentials], None] = lambda credentials: None,
    allowed_hosts: tuple[str, ...] = _LOOPBACK_NAMES,
    state: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Starlette:
    """The setup pages. ``on_done`` runs once, after the credentials were written."""
    flow = _Flow(state or secrets.token_urlsafe(32))
    form_target = new_app_url(options.github_url, options.org, flow.state)
    github_origin = "{0.scheme}://{0.netloc}".format(urlsplit(form_target))

    async def start(request: Request) -> HTMLResponse:
        if flow.done:
            return _page("perfbot is registered", "<p>This setup is finished.</p>")
        redirect = str(request.url_for("callback"))
        manifest = build_manifest(options.public_url, redirect, options.name)
        owner = f"the organisation <b>{_e(options.org)}</b>" if options.org else "your account"
        permissions = ", ".join(f"{_e(k)}: {_e(v)}" for k, v in PERMISSIONS.items())
        body = (
            f"<p>This registers a private GitHub App for {owner} on {_e(options.github_url)}. "
            "GitHub shows you the App before creating it; you can change its name there.</p>"
            "<ul>"
            f"<li>webhooks go to <code>{_e(manifest['hook_attributes']['url'])}</code></li>"
            f"<li>permissions: {permissions}</li>"
            f"<li>events: {_e(', '.join(EVENTS))}</li>"
            f"<li>the credentials will be written to <code>{_e(options.env_file)}</code> and "
            f"<code>{_e(options.key_file)}</code></li>"
            "</ul>"
            f'<form method="post" action="{_e(form_target)}">'
            f'<input type="hidden" name="manifest" value="{_e(json.dumps(manifest))}">'
            f'<button type="submit">Register the App on {_e(github_origin)}</button>'
            "</form>"
        )
        return _page("Register perfbot on GitHub", body, form_action=github_origin)

    async def callback(request: Request) -> HTMLResponse:
        state = request.query_params.get("state", "")
        code = request.query_params.get("code", "")
        if not hmac.compare_digest(state.encode(), flow.state.encode()):
            return _page(
                "This link is not from your setup",
                "<p>The <code>state</code> does not match the setup page this command "
                "showed, so the code was not used and nothing was written. Start from "
                '<a href="/">the setup page</a>.</p>',
                400,
            )
        async with flow.lock:
            if flow.done:
                return _page("Already done", "<p>The credentials were written already.</p>", 409)
            try:
                credentials = await exchange_code(options.api, code, transport=transport)
            except SetupError as exc:
                return _page(
                    "Registration not completed",
                    f"<p>{_e(exc)}</p><p><a href='/'>Back to the setup page</a></p>",
                    400,
                )
            try:
                write_credentials(credentials, options)
            except (OSError, SetupError) as exc:
                reason = f"{exc.filename}: {exc.strerror}." if isinstance(exc, OSError) else exc
                return _page(
                    "The credentials could not be written",
                    f"<p>The App <b>{_e(credentials.name)}</b> (id {credentials.app_id}) was "
                    f"created on GitHub, but {_e(reason)} On "
                    f'<a href="{_e(credentials.html_url)}">its page</a>, generate a private key '
                    "and set a webhook secret, then set the variables by hand (docs/operators/"
                    "settings.md).</p>",
                    500,
                )
            flow.done = True
        install = f"{credentials.html_url}/installations/new"
        missing_secret = (
            ""
            if credentials.webhook_secret
            else "<p><b>GitHub returned no webhook secret:</b> set one on the App's page and "
            "put it in <code>PERFBOT_WEBHOOK_SECRET</code>.</p>"
        )
        body = (
            f"<p>The App <b>{_e(credentials.name)}</b> (id {credentials.app_id}) is registered. "
            f"Its credentials are in <code>{_e(options.env_file)}</code> and "
            f"<code>{_e(options.key_file)}</code>.</p>{missing_secret}"
            f'<p>Install it on your repositories: <a href="{_e(install)}">{_e(install)}</a></p>'
            "<p>Then start perfbot with <code>perfbot serve</code> in the directory of the env "
            "file (or with <code>PERFBOT_ENV_FILE</code> pointing at it). You can close this "
            "page.</p>"
        )
        response = _page("perfbot is registered", body)
        response.background = BackgroundTask(on_done, credentials)
        return response

    return Starlette(
        routes=[
            Route("/", start, methods=["GET"]),
            Route("/callback", callback, methods=["GET"], name="callback"),
        ],
        # Only the names this page is reached by: a page of another site that rebinds its
        # DNS name to 127.0.0.1 cannot read the state token.
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))],
    )


def run_setup(options: SetupOptions, host: str, port: int, out: TextIO = sys.stdout) -> int:
    """Serve the setup pages until the credentials are written; 0 then."""
    validate(options)
    if not _is_loopback(host):
        # The page hands out the state that completes the registration: whoever reaches
        # it could have their own App's credentials written here.
        raise SetupError(
            f"--host {host} is not a loopback address: the setup page must only be reachable "
            "from this machine (127.0.0.1, ::1 or localhost). From another machine, use an "
            "SSH tunnel: ssh -L 3000:127.0.0.1:3000 <this host>."
        )
    hosts: tuple[str, ...] = (*_LOOPBACK_NAMES, host)
    written: list[Credentials] = []
    server: uvicorn.Server | None = None

    def finished(credentials: Credentials) -> None:
        written.append(credentials)
        if server is not None:
            server.should_exit = True

    app = create_setup_app(options, on_done=finished, allowed_hosts=hosts)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise SetupError(f"cannot listen on {host}:{port}: {exc.strerror}.") from None
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    shown = f"[{shown_host}]" if ":" in shown_host else shown_host
    print(
        f"perfbot setup: open http://{shown}:{sock.getsockname()[1]}/ in your browser to "
        f"register the App (webhooks will go to {base_url(options.public_url, 'URL')}/webhook).",
        file=out,
        flush=True,
    )
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", ws="none")
    )
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    if not written:
        print("perfbot setup: stopped before an App was registered.", file=out, flush=True)
        return 1
    credentials = written[0]
    print(
        f"perfbot setup: wrote {options.env_file} and {options.key_file} for App "
        f"{credentials.app_id}. Install it: {credentials.html_url}/installations/new",
        file=out,
        flush=True,
    )
    return 0


def _is_loopback(host: str) -> bool:
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
