"""The App: its JWT-authenticated client, a client per installation, and its delivery log."""

from __future__ import annotations

import json
import logging
from functools import partial

import httpx
from githubkit import AppAuthStrategy

from perfbot.github.conditional import Validators
from perfbot.github.dryrun import DryRun
from perfbot.github.dryrun_transport import WriteGate
from perfbot.github.errors import GitHubError
from perfbot.github.httpx_edge import HttpxWire
from perfbot.github.installation import Installation
from perfbot.github.pacing import APP_KEY, Pacer, installation_key
from perfbot.github.pools import Pools
from perfbot.github.tokens import TokenGate
from perfbot.github.transport import PAGE_SIZE, _call, _client
from perfbot.github.types import HookDelivery, RecordedDelivery
from perfbot.github.wire import API_VERSION, ApiVersioned, Metered
from perfbot.support.metrics import Metrics
from perfbot.support.shared import SharedCalls

# The name this logger had before perfbot.github became a package.
log = logging.getLogger("perfbot.github")


class GitHubApp:
    """The App: its JWT-authenticated client and a client per installation."""

    def __init__(
        self,
        app_id: int,
        private_key: str,
        base_url: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        metrics: Metrics | None = None,
        max_connections: int = 32,
        pacer: Pacer | None = None,
        dry_run: DryRun | None = None,
        api_version: str = API_VERSION,
    ) -> None:
        self.app_id = app_id
        # Set: nothing is written to GitHub, every write is recorded there instead.
        self.dry_run = dry_run
        # Every installation's pace (and the App's own writes'); None: nothing paced.
        self.pacer = pacer
        # One wire for the process: the network's pools, or what a test hands in.
        self._wire = Metered(HttpxWire(transport) if transport else Pools(max_connections), metrics)
        # Storage gets pools of its own: in a pool shared by two hosts, a request waiting
        # for one host closes an idle connection to the other, and under load every
        # artifact download would cost two new connections.
        self._storage = self._wire if transport else Metered(Pools(max_connections), metrics)
        # Every API request passes the gate, githubkit's and the direct calls alike: a dry
        # run's writes stop there, and so does any request naming an id a dry run made up
        # (dry run or not: GitHub never sees one).
        self._api = ApiVersioned(WriteGate(self._wire, dry_run), api_version)
        self._github = _client(AppAuthStrategy(str(app_id), private_key), base_url, self._api)
        self._bot_login: str | None = None
        self._asking_bot_login: SharedCalls[None, str] = SharedCalls()
        self._token_gates: dict[int, TokenGate] = {}
        # The last answers of conditional reads, every installation's (keyed by it).
        self._validators = Validators()

    def installation(self, installation_id: int) -> Installation:
        auth = self._github.auth.as_installation(installation_id)
        gate = self._token_gates.get(installation_id)
        if gate is None:
            gate = self._token_gates[installation_id] = TokenGate()
        return Installation(
            self._github.with_auth(auth),
            self._api,
            self._storage,
            self.app_id,
            gate,
            installation_id=installation_id,
            pacer=self.pacer,
            pace_key=installation_key(installation_id),
            validators=self._validators,
        )

    async def bot_login(self) -> str:
        """``<slug>[bot]``, the login of the App's comments (asked once, then cached).

        Jobs asking together share one request, and its failure: they don't queue up to
        ask one after another behind a GitHub that does not answer.
        """
        if self._bot_login is not None:
            return self._bot_login
        return await self._asking_bot_login.call(None, self._ask_bot_login)

    async def _ask_bot_login(self) -> str:
        response = await _call("GET", self._github.rest.apps.async_get_authenticated)
        app = response.parsed_data
        slug = app.slug if app is not None and app.slug else str(self.app_id)
        self._bot_login = f"{slug}[bot]"
        return self._bot_login

    async def list_hook_deliveries(self, since: float, max_pages: int) -> list[HookDelivery]:
        """The App webhook's delivery attempts since ``since`` (UNIX seconds), newest first.

        Follows the ``cursor`` of the Link header's ``next`` page and stops at the first
        attempt older than ``since`` or after ``max_pages`` pages.
        """
        attempts: list[HookDelivery] = []
        cursor: str | None = None
        for _ in range(max_pages):
            list_page = self._github.rest.apps.async_list_webhook_deliveries
            send = (
                partial(list_page, per_page=PAGE_SIZE, cursor=cursor)
                if cursor
                else partial(list_page, per_page=PAGE_SIZE)
            )
            response = await _call("GET", send)
            for item in response.parsed_data:
                delivered_at = item.delivered_at.timestamp()
                if delivered_at < since:
                    return attempts
                attempts.append(
                    HookDelivery(
                        id=item.id,
                        guid=item.guid,
                        delivered_at=delivered_at,
                        ok=item.status == "OK" and 200 <= item.status_code < 300,
                        event=item.event,
                        action=item.action,
                    )
                )
            next_url = response.raw_response.links.get("next", {}).get("url")
            cursor = httpx.URL(next_url).params.get("cursor") if next_url else None
            if not cursor:
                return attempts
        log.warning(
            "delivery log longer than %s pages: the older attempts were not read", max_pages
        )
        return attempts

    async def hook_delivery(self, delivery_id: int) -> RecordedDelivery | None:
        """The delivery attempt ``delivery_id`` of the App's log with its payload; None when
        GitHub has none of that id (the log keeps three days)."""
        send = partial(self._github.rest.apps.async_get_webhook_delivery, delivery_id)
        try:
            response = await _call("GET", send)
        except GitHubError as exc:
            if exc.status in (404, 422):
                return None
            raise
        try:
            data: object = json.loads(response.content)
        except ValueError:
            raise GitHubError(f"GitHub's answer about delivery {delivery_id} is not JSON") from None
        request = data.get("request") if isinstance(data, dict) else None
        payload = request.get("payload") if isinstance(request, dict) else None
        if not isinstance(data, dict) or not isinstance(payload, dict):
            raise GitHubError(f"GitHub's log holds no payload for delivery {delivery_id}")
        return RecordedDelivery(
            guid=str(data.get("guid") or delivery_id),
            event=str(data.get("event") or ""),
            body=json.dumps(payload).encode(),
        )

    async def redeliver(self, delivery_id: int) -> None:
        """Ask GitHub to send the delivery attempt ``delivery_id`` again (never retried here),
        in the App's own pace."""
        send = partial(self._github.rest.apps.async_redeliver_webhook_delivery, delivery_id)
        if self.pacer is None:
            await _call("POST", send)
            return
        await self.pacer.write(APP_KEY, False, lambda: _call("POST", send))

    async def close(self) -> None:
        await self._wire.close()
        if self._storage is not self._wire:
            await self._storage.close()
