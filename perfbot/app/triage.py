"""Webhook deliveries without I/O: the signature check, and which deliveries become jobs."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

import orjson
import simdjson

from perfbot.app.jobs import (
    WORKFLOW_RUN_ACTIONS,
    AnyJob,
    BadPayload,
    encode,
    operator_refusal,
    person_command,
    read_installation,
    read_rerequest,
    read_workflow_run,
)
from perfbot.app.jsonobject import JSONObject, is_object
from perfbot.errors import PerfbotError
from perfbot.store.base import NewJob

# GitHub never delivers a payload over 25 MB; anything bigger is not from GitHub. The
# operator's cap (PERFBOT_MAX_BODY_BYTES) may be lower, never higher.
MAX_BODY_BYTES = 25 * 1024 * 1024
SIGNATURE_PREFIX = "sha256="
# The one shape of X-Hub-Signature-256 GitHub sends: checked before a byte of the body is
# read, so a sender without it holds no memory at all.
_SIGNATURE_SHAPE = re.compile(r"sha256=[0-9a-fA-F]{64}")
MALFORMED_SIGNATURE = "missing or malformed X-Hub-Signature-256 header"

# Uninstalling perfbot, or removing repositories from it, drops their stored state.
UNINSTALL_ACTIONS = frozenset(
    {("installation", "deleted"), ("installation_repositories", "removed")}
)
# A suspended installation gets no GitHub call from perfbot until it is unsuspended.
SUSPENSION_ACTIONS = frozenset({("installation", "suspend"), ("installation", "unsuspend")})


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


def job_for(
    delivery: Delivery, repo_disabled: Callable[[str], bool] = lambda _name: False
) -> NewJob | None:
    """The job a delivery asks for, or None when perfbot has nothing to do with it.

    ``repo_disabled`` is the operator's deny list: a denied repository gets no job at all.
    A delivery lacking a field GitHub always sets is no job either (nothing could run it).
    """
    if operator_refusal(repo_disabled, delivery.repository) is not None:
        return None
    try:
        if delivery.event == "workflow_run" and delivery.action in WORKFLOW_RUN_ACTIONS:
            return _workflow_run_job(delivery)
        if delivery.event == "issue_comment" and delivery.action == "created":
            return _issue_comment_job(delivery)
        if delivery.event in ("check_run", "check_suite") and delivery.action == "rerequested":
            return _rerequest_job(delivery)
        if (delivery.event, delivery.action) in UNINSTALL_ACTIONS | SUSPENSION_ACTIONS:
            return _queued(
                delivery,
                read_installation(delivery.event, delivery.payload),
                f"installation:{delivery.installation_id}",
            )
    except BadPayload:
        return None
    return None


def _queued(delivery: Delivery, job: AnyJob, serial_key: str) -> NewJob:
    return NewJob(
        event=delivery.event,
        payload=encode(job),
        serial_key=serial_key,
        installation_id=delivery.installation_id,
    )


def _issue_comment_job(delivery: Delivery) -> NewJob | None:
    """A new PR comment by a person that holds a command (edited comments are ignored)."""
    job = person_command(delivery.payload)
    if job is None:
        return None
    # The same key as the PR's other commands: two quick reruns run one after the other.
    return _queued(delivery, job, f"{job.repo.id}:pr:{job.number}")


def _rerequest_job(delivery: Delivery) -> NewJob | None:
    """The "Re-run" button of a check run or check suite (its app is checked in the job)."""
    subject = delivery.payload.get(delivery.event)
    repo = delivery.payload.get("repository")
    if not is_object(subject) or not is_object(repo):
        return None
    pulls = [p.get("number") for p in subject.get("pull_requests") or [] if is_object(p)]
    numbers = [n for n in pulls if isinstance(n, int)]
    key = (
        f"{repo.get('id')}:pr:{numbers[0]}"
        if len(numbers) == 1
        else f"{repo.get('id')}:sha:{subject.get('head_sha')}"
    )
    return _queued(delivery, read_rerequest(delivery.event, delivery.payload), key)


def _workflow_run_job(delivery: Delivery) -> NewJob | None:
    run = delivery.payload.get("workflow_run")
    repo = delivery.payload.get("repository")
    if not is_object(run) or not is_object(repo):
        return None
    event = run.get("event")
    head_repo = run.get("head_repository")
    if not is_object(head_repo):
        head_repo = {}
    if event == "push":
        # Recorded once finished (no comment to mark stale before): a job per completed
        # push run, which says why when it is not the default branch's measurement.
        if delivery.action != "completed":
            return None
        job = read_workflow_run(_slim_workflow_run(delivery, run, repo, head_repo))
        return _queued(delivery, job, f"{_scalar(repo.get('id'))}:push:{job.run.head_branch}")
    if event != "pull_request":
        return None
    # One pull request is one head branch of one head repository: jobs of its runs are
    # serialised by that pair (the PR number is only proven inside the job).
    key = (
        f"{_scalar(repo.get('id'))}:{_scalar(head_repo.get('id'))}"
        f":{_scalar(run.get('head_branch'))}"
    )
    job = read_workflow_run(_slim_workflow_run(delivery, run, repo, head_repo))
    return _queued(delivery, job, key)


# The workflow_run fields its job keeps. A delivery is 20-30 KB, mostly repository and
# actor details; the job holds only these, so ingest writes a tenth of the bytes.
_RUN_FIELDS = (
    "id",
    "run_attempt",
    "run_number",
    "event",
    "status",
    "conclusion",
    "head_sha",
    "head_branch",
    "name",
    "path",
    "html_url",
)


def _slim_workflow_run(
    delivery: Delivery, run: JSONObject, repo: JSONObject, head_repo: JSONObject
) -> dict[str, Any]:
    """The fields the job reads, each a JSON scalar (a container where GitHub sends a
    scalar becomes null, which the job refuses as it would any unusable field)."""
    owner = repo.get("owner")
    run_repo = run.get("repository")
    pulls = [
        {"number": _scalar(p.get("number")), "base": {"repo": {"id": _base_repo_id(p)}}}
        for p in run.get("pull_requests") or []
        if is_object(p)
    ]
    return {
        "action": delivery.action,
        "installation": {"id": delivery.installation_id},
        "repository": {
            "id": _scalar(repo.get("id")),
            "name": _scalar(repo.get("name")),
            "full_name": _scalar(repo.get("full_name")),
            "default_branch": _scalar(repo.get("default_branch")),
            "owner": {"login": _scalar(owner.get("login")) if is_object(owner) else None},
        },
        "workflow_run": {
            **{field: _scalar(run.get(field)) for field in _RUN_FIELDS},
            "head_repository": {"id": _scalar(head_repo.get("id"))},
            "repository": {"id": _scalar(run_repo.get("id")) if is_object(run_repo) else None},
            "pull_requests": pulls,
        },
    }


def _scalar(value: Any) -> str | int | float | bool | None:
    return value if isinstance(value, str | int | float | bool) else None


def _base_repo_id(pull: JSONObject) -> Any:
    base = pull.get("base")
    repo = base.get("repo") if is_object(base) else None
    return _scalar(repo.get("id")) if is_object(repo) else None
