"""Serving the API and the storage: credentials checked, routes matched and answered, every
exchange recorded."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, cast

import jwt
from starlette.requests import Request
from starlette.responses import Response

from perfbot.sandbox.asgi import HandlerApp, path_of, set_headers
from perfbot.sandbox.common import (
    DEFAULT_API_URL,
    DEFAULT_API_VERSION,
    DEFAULT_STORAGE_URL,
    RENDERING,
    SUPPORTED_API_VERSIONS,
    is_token_path,
)
from perfbot.sandbox.models import OBSERVERS, RecordedRequest, Repo, StorageRequest, Token
from perfbot.sandbox.plumbing import (
    ApiRoute,
    Call,
    Credential,
    HttpError,
    error_json,
    parse_body,
    recorded_body,
)
from perfbot.sandbox.routes import CONDITIONAL, match_route
from perfbot.sandbox.server import FakeTransport
from perfbot.sandbox.webhooks import FakeWebhooks

if TYPE_CHECKING:
    from perfbot.sandbox.fakegithub import FakeGitHub


class FakeServing(FakeWebhooks):
    def __init__(
        self,
        app_id: int = 4242,
        app_slug: str = "perfbot-test",
        public_key_pem: str | bytes | None = None,
        api_url: str = DEFAULT_API_URL,
        storage_url: str = DEFAULT_STORAGE_URL,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(app_id, app_slug, public_key_pem, api_url, storage_url, now)
        self.api_app = HandlerApp(self._serve_api)
        self.storage_app = HandlerApp(self._serve_storage)

    def transport(self) -> FakeTransport:
        """An httpx transport that answers ``api_url`` and ``storage_url`` in-process."""
        return FakeTransport(self)

    def _identify(self, header: str | None) -> Credential:
        """Which valid credential the Authorization header carries (no side effects)."""
        if not header:
            return Credential(None, None, "Requires authentication")
        scheme, _, value = header.partition(" ")
        scheme, value = scheme.lower(), value.strip()
        if scheme not in ("bearer", "token") or not value:
            return Credential(None, None, "Bad credentials")
        if scheme == "bearer" and value.count(".") == 2:
            problem = self._jwt_problem(value)
            return Credential(None if problem else "jwt", None, problem or "")
        token = self.tokens.get(value)
        if token is None or token.expires_at <= self.now():
            return Credential(None, None, "Bad credentials")
        return Credential("token", token, "")

    def _jwt_problem(self, raw: str) -> str | None:
        """Why GitHub would refuse this App JWT, or None. Uses the real clock (see __init__)."""
        try:
            claims = jwt.decode(
                raw,
                self.public_key_pem,
                algorithms=["RS256"],
                issuer=str(self.app_id),
                options={"require": ["iat", "exp", "iss"]},
            )
        except jwt.ExpiredSignatureError:
            return (
                "'Expiration time' claim ('exp') must be a numeric value representing the "
                "future time at which the assertion expires"
            )
        except jwt.InvalidIssuerError:
            return "'Issuer' claim ('iss') must be the App's id"
        except jwt.PyJWTError:
            return "A JSON web token could not be decoded"
        if int(claims["exp"]) > time.time() + 600 + 30:
            return "'Expiration time' claim ('exp') is too far in the future"
        return None

    async def _serve_api(self, request: Request) -> Response:
        started = time.perf_counter()
        raw = await request.body()
        credential = self._identify(request.headers.get("authorization"))
        record = RecordedRequest(
            method=request.method,
            path=path_of(request),
            query=dict(request.query_params),
            status=0,
            auth=credential.kind,
            duration=0.0,
            installation_id=credential.token.installation_id if credential.token else None,
            body=recorded_body(raw),
            api_version=request.headers.get("x-github-api-version"),
            user_agent=request.headers.get("user-agent", ""),
            at=self.now().timestamp(),
        )
        self.requests.append(record)
        if record.installation_id is not None and not is_token_path(record.path):
            self._calls_per_installation[record.installation_id] += 1
        try:
            response = await self._answer(request, raw, credential)
        finally:
            record.duration = time.perf_counter() - started
        record.status = response.status_code
        record.response_type = response.headers.get("content-type", "")
        record.response_body = bytes(response.body)
        for observer in OBSERVERS:
            # Every FakeServing is a FakeGitHub: the class exists only as the fake's base.
            observer(cast("FakeGitHub", self), record)
        return response

    async def _answer(self, request: Request, raw: bytes, credential: Credential) -> Response:
        path = path_of(request)
        await self._delay(path, api=True, method=request.method)
        if (chaotic := await self._chaotic_answer(path)) is not None:
            return chaotic
        if (injected := self._injected_failure(path)) is not None:
            return injected
        route, params = match_route(request.method, path)
        if route is None:
            self.unknown_routes.append(f"{request.method} {path}")
            return error_json(501, f"fake GitHub does not implement {request.method} {path}")
        version = request.headers.get("x-github-api-version", DEFAULT_API_VERSION)
        rendering = RENDERING.set(version)
        try:
            call = self._authorize(route, params, request, raw, credential)
            response = route.handler(call)
        except HttpError as error:
            response = error.response()
        finally:
            RENDERING.reset(rendering)
        if request.method == "GET" and response.status_code == 200:
            response = self._validated(request, route, response, credential)
        self._decorate(response, request, route, credential)
        return response

    def _validated(
        self, request: Request, route: ApiRoute, response: Response, credential: Credential
    ) -> Response:
        """The answer with its ``ETag``; a 304 instead where the operation documents one and
        ``If-None-Match`` names the answer's current ETag (GitHub does not count a 304
        against the rate limit, nor does the fake)."""
        etag = f'W/"{hashlib.sha256(bytes(response.body)).hexdigest()[:40]}"'
        response.headers["etag"] = etag
        asked = request.headers.get("if-none-match", "")
        if route.handler not in CONDITIONAL or etag not in (t.strip() for t in asked.split(",")):
            return response
        if credential.token is not None:
            self._calls_per_installation[credential.token.installation_id] -= 1
        return Response(status_code=304, headers={"etag": etag})

    def _authorize(
        self,
        route: ApiRoute,
        params: dict[str, str],
        request: Request,
        raw: bytes,
        credential: Credential,
    ) -> Call:
        version = request.headers.get("x-github-api-version", DEFAULT_API_VERSION)
        if version not in SUPPORTED_API_VERSIONS:
            raise HttpError(400, f"Unsupported 'X-GitHub-Api-Version': '{version}'")
        body = parse_body(raw)
        if route.public:
            return Call(self, request, params, body, None, None)
        if route.auth == "jwt":
            if credential.kind != "jwt":
                raise HttpError(401, credential.problem or "A JSON web token could not be decoded")
            return Call(self, request, params, body, None, None)
        if credential.token is None:
            raise HttpError(
                401, credential.problem or "This route needs an installation token, not a JWT"
            )
        repo = self._visible_repo(params, credential.token)
        if not credential.token.allows(route.permissions, route.level):
            raise HttpError(403, "Resource not accessible by integration")
        return Call(self, request, params, body, credential.token, repo)

    def _visible_repo(self, params: Mapping[str, str], token: Token) -> Repo:
        """The repository of the URL, or 404 as GitHub answers for one the token cannot see."""
        repo = self.repos.get(f"{params['owner']}/{params['repo']}".lower())
        if (
            repo is None
            or repo.installation_id != token.installation_id
            or (token.repository_ids is not None and repo.id not in token.repository_ids)
        ):
            raise HttpError(404, "Not Found")
        return repo

    def _decorate(
        self, response: Response, request: Request, route: ApiRoute, credential: Credential
    ) -> None:
        added = {
            "x-github-request-id": f"FAKE:{len(self.requests):06d}",
            "x-github-api-version-selected": request.headers.get(
                "x-github-api-version", DEFAULT_API_VERSION
            ),
        }
        if route.permissions:
            # GitHub's format: "; " between alternatives, "," inside one set.
            added["x-accepted-github-permissions"] = "; ".join(
                f"{name}={route.level}" for name in route.permissions
            )
        if credential.token is not None:
            used = self._calls_per_installation[credential.token.installation_id]
            reset = int(self.now().timestamp()) + 3600
            added["x-ratelimit-limit"] = str(self.rate_limit)
            added["x-ratelimit-used"] = str(used)
            added["x-ratelimit-remaining"] = str(max(0, self.rate_limit - used))
            added["x-ratelimit-reset"] = str(reset)
            added["x-ratelimit-resource"] = "core"
        set_headers(response, added)

    async def _serve_storage(self, request: Request) -> Response:
        record = StorageRequest(
            method=request.method,
            path=path_of(request),
            headers={key.lower(): value for key, value in request.headers.items()},
            status=0,
        )
        self.storage_requests.append(record)
        await self._delay(path_of(request), api=False, method=request.method)
        response = self._injected_failure(path_of(request)) or self._blob_response(request)
        record.status = response.status_code
        return response

    def _blob_response(self, request: Request) -> Response:
        match = re.fullmatch(r"/blobs/([A-Za-z0-9_-]+)", path_of(request))
        if request.method != "GET" or match is None:
            return Response("BlobNotFound", status_code=404, media_type="text/plain")
        if "authorization" in request.headers:
            # The URL is already signed; a signed-URL store refuses a second credential, and
            # a GitHub token has no business leaving api.github.com anyway.
            return Response(
                "InvalidAuthenticationInfo: signed URL used with an Authorization header",
                status_code=400,
                media_type="text/plain",
            )
        blob = self.blobs.get(match.group(1))
        if blob is None:
            return Response("BlobNotFound", status_code=404, media_type="text/plain")
        if blob.expires_at <= self.now():
            return Response(
                "AuthenticationFailed: signed expiry time has passed",
                status_code=403,
                media_type="text/plain",
            )
        artifact = self.artifacts.get(blob.artifact_id)
        filename = f"{artifact.name if artifact else 'artifact'}.zip"
        return Response(
            blob.data,
            media_type="application/zip",
            headers={"content-disposition": f"attachment; filename={filename}"},
        )
