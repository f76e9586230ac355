"""The job contract: what triage puts on the queue, and what a handler receives.

One frozen dataclass per kind of job; which one a delivery or a queued payload is, the
route table says (``perfbot.app.routes``: by the webhook event the queue's ``event``
column holds, and for ``workflow_run`` by the action and the run's event). How a job is
written to the queue and read back is ``perfbot.app.job_payloads``; here are the jobs,
and the readers of the webhook bodies they are made from.

Versions, counted per kind (``version`` on each class):

- 1, the previous release: no ``version`` field. ``workflow_run`` jobs held triage's slim
  copy of the delivery, the others the whole webhook body. ``decode`` still reads both
  (and a full webhook body of any kind), so jobs queued before an upgrade still run.
- 2: ``{"version": 2, ...the dataclass's fields}``, plain JSON.
- 3, ``workflow_run``: its ``run`` carries the repository's ``default_branch`` (push
  runs on it are recorded). A version-2 job reads with None there: triage queued only
  pull_request runs then, which never ask for it.
- 3, ``issue_comment`` on a pull request: its command may be ``accept`` or ``unaccept``,
  with the ``globs`` and the ``reason`` after it. A version-2 job (``rerun`` or ``help``)
  reads with none of either.

A version newer than this code knows is refused with a sentence naming it: a job queued
by a newer perfbot, found after a downgrade, ends FAILED rather than run half-understood.

The filters more than one place applies live here too: the operator's deny list
(``operator_refusal``) and "a person's command on a pull request" (``person_command``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal, TypeGuard

from perfbot.app.commands import Command, IssueCommand, parse_issue_command, parse_pull_command
from perfbot.app.jsonobject import JSONObject, is_array, is_object
from perfbot.app.pullproof import RunIdentity
from perfbot.app.suspension import event_time
from perfbot.errors import PerfbotError

# workflow_run actions perfbot acts on: completed runs are compared; requested and
# in_progress runs mark the shown numbers as belonging to the previous commit.
WORKFLOW_RUN_ACTIONS = frozenset({"completed", "requested", "in_progress"})

LEGACY_VERSION = 1  # a payload without a version field


class BadPayload(PerfbotError, ValueError):
    """A job this perfbot cannot run as queued: it ends FAILED with this sentence."""


class UnknownJob(BadPayload):
    """The queue holds a kind of job no handler takes."""


class JobTooNew(BadPayload):
    """The job was queued by a newer perfbot, in a version of its kind this one lacks."""


# --- the jobs -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Repository:
    """The repository a delivery is about."""

    id: int
    owner: str
    name: str

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass(frozen=True, slots=True)
class Run:
    """The fields of a workflow run perfbot relies on (all set by GitHub)."""

    id: int
    attempt: int
    number: int
    event: str
    status: str
    conclusion: str | None
    head_sha: str
    head_branch: str
    head_repo_id: int | None
    run_repo_id: int
    repo_id: int
    owner: str
    name: str
    workflow_name: str
    workflow_path: str
    html_url: str
    hinted_pulls: tuple[int, ...]  # PRs of this repository GitHub lists for the run
    # The repository's default branch as the delivery said (None: a job queued before
    # version 3 of workflow_run jobs, or a delivery without it).
    default_branch: str | None = None

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def identity(self) -> RunIdentity:
        return RunIdentity(self.repo_id, self.head_sha, self.head_repo_id)


@dataclass(frozen=True, slots=True)
class PullRunCompleted:
    """A pull request's measurement run completed: compare it, and post the comment."""

    version: ClassVar[int] = 3
    action: str  # "completed"
    run: Run

    @property
    def completed(self) -> bool:
        return self.action == "completed"


@dataclass(frozen=True, slots=True)
class PullRunStarted:
    """A pull request's measurement run was requested or started: the comment's numbers
    are for the previous commit until it completes."""

    version: ClassVar[int] = 3
    action: str  # "requested" or "in_progress"
    run: Run

    @property
    def completed(self) -> bool:
        return self.action == "completed"


@dataclass(frozen=True, slots=True)
class PushRunCompleted:
    """A push run on the default branch completed: record it (the branch's trend)."""

    version: ClassVar[int] = 3
    action: str  # "completed"
    run: Run

    @property
    def completed(self) -> bool:
        return self.action == "completed"


# The three kinds of workflow_run job share their payload: the route table
# (``perfbot.app.routes``) tells them apart by the action and the run's event.
RunJob = PullRunCompleted | PullRunStarted | PushRunCompleted


