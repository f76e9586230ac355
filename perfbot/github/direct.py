"""The hot REST calls sent straight into the API's wire, with no httpx request or client.

githubkit's generated calls build an httpx client, merge and parse each URL three times,
run httpx's auth, redirect and cookie machinery, and validate every answer into pydantic
models that perfbot then copies into its own small types; and even a request built once
and sent through githubkit's transport costs an httpx request, URL and response, and
githubkit's auth flow, each time. The calls of a steady-state update (list a run's
artifacts, the artifact's redirect, read the PR and the configuration, write the comment
and the check run) come here instead:

* the request is a ``wire.Call``, its headers the ones githubkit sends (user agent,
  ``Accept``) copied from a set built once, a JSON body encoded once; it goes through the
  same wire as githubkit's requests (the API version, the dry run's ``WriteGate``, the
  deadline, the metrics, the shared pools);
* its credential is the installation's token from the client's own token cache (the one
  githubkit's auth flow fills and renews); when the cache has none, or for a call that is
  not about a repository, githubkit's auth flow says what to send (and exchanges the
  App's JWT for the token first, through the same wire);
* an error status is checked by githubkit's own ``_check`` (errors and rate limits raise
  what githubkit raises, which ``transport._mapped`` maps); a success is read by the
  caller (``answers``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import httpx
import orjson
from githubkit import GitHub
from githubkit.auth.app import AppAuth
from githubkit.exception import RequestError, RequestTimeout
from githubkit.utils import UNSET
from multidict import CIMultiDict

from perfbot.github.httpx_edge import HttpxEdge, as_response
from perfbot.github.wire import ACCEPT_ENCODING, Answer, Call, Wire


class Direct:
    """Requests with a githubkit client's base URL, auth and token cache, sent into
    ``api`` (the wire under that client's transport)."""

    def __init__(self, github: GitHub[Any], api: Wire) -> None:
        config = github.config
        self._github = github
        self._wire = api
        self._base = str(config.base_url).rstrip("/")
        self._base_path = config.base_url.path.rstrip("/")
        self._auth = github.auth.get_auth_flow(github)
        self._edge = HttpxEdge(api)
        self._cache = config.cache_strategy
        auth = self._auth
        # The installation token's key in the token cache (None: not an installation's).
        self._token_key = (
            auth._get_installation_cache_key()
            if isinstance(auth, AppAuth) and auth.installation_id is not UNSET
            else None
        )
        self._headers: CIMultiDict[str] = CIMultiDict(
            {
                "User-Agent": config.user_agent,
                "Accept": config.accept,
                "Accept-Encoding": ACCEPT_ENCODING,
                "Cache-Control": "no-cache",
            }
        )

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        """``method path`` (``path`` from the API root, ``/repos/…``), checked as githubkit
        checks its answers: an error status raises githubkit's ``RequestFailed`` (or its
        rate-limit errors), a failure to reach GitHub its ``RequestError`` (a timeout:
        ``TimeoutError``)."""
        sent = self._headers.copy()
        if headers:
            sent.update(headers)
        content = None
        if body is not None:
            content = orjson.dumps(body)
            sent["Content-Type"] = "application/json"
        url = self._base + path
        if params:
            url += "?" + urlencode(params)
        try:
            authorization = await self._authorization(method, url, path)
            if authorization is not None:
                sent["Authorization"] = authorization
            answer = await self._wire.send(Call(method, url, self._base_path + path, sent, content))
        except TimeoutError:
            raise
        except httpx.TimeoutException as exc:
            raise RequestTimeout(exc) from exc
        except Exception as exc:
            # As githubkit wraps them: a failed token exchange inside the auth flow too.
            raise RequestError(exc) from exc
        if answer.status_code >= 400:
            self._refuse(method, url, answer)
        return answer

    async def _authorization(self, method: str, url: str, path: str) -> str | None:
        """The installation's token as its auth flow would send it: from the cache when it
        holds one (a repository's call), else through the flow itself."""
        if self._token_key is not None and path.startswith("/repos/"):
            cache = await self._cache.get_async_cache_storage()
            token = await cache.aget(self._token_key)
            if token:
                return f"token {token}"
        return await self._through_flow(method, url)

    async def _through_flow(self, method: str, url: str) -> str | None:
        """The ``Authorization`` githubkit's auth flow gives a request to ``url``, after any
        request of its own (the token exchange) sent through the wire."""
        probe = httpx.Request(method, url)
        flow = self._auth.async_auth_flow(probe)
        try:
            request = await flow.__anext__()
            while request is not probe:
                response = await self._edge.handle_async_request(request)
                await response.aread()
                request = await flow.asend(response)
        finally:
            await flow.aclose()
        authorization: str | None = probe.headers.get("authorization")
        return authorization

    def _refuse(self, method: str, url: str, answer: Answer) -> None:
        """Raise what githubkit raises for this error answer."""
        self._github._check(as_response(answer, httpx.Request(method, url)))
        raise AssertionError(f"githubkit let an answer {answer.status_code} pass")
