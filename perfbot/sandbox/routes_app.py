"""The App's own endpoints: ``/app``, installation tokens, the delivery log, the manifest
conversion."""

from __future__ import annotations

import re
import secrets
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from starlette.responses import Response

from perfbot.sandbox.common import LEVELS, Json, iso
from perfbot.sandbox.issue_json import delivery_json
from perfbot.sandbox.models import Installation, Repo
from perfbot.sandbox.plumbing import Call, HttpError, body_dict, int_query, json_response
from perfbot.sandbox.repo_json import app_json, known_repo_json

if TYPE_CHECKING:
    from perfbot.sandbox.building import FakeBuilding


def get_app(call: Call) -> Response:
    return json_response(app_json(call.fake))


def convert_manifest_code(call: Call) -> Response:
    """``POST /app-manifests/{code}/conversions``: the App made from the manifest, with its
    private key and webhook secret; a code converts once (then 404, as on GitHub).

    The new App becomes the fake's App: its slug is the manifest's name, its key the fresh one
    (the id stays ``fake.app_id``), so a perfbot given these credentials can talk to the fake.
    """
    fake = call.fake
    manifest = fake.manifest_codes.pop(call.params["code"], None)
    if manifest is None:
        raise HttpError(404, "Not Found")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    # GitHub hands out PKCS#1 keys ("BEGIN RSA PRIVATE KEY").
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.TraditionalOpenSSL, NoEncryption())
    public = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    fake.app_slug = re.sub(r"[^a-z0-9]+", "-", str(manifest["name"]).lower()).strip("-")
    fake.public_key_pem = public.decode()
    app = app_json(fake)
    app.update(
        name=manifest["name"],
        description=manifest.get("description"),
        external_url=manifest["url"],
        permissions=dict(manifest.get("default_permissions") or {"metadata": "read"}),
        events=list(manifest.get("default_events") or []),
        installations_count=0,
        client_secret=secrets.token_hex(20),
        webhook_secret=secrets.token_hex(20),
        pem=pem.decode(),
    )
    fake.converted_apps.append(app)
    return json_response(app, 201)


def create_installation_token(call: Call) -> Response:
    fake = call.fake
    installation = fake.installations.get(call.int_param("installation_id"))
    if installation is None:
        raise HttpError(404, "Not Found")
    if installation.suspended:
        raise HttpError(403, "This installation has been suspended")
    body = body_dict(call)
    repos = requested_repos(fake, installation, body)
    permissions = requested_permissions(installation, body)
    ids = None if repos is None else frozenset(r.id for r in repos)
    token = fake._issue_token(installation, permissions, ids)
    content: Json = {
        "token": token.value,
        "expires_at": iso(token.expires_at),
        "permissions": token.permissions,
        "repository_selection": "selected" if repos else installation.repository_selection,
    }
    if repos is not None:
        content["repositories"] = [known_repo_json(fake, r) for r in repos]
    return json_response(content, 201)


def requested_repos(
    fake: FakeBuilding, installation: Installation, body: Json
) -> list[Repo] | None:
    """The repositories a token was narrowed to, or None for all of the installation's."""
    names, ids = body.get("repositories"), body.get("repository_ids")
    if names is None and ids is None:
        return None
    own = [r for r in fake.repos.values() if r.installation_id == installation.id]
    chosen: dict[int, Repo] = {}
    wanted = [("name", str(n).lower()) for n in names or []] + [("id", i) for i in ids or []]
    for kind, value in wanted:
        found = [r for r in own if (r.name.lower() if kind == "name" else r.id) == value]
        if not found:
            raise HttpError(
                422,
                "There is at least one repository that does not exist or is not accessible to "
                "the parent installation.",
            )
        chosen[found[0].id] = found[0]
    return list(chosen.values())


def requested_permissions(installation: Installation, body: Json) -> dict[str, str]:
    requested = body.get("permissions")
    if requested is None:
        return dict(installation.permissions)
    for name, level in requested.items():
        granted = installation.permissions.get(name, "none")
        if LEVELS.get(level, 99) > LEVELS[granted]:
            raise HttpError(422, "The permissions requested are not granted to this installation.")
    # Metadata read comes with every installation token.
    return {"metadata": "read", **requested}


def list_deliveries(call: Call) -> Response:
    per_page = int_query(call, "per_page", 30, 1, 100)
    items = sorted(call.fake.deliveries, key=lambda d: d.id, reverse=True)
    status = call.query.get("status")
    if status == "success":
        items = [d for d in items if d.status == "OK"]
    elif status == "failure":
        items = [d for d in items if d.status != "OK"]
    cursor = call.query.get("cursor")
    if cursor:
        # The fake's cursors are "v1_<id of the last item seen>", opaque to clients.
        below = cursor.removeprefix("v1_")
        if not below.isdigit():
            raise HttpError(422, f"Invalid cursor {cursor!r}")
        items = [d for d in items if d.id < int(below)]
    page, rest = items[:per_page], items[per_page:]
    headers = {}
    if rest:
        next_url = call.request.url.include_query_params(cursor=f"v1_{page[-1].id}")
        headers["link"] = f'<{next_url}>; rel="next"'
    return json_response([delivery_json(d) for d in page], headers=headers)


def get_delivery(call: Call) -> Response:
    """One attempt of the delivery log with its request and response, as GitHub shows it."""
    delivery_id = call.int_param("delivery_id")
    delivery = next((d for d in call.fake.deliveries if d.id == delivery_id), None)
    if delivery is None:
        raise HttpError(404, "Not Found")
    headers = {
        "Accept": "*/*",
        "User-Agent": "GitHub-Hookshot/fake",
        "X-GitHub-Delivery": delivery.guid,
        "X-GitHub-Event": delivery.event,
        "X-GitHub-Hook-ID": "1",
        "content-type": "application/json",
    }
    return json_response(
        {
            **delivery_json(delivery),
            "url": "",
            "request": {"headers": headers, "payload": delivery.payload},
            "response": {"headers": {}, "payload": None},
        }
    )


def redeliver(call: Call) -> Response:
    delivery_id = call.int_param("delivery_id")
    if not any(d.id == delivery_id for d in call.fake.deliveries):
        raise HttpError(404, "Not Found")
    call.fake.redeliveries.append(delivery_id)
    return json_response({}, 202)