@dataclass(frozen=True, slots=True)
class IssueCommentJob:
    """A person's new comment on a pull request holding a ``/perfbot`` command; an
    ``accept`` or ``unaccept`` names its metrics by ``globs`` (none: every one), an
    ``accept`` its ``reason``."""

    version: ClassVar[int] = 3
    subject: ClassVar[str] = "pull_request"
    repo: Repository
    number: int  # the pull request's
    comment_id: int
    login: str
    command: Command
    globs: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True, slots=True)
class IssueCommandJob:
    """A person's new comment on an issue (not a pull request) holding a ``/perfbot``
    command: the watch's issues take ``/perfbot accept``. Written as its fields from the
    start (version 2 of ``issue_comment`` jobs), told apart by its ``subject``."""

    version: ClassVar[int] = 2
    subject: ClassVar[str] = "issue"
    repo: Repository
    number: int  # the issue's
    comment_id: int
    login: str
    command: IssueCommand
    reason: str


@dataclass(frozen=True, slots=True)
class WatchJob:
    """A push run of the default branch was recorded: look for changes of level on the
    branch. Queued by perfbot itself (no delivery), as its fields from the start."""

    version: ClassVar[int] = 2
    repo: Repository
    branch: str
    head_sha: str
    run_id: int
    run_attempt: int


@dataclass(frozen=True, slots=True)
class RerequestJob:
    """Someone pressed "Re-run" on a check run (``check_run``) or a whole suite."""

    version: ClassVar[int] = 2
    event: Literal["check_run", "check_suite"]
    repo: Repository
    app_id: int | None  # the app whose check it is: perfbot acts only on its own
    head_sha: str
    login: str
    by_bot: bool


@dataclass(frozen=True, slots=True)
class InstallationJob:
    """``installation`` suspend / unsuspend / deleted, ``installation_repositories`` removed."""

    version: ClassVar[int] = 2
    event: Literal["installation", "installation_repositories"]
    action: str
    installation_id: int | None
    event_time: float | None  # GitHub's time of the change (see perfbot.app.suspension)
    forget_repository_ids: tuple[int, ...]  # of deleted / removed: their PRs are forgotten


AnyJob = RunJob | IssueCommentJob | IssueCommandJob | WatchJob | RerequestJob | InstallationJob


# --- the filters ----------------------------------------------------------------------------


def operator_refusal(repo_disabled: Callable[[str], bool], full_name: str | None) -> str | None:
    """Why the operator's deny list (``PERFBOT_DISABLED_REPOS``) keeps perfbot off
    ``full_name``, or None. Asked at ingest (no job at all) and before every write."""
    if full_name is not None and repo_disabled(full_name):
        return f"the operator disabled {full_name}"
    return None


def person_command(payload: JSONObject) -> IssueCommentJob | IssueCommandJob | None:
    """The job of an ``issue_comment`` delivery when it is a person's new comment holding a
    command: on a pull request (``rerun``, ``help``) or on an issue (``accept``); None for
    anything else (an edit, a bot, no command, or a field GitHub always sets missing)."""
    issue = payload.get("issue")
    comment = payload.get("comment")
    if payload.get("action") != "created" or not is_object(issue) or not is_object(comment):
        return None
    number, comment_id = issue.get("number"), comment.get("id")
    if not is_int(number) or not is_int(comment_id):
        return None
    user = comment.get("user")
    if not is_object(user) or user.get("type") == "Bot" or not isinstance(user.get("login"), str):
        return None
    body = comment.get("body")
    if not isinstance(body, str):
        return None
    try:
        repo = _repository(payload)
    except BadPayload:
        return None
    login = user["login"]
    if issue.get("pull_request"):
        asked = parse_pull_command(body)
        if asked is None:
            return None
        return IssueCommentJob(
            repo, number, comment_id, login, asked.command, asked.globs, asked.reason
        )
    said = parse_issue_command(body)
    if said is None:
        return None
    return IssueCommandJob(repo, number, comment_id, login, said[0], said[1])


def shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:39] + "…"


# --- webhook bodies (and version 1 of the jobs: the previous release's payloads) ------------


