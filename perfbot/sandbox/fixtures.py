"""The real GitHub payloads the fake starts every answer from, read in place.

They live in ``../shared/fixtures`` beside the checkout (octokit's webhook examples and
PyGithub's recorded REST responses) and are never copied into the repository;
``PERFBOT_FIXTURES`` names another folder. They are read on first use, so importing the
fake costs nothing and a missing folder is one sentence, not a traceback at import.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from perfbot.errors import PerfbotError

Json = dict[str, Any]
VARIABLE = "PERFBOT_FIXTURES"
# perfbot/sandbox/fixtures.py → the checkout → ../shared/fixtures beside it.
BESIDE_THE_CHECKOUT = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"


class FixturesMissing(PerfbotError):
    """The fake GitHub's payload templates are not where they are looked for."""


def fixtures_dir() -> Path:
    """``$PERFBOT_FIXTURES``, else ``../shared/fixtures`` beside the checkout."""
    configured = os.environ.get(VARIABLE)
    return Path(configured) if configured else BESIDE_THE_CHECKOUT


def fixture(relative: str) -> Path:
    """One file of the fixtures folder, or FixturesMissing saying where it was looked for."""
    folder = fixtures_dir()
    path = folder / relative
    if not path.is_file():
        where = f"${VARIABLE}" if os.environ.get(VARIABLE) else "../shared/fixtures"
        raise FixturesMissing(
            f"the fake GitHub needs GitHub's recorded payloads, and {path} is missing: put "
            f"the shared fixtures at {folder} ({where}) or set {VARIABLE} to their folder"
        )
    return path


def _load(relative: str) -> Json:
    return cast(Json, json.loads(fixture(relative).read_text(encoding="utf-8")))


@dataclass(frozen=True)
class Templates:
    """Real payloads, read once, never written to: every builder deep-copies what it takes."""

    run: Json
    artifact: Json
    workflow_run_event: Json
    pull: Json
    comment_event: Json
    check_run_event: Json
    check_suite_event: Json
    installation_event: Json

    @property
    def repo(self) -> Json:  # octo-org/octo-repo, full form
        return cast(Json, self.workflow_run_event["repository"])

    @property
    def user(self) -> Json:  # Codertocat
        return cast(Json, self.workflow_run_event["sender"])

    @property
    def organization(self) -> Json:  # octo-org
        return cast(Json, self.workflow_run_event["organization"])

    @property
    def issue(self) -> Json:
        return cast(Json, self.comment_event["issue"])

    @property
    def comment(self) -> Json:
        return cast(Json, self.comment_event["comment"])

    @property
    def check_run(self) -> Json:
        return cast(Json, self.check_run_event["check_run"])

    @property
    def check_suite(self) -> Json:  # the full form
        return cast(Json, self.check_suite_event["check_suite"])

    @property
    def installation(self) -> Json:
        return cast(Json, self.installation_event["installation"])

    @property
    def app(self) -> Json:
        return cast(Json, self.check_run["app"])


@functools.cache
def templates() -> Templates:
    hooks = "octokit-webhooks"
    return Templates(
        run=_load("github-rest-pygithub-replay/get_run_3881497935_fork_pull_request.json"),
        artifact=_load("github-rest-pygithub-replay/list_run_artifacts_5138169628.json")[
            "artifacts"
        ][0],
        workflow_run_event=_load(f"{hooks}/workflow_run/completed.with-pull-requests.payload.json"),
        pull=_load(f"{hooks}/pull_request/opened.payload.json")["pull_request"],
        comment_event=_load(f"{hooks}/issue_comment/created.with-installation.payload.json"),
        check_run_event=_load(f"{hooks}/check_run/rerequested.payload.json"),
        check_suite_event=_load(f"{hooks}/check_suite/rerequested.payload.json"),
        installation_event=_load(f"{hooks}/installation/suspend.payload.json"),
    )
