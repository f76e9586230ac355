"""``WriteGate``: the one layer of the wire (``wire``) every API request of the App passes
through, githubkit's and perfbot's direct calls alike.

* With a ``DryRun``, a write (anything but a read and the installation-token exchange)
  stops here: it is recorded (``DryRun.record``) and answered as GitHub would have
  answered it, so the job goes on. A new comment, check run or issue gets an id of the
  dry run's own (``SYNTHETIC_BASE`` and up) and is remembered, the last
  ``MAX_REMEMBERED``, so that a later edit or read of it finds it. An edit of an object
  that exists on GitHub reads it first (a GET), and answers it as edited, or as GitHub
  answered the read (404 for one that is gone).
* Whether a dry run or not, a request naming an id a dry run made up never reaches
  GitHub: it is answered 404 here (a dry run answers the ones it remembers).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any, Final

import orjson
from multidict import CIMultiDict, CIMultiDictProxy

from perfbot.github.dryrun import DryRun, is_write, names_synthetic
from perfbot.github.wire import Answer, Call, Wire

MAX_REMEMBERED: Final = 256
_NOT_FOUND: Final = {
    "message": "Not Found",
    "documentation_url": "https://docs.github.com/rest",
    "status": "404",
}
_STRIP_FOR_READ: Final = frozenset({"content-length", "content-type", "transfer-encoding"})
_JSON: Final = CIMultiDictProxy(CIMultiDict({"Content-Type": "application/json"}))


class WriteGate:
    def __init__(self, inner: Wire, dry_run: DryRun | None) -> None:
        self._inner = inner
        self._dry_run = dry_run
        # Canonical API path of an object a dry run created -> the object as GitHub shows it.
        self._objects: OrderedDict[str, dict[str, Any]] = OrderedDict()

    async def send(self, call: Call, limit: int | None = None) -> Answer:
        method, path = call.method, call.path
        dry_run = self._dry_run
        if dry_run is None:
            if names_synthetic(path):
                return _answer(404, _NOT_FOUND)
            return await self._inner.send(call, limit)
        recorded = dry_run.total
        if names_synthetic(path):
            response = self._synthetic(dry_run, call)
        elif is_write(method, path):
            response = await self._held(dry_run, call)
        else:
            response = await self._inner.send(call, limit)
        record = dry_run.last if dry_run.total != recorded else None
        dry_run.observe(method, path, response.status_code, record)
        return response

    async def close(self) -> None:
        await self._inner.close()

    def _synthetic(self, dry_run: DryRun, call: Call) -> Answer:
        """A request about something this dry run created (or a previous one did)."""
        method, path = call.method, call.path
        if method == "POST" and path.endswith("/reactions"):
            if path.removesuffix("/reactions") not in self._objects:
                return _answer(404, _NOT_FOUND)
            payload = _payload(call)
            dry_run.record(method, path, payload)
            return _answer(201, _reaction(dry_run.new_id(), payload))
        known = self._objects.get(path)
        if known is None:
            return _answer(404, _NOT_FOUND)
        if method == "PATCH":
            payload = _payload(call)
            dry_run.record(method, path, payload)
            _merge(known, payload)
        return _answer(200, known)

    async def _held(self, dry_run: DryRun, call: Call) -> Answer:
        method, path = call.method, call.path
        payload = _payload(call)
        if method == "PATCH":
            # What GitHub holds now, as the edit would leave it; or GitHub's own refusal.
            current = await self._read(call)
            if not isinstance(current, dict):
                return current
            dry_run.record(method, path, payload)
            _merge(current, payload)
            return _answer(200, current)
        entry = dry_run.record(method, path, payload)
        url = call.url
        if entry.kind == "comment":
            new_id = dry_run.new_id()
            key = path.rsplit("/issues/", 1)[0] + f"/issues/comments/{new_id}"
            return self._created(key, _comment(new_id, url, payload))
        if entry.kind == "check_run":
            new_id = dry_run.new_id()
            return self._created(f"{path}/{new_id}", _check_run(new_id, url, payload))
        if entry.kind == "issue":
            new_id = dry_run.new_id()
            return self._created(f"{path}/{new_id}", _issue(new_id, url, payload))
        if entry.kind == "reaction":
            return _answer(201, _reaction(dry_run.new_id(), payload))
        if entry.kind == "rerun":
            return _answer(201, {})
        return _answer(202, {})

    def _created(self, key: str, obj: dict[str, Any]) -> Answer:
        self._objects[key] = obj
        while len(self._objects) > MAX_REMEMBERED:
            self._objects.popitem(last=False)
        return _answer(201, obj)

    async def _read(self, call: Call) -> dict[str, Any] | Answer:
        """The object ``call`` would edit, read from GitHub; else GitHub's answer."""
        headers = CIMultiDict(
            (k, v) for k, v in call.headers.items() if k.lower() not in _STRIP_FOR_READ
        )
        response = await self._inner.send(Call("GET", call.url, call.path, headers))
        if response.status_code == 200:
            try:
                found: object = json.loads(response.content)
            except ValueError:
                found = None
            if isinstance(found, dict):
                return found
        return response