def read_workflow_run(payload: JSONObject, cls: type[RunJob]) -> RunJob:
    """A ``workflow_run`` delivery (or triage's slim copy of one) as its job of ``cls``
    (the route table's choice: a PR run completed or started, or a push run)."""
    action = payload.get("action")
    if action not in WORKFLOW_RUN_ACTIONS:
        raise BadPayload(f"workflow_run delivery with the action {shown(action)}")
    try:
        run, repo = payload["workflow_run"], payload["repository"]
        head_repo = run.get("head_repository") or {}
        repo_id = int(repo["id"])
        conclusion = run.get("conclusion")
        head_repo_id = head_repo.get("id")
        default_branch = repo.get("default_branch")
        return cls(
            action,
            Run(
                id=int(run["id"]),
                attempt=int(run.get("run_attempt") or 1),
                number=int(run.get("run_number") or 0),
                event=str(run["event"]),
                status=str(run.get("status") or ""),
                conclusion=conclusion if isinstance(conclusion, str) else None,
                head_sha=str(run["head_sha"]),
                head_branch=str(run.get("head_branch") or ""),
                # Anything but a number matches no PR's head repository, as None does.
                head_repo_id=head_repo_id if is_int(head_repo_id) else None,
                run_repo_id=int((run.get("repository") or {}).get("id") or 0),
                repo_id=repo_id,
                owner=str(repo["owner"]["login"]),
                name=str(repo["name"]),
                workflow_name=str(run.get("name") or ""),
                workflow_path=str(run.get("path") or ""),
                html_url=str(run.get("html_url") or ""),
                hinted_pulls=_same_repo_pulls(run, repo_id),
                default_branch=default_branch if isinstance(default_branch, str) else None,
            ),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadPayload(f"workflow_run delivery without a usable {exc}") from None


def _same_repo_pulls(run: JSONObject, repo_id: int) -> tuple[int, ...]:
    # GitHub lists PRs whose head *or branch* matches; only this repository's count.
    numbers = []
    for pull in run.get("pull_requests") or []:
        base = ((pull or {}).get("base") or {}).get("repo") or {}
        if base.get("id") == repo_id and is_int(pull.get("number")):
            numbers.append(pull["number"])
    return tuple(numbers)


def read_rerequest(kind: str, payload: JSONObject) -> RerequestJob:
    """A ``check_run`` / ``check_suite`` ``rerequested`` delivery as its job."""
    if kind not in ("check_run", "check_suite"):
        raise UnknownJob(f"no handler for event {kind!r}")
    event: Literal["check_run", "check_suite"] = (
        "check_run" if kind == "check_run" else "check_suite"
    )
    repo = _repository(payload)
    if payload.get("action") != "rerequested":
        raise BadPayload(f"{kind} delivery with the action {shown(payload.get('action'))}")
    try:
        subject = payload[kind]
        app_id = (subject.get("app") or {}).get("id")
        head_sha = str(subject["head_sha"])
        sender = payload["sender"]
        login, sender_type = str(sender["login"]), sender.get("type")
    except (KeyError, TypeError, AttributeError) as exc:
        raise BadPayload(f"{kind} delivery without a usable {exc}") from None
    return RerequestJob(
        event,
        repo,
        app_id if is_int(app_id) else None,
        head_sha,
        login,
        by_bot=sender_type == "Bot",
    )


def read_installation(kind: str, payload: JSONObject) -> InstallationJob:
    """An ``installation`` or ``installation_repositories`` delivery as its job."""
    if kind not in ("installation", "installation_repositories"):
        raise UnknownJob(f"no handler for event {kind!r}")
    event: Literal["installation", "installation_repositories"] = (
        "installation" if kind == "installation" else "installation_repositories"
    )
    action = payload.get("action")
    if not isinstance(action, str):
        raise BadPayload(f"{kind} delivery with the action {shown(action)}")
    installation = payload.get("installation")
    installation_id = installation.get("id") if is_object(installation) else None
    if "repositories_removed" in payload:
        repositories = payload.get("repositories_removed")
    else:
        repositories = payload.get("repositories")
    ids = (
        tuple(repo["id"] for repo in repositories if is_object(repo) and is_int(repo.get("id")))
        if is_array(repositories) and action in ("deleted", "removed")
        else ()
    )
    return InstallationJob(
        event,
        action,
        installation_id if is_int(installation_id) else None,
        event_time(installation),
        ids,
    )


def _repository(payload: JSONObject) -> Repository:
    try:
        repo = payload["repository"]
        return Repository(int(repo["id"]), str(repo["owner"]["login"]), str(repo["name"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise BadPayload(f"delivery without a usable repository ({exc})") from None


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
