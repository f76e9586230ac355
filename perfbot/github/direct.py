"""The hot REST calls sent straight through a githubkit client's transport.

githubkit's generated calls build an httpx client, merge and parse each URL three times,
run httpx's auth, redirect and cookie machinery, and validate every answer into pydantic
models that perfbot then copies into its own small types: measured under
``bench/service.py``, that stack cost more CPU per event than perfbot's own work. The
calls of a steady-state update (list a run's artifacts, the artifact's redirect, read the
PR and the configuration, write the comment and the check run) come here instead:

* the request is built once, with the headers githubkit sends (user agent, ``Accept``,
  ``X-GitHub-Api-Version``) and a JSON body encoded once;
* it goes through the client's own transport (so the dry run's ``WriteGate``, the shared
  pools and the metrics see it as before) and its own auth flow (the App's installation
  token, from the same token cache as githubkit's calls);
* the answer is checked by githubkit's own ``_check`` (errors and rate limits raise what
  githubkit raises, which ``transport._mapped`` maps), and read as JSON by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
import orjson
from githubkit import GitHub, Response
from githubkit.exception import RequestError, RequestTimeout

from perfbot.github.transport import API_VERSION, API_VERSION_HEADER, CALL_TIMEOUT

_TIMEOUT = CALL_TIMEOUT.as_dict()


class Direct:
    """Requests of one githubkit client (its base URL, auth and transport), without the
    client."""

    def __init__(self, github: GitHub[Any]) -> None:
        config = github.config
        self._github = github
        self._base = str(config.base_url).rstrip("/") + "/"
        self._auth = github.auth.get_auth_flow(github)
        transport = config.async_transport
        if transport is None:
            raise ValueError("a direct call needs the client's transport")
        self._transport: httpx.AsyncBaseTransport = transport
        self._headers = {
            "User-Agent": config.user_agent,
            "Accept": config.accept,
            "Accept-Encoding": "gzip, deflate",  # what httpx's client asks for
            "Cache-Control": "no-cache",
            API_VERSION_HEADER: API_VERSION,
        }

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Response[Any, Any]:
        """``method path`` (``path`` from the API root, ``/repos/…``), checked as githubkit
        checks its answers: an error status raises githubkit's ``RequestFailed`` (or its
        rate-limit errors), a failure to reach GitHub its ``RequestError``."""
        sent = {**self._headers, **headers} if headers else dict(self._headers)
        content = None
        if body is not None:
            content = orjson.dumps(body)
            sent["Content-Type"] = "application/json"
        request = httpx.Request(
            method,
            self._base + path.lstrip("/"),
            params=params,
            headers=sent,
            content=content,
            extensions={"timeout": _TIMEOUT},
        )
        try:
            response = await self._send(request)
        except httpx.TimeoutException as exc:
            raise RequestTimeout(exc) from exc
        except Exception as exc:
            # As githubkit wraps them: a failed token exchange inside the auth flow too.
            raise RequestError(exc) from exc
        return self._github._check(response)

    async def _send(self, request: httpx.Request) -> httpx.Response:
        """The request through the auth flow (which may first exchange the App's JWT for
        the installation's token) and the transport, as httpx's client drives them."""
        flow = self._auth.async_auth_flow(request)
        try:
            request = await flow.__anext__()
            while True:
                response = await self._transport.handle_async_request(request)
                response.request = request
                try:
                    await response.aread()
                    try:
                        request = await flow.asend(response)
                    except StopAsyncIteration:
                        return response
                finally:
                    await response.aclose()
        finally:
            await flow.aclose()