def _payload(call: Call) -> dict[str, Any]:
    raw = call.body
    try:
        payload: object = json.loads(raw) if raw else {}
    except ValueError:
        payload = {}
    return payload if isinstance(payload, dict) else {}


def _answer(status: int, body: object) -> Answer:
    return Answer(status, _JSON, orjson.dumps(body))


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _merge(obj: dict[str, Any], payload: dict[str, Any]) -> None:
    """``obj`` as GitHub shows it after a PATCH of ``payload`` (the fields perfbot sends)."""
    for key in ("body", "title", "state", "state_reason", "status", "conclusion", "name"):
        if key in payload:
            obj[key] = payload[key]
    if "labels" in payload and isinstance(payload["labels"], list):
        obj["labels"] = [str(name) for name in payload["labels"]]
    output = payload.get("output")
    if isinstance(output, dict):
        before = obj.get("output")
        obj["output"] = {**_output({}), **(before if isinstance(before, dict) else {}), **output}
    if payload.get("state") == "closed":
        obj["closed_at"] = _now()
    obj["updated_at"] = _now()


def _comment(new_id: int, url: str, payload: dict[str, Any]) -> dict[str, Any]:
    now = _now()
    return {
        "id": new_id,
        "node_id": f"DRYRUN_IC_{new_id}",
        "url": url.rsplit("/issues/", 1)[0] + f"/issues/comments/{new_id}",
        "html_url": "",
        "issue_url": url.removesuffix("/comments"),
        "body": payload.get("body") if isinstance(payload.get("body"), str) else "",
        "user": None,
        "created_at": now,
        "updated_at": now,
        "performed_via_github_app": None,
    }


def _output(payload: dict[str, Any]) -> dict[str, Any]:
    output = payload.get("output")
    given = output if isinstance(output, dict) else {}
    return {
        "title": given.get("title"),
        "summary": given.get("summary"),
        "text": given.get("text"),
        "annotations_count": 0,
        "annotations_url": "",
    }


def _check_run(new_id: int, url: str, payload: dict[str, Any]) -> dict[str, Any]:
    now = _now()
    return {
        "id": new_id,
        "node_id": f"DRYRUN_CR_{new_id}",
        "head_sha": str(payload.get("head_sha", "")),
        "external_id": None,
        "url": f"{url}/{new_id}",
        "html_url": None,
        "details_url": None,
        "status": payload.get("status", "completed"),
        "conclusion": payload.get("conclusion"),
        "started_at": now,
        "completed_at": now,
        "output": _output(payload),
        "name": str(payload.get("name", "")),
        "check_suite": None,
        "app": None,
        "pull_requests": [],
    }


def _issue(number: int, url: str, payload: dict[str, Any]) -> dict[str, Any]:
    now = _now()
    labels = payload.get("labels")
    return {
        "id": number,
        "node_id": f"DRYRUN_I_{number}",
        "number": number,
        "url": f"{url}/{number}",
        "repository_url": url.removesuffix("/issues"),
        "labels_url": "",
        "comments_url": "",
        "events_url": "",
        "html_url": "",
        "state": "open",
        "state_reason": None,
        "title": str(payload.get("title", "")),
        "body": payload.get("body") if isinstance(payload.get("body"), str) else None,
        "user": None,
        "labels": [str(name) for name in labels] if isinstance(labels, list) else [],
        "milestone": None,
        "locked": False,
        "comments": 0,
        "closed_at": None,
        "created_at": now,
        "updated_at": now,
        "performed_via_github_app": None,
    }


def _reaction(new_id: int, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": new_id,
        "node_id": f"DRYRUN_R_{new_id}",
        "user": None,
        "content": str(payload.get("content", "")),
        "created_at": _now(),
    }
