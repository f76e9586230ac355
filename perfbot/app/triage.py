"""Webhook deliveries without I/O: the signature check, and a delivery's parts.

Which deliveries become jobs is the route table's (``perfbot.app.routes.job_for``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeGuard

import orjson
import simdjson

from perfbot.app.jsonobject import JSONObject, is_object
from perfbot.errors import PerfbotError

# GitHub never delivers a payload over 25 MB; anything bigger is not from GitHub. The
# operator's cap (PERFBOT_MAX_BODY_BYTES) may be lower, never higher.
MAX_BODY_BYTES = 25 * 1024 * 1024
SIGNATURE_PREFIX = "sha256="
# The one shape of X-Hub-Signature-256 GitHub sends: checked before a byte of the body is
# read, so a sender without it holds no memory at all.
_SIGNATURE_SHAPE = re.compile(r"sha256=[0-9a-fA-F]{64}")
MALFORMED_SIGNATURE = "missing or malformed X-Hub-Signature-256 header"


class WebhookError(PerfbotError):
    """A delivery perfbot refuses; ``status`` is the HTTP answer."""

    status = 400


class SignatureMismatch(WebhookError):
    status = 401


class PayloadTooLarge(WebhookError):
    status = 413


class BodyTimeout(WebhookError):
    """The sender did not finish the body in time."""

    status = 408


class Busy(WebhookError):
    """Too many unverified bytes are in flight already; the sender may retry shortly."""

    status = 503


def signature_well_formed(header: str | None) -> TypeGuard[str]:
    """Whether ``header`` has the shape of a GitHub signature (``sha256=`` + 64 hex digits)."""
    return header is not None and _SIGNATURE_SHAPE.fullmatch(header) is not None


def verify_signature(secret: str, body: bytes, header: str | None) -> None:
    """Check ``X-Hub-Signature-256`` in constant time; raises SignatureMismatch.

    Only SHA-256 is accepted: the legacy SHA-1 header is ignored on purpose.
    """
    if header is not None:
        header = header.strip()
    if not signature_well_formed(header):
        raise SignatureMismatch(MALFORMED_SIGNATURE)
    expected = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(SIGNATURE_PREFIX + expected, header):
        raise SignatureMismatch("X-Hub-Signature-256 does not match the body")


def sign(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub would send for ``body``."""
    return SIGNATURE_PREFIX + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class Delivery:
    id: str
    event: str
    action: str | None
    payload: JSONObject
    raw: bytes  # the body as received (its parser has checked it is UTF-8)

    @property
    def body(self) -> str:
        """The body as text, decoded only for the few jobs that keep it whole."""
        return self.raw.decode("utf-8")

    @property
    def repository(self) -> str | None:
        repo = self.payload.get("repository")
        name = repo.get("full_name") if is_object(repo) else None
        return name if isinstance(name, str) else None

    @property
    def installation_id(self) -> int | None:
        installation = self.payload.get("installation")
        value = installation.get("id") if is_object(installation) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_delivery(headers: Mapping[str, str], body: bytes) -> Delivery:
    """A verified delivery's headers and body as a Delivery; raises WebhookError."""
    delivery_id = headers.get("x-github-delivery", "").strip()
    event = headers.get("x-github-event", "").strip()
    if not delivery_id or len(delivery_id) > 100:
        raise WebhookError("missing or malformed X-GitHub-Delivery header")
    if not event or len(event) > 100:
        raise WebhookError("missing X-GitHub-Event header")
    payload = _parse_object(body)
    action = payload.get("action")
    return Delivery(delivery_id, event, action if isinstance(action, str) else None, payload, body)


_UTF8_BOM = b"\xef\xbb\xbf"


def _parse_object(body: bytes) -> JSONObject:
    """The body's JSON object; raises WebhookError. Both parsers refuse invalid UTF-8.

    simdjson indexes a 20 KB delivery in a quarter of orjson's time and converts only the
    fields triage reads; orjson parsed everything, and was a fifth of ingest's time
    (``bench/ingest.py``). A fresh parser per body: a parser's documents stay valid only
    until it parses the next one. What simdjson refuses (integers beyond 64 bits, numbers
    beyond a double, lone surrogates, malformed text) goes to orjson, whose answer stands.
    GitHub never repeats a key, the one point where the two differ (simdjson keeps the
    first, orjson the last).
    """
    try:
        if body.startswith(_UTF8_BOM):
            raise ValueError("a byte-order mark")  # simdjson skips it; orjson refuses it
        document = simdjson.Parser().parse(body)
    except (ValueError, RuntimeError):
        try:
            document = orjson.loads(body)
        except (orjson.JSONDecodeError, RecursionError):
            raise WebhookError("the body is not JSON") from None
    if not is_object(document):
        raise WebhookError("the body is not a JSON object")
    return document
