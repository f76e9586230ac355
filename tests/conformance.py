"""Every API exchange of the fake GitHub, checked against GitHub's own description.

``tests/conftest.py`` watches each test of the suite (``fakegithub.observing``) and fails
it when an exchange broke the description of the API version it was served in:

* every answer of the fake: a success the operation does not list, or a JSON body that does
  not match the schema of its status (``apispec.RestDescription.check_response``);
* every request perfbot made (its User-Agent): the operation exists, its path and query
  parameters and its JSON body match, and it names the API version every other perfbot
  request names (``perfbot.github.transport.API_VERSION``).

Requests the tests make themselves (raw httpx, githubkit) are not checked: some are wrong on
purpose, to see the fake refuse them. Identical exchanges are checked once per session.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

from perfbot.github.transport import API_VERSION, USER_AGENT
from perfbot.sandbox.fakegithub import FakeGitHub, RecordedRequest
from tests import apispec
from tests.apispec import Violation

PERFBOT_AGENT: Final = USER_AGENT.split(" ", 1)[0]  # "perfbot/0.1"


def is_perfbots(record: RecordedRequest) -> bool:
    return record.user_agent.startswith(PERFBOT_AGENT)


def request_violations(record: RecordedRequest, version: str = API_VERSION) -> list[Violation]:
    """How a request perfbot made breaks the description (or the one API version perfbot
    was set to speak, ``version``)."""
    where = f"{record.method} {record.path} request"
    found: list[Violation] = []
    if record.api_version != version:
        sent = record.api_version or "none"
        found.append(
            Violation(where, "X-GitHub-Api-Version", f"{sent}, where perfbot sends {version}")
        )
    if isinstance(record.body, str):
        found.append(Violation(where, "$", "the body is not JSON"))
        return found
    description = apispec.rest(record.served_version)
    return found + description.check_request(record.method, record.path, record.query, record.body)


def response_violations(record: RecordedRequest) -> list[Violation]:
    """How the fake's answer breaks the description of the version it was served in."""
    description = apispec.rest(record.served_version)
    if description.operation(record.method, record.path) is None and record.status >= 400:
        return []  # a test asked for something GitHub does not have, and was refused
    is_json = "json" in record.response_type
    body: Any = None
    if is_json and record.response_body:
        try:
            body = json.loads(record.response_body)
        except ValueError:
            where = f"{record.method} {record.path} → {record.status}"
            return [Violation(where, "$", "the body is not the JSON its media type says")]
    return description.check_response(
        record.method, record.path, record.status, body, is_json=is_json
    )


@dataclass
class Tally:
    """What the session checked (printed at its end by ``tests/conftest.py``)."""

    exchanges: int = 0
    distinct: int = 0
    perfbot_requests: int = 0
    seconds: float = 0.0  # spent checking
    violations: Counter[str] = field(default_factory=Counter)


TALLY: Final = Tally()
# One check per distinct exchange and session: the same answer, sent again, is not checked
# again. Keyed by a digest of what is checked.
_checked: dict[str, tuple[Violation, ...]] = {}
_lock = threading.Lock()


def _key(record: RecordedRequest, perfbots: bool) -> str:
    digest = hashlib.sha1()
    for part in (
        record.served_version,
        record.method,
        record.path,
        json.dumps(record.query, sort_keys=True),
        str(record.status),
        record.response_type,
    ):
        digest.update(part.encode() + b"\0")
    digest.update(record.response_body + b"\0")
    if perfbots:
        digest.update(json.dumps(record.body, sort_keys=True).encode())
        digest.update((record.api_version or "").encode())
    return digest.hexdigest()


class ExchangeLog:
    """The exchanges of one test, checked at its end (not in the fake's serving thread)."""

    def __init__(self, tally: Tally = TALLY, version: str = API_VERSION) -> None:
        self._records: list[RecordedRequest] = []
        self._tally = tally
        self._version = version  # the one API version the test's perfbot speaks

    def add(self, _fake: FakeGitHub, record: RecordedRequest) -> None:
        with _lock:
            self._records.append(record)

    def violations(self) -> list[Violation]:
        with _lock:
            records, self._records = self._records, []
        found: list[Violation] = []
        started = time.perf_counter()
        for record in records:
            perfbots = is_perfbots(record)
            self._tally.exchanges += 1
            self._tally.perfbot_requests += perfbots
            key = _key(record, perfbots) + self._version
            if key not in _checked:
                self._tally.distinct += 1
                checked = response_violations(record)
                if perfbots:
                    checked += request_violations(record, self._version)
                _checked[key] = tuple(checked)
                for violation in checked:
                    self._tally.violations[violation.rule] += 1
            found.extend(_checked[key])
        self._tally.seconds += time.perf_counter() - started
        return list(dict.fromkeys(found))
