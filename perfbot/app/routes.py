"""The route table: which deliveries become jobs, of which kind, run one after another by
which key, and handled by which handler. Ingest asks it what to queue (``job_for``), the
worker what a queued job is (``decode``) and who runs it (``handler_of``).

One row per (event, actions, kind of run). A handler is named by its module path and
function (``module:function``), imported when a job first needs it: the table stays free
of I/O, so triage and ingest can read it without loading the GitHub client.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Final

from perfbot.app import job_payloads
from perfbot.app.job_payloads import encode
from perfbot.app.jobs import (
    WORKFLOW_RUN_ACTIONS,
    AnyJob,
    BadPayload,
    InstallationJob,
    IssueCommandJob,
    IssueCommentJob,
    PullRunCompleted,
    PullRunStarted,
    PushRunCompleted,
    RerequestJob,
    Run,
    RunJob,
    WatchJob,
    is_int,
    operator_refusal,
    person_command,
    read_installation,
    read_rerequest,
    shown,
)
from perfbot.app.jsonobject import JSONObject, is_object
from perfbot.store.base import NewJob

if TYPE_CHECKING:  # the handlers' own imports load the GitHub client: named, not imported
    from perfbot.app.context import JobContext
    from perfbot.app.triage import Delivery

Handler = Callable[["JobContext", Any], Awaitable[str]]
SerialKey = Callable[["Delivery", Any], str]


@dataclass(frozen=True, slots=True)
class Route:
    """Deliveries of ``event`` with one of ``actions`` about ``subject`` (of a
    ``workflow_run``, its run's event; of an ``issue_comment``, a pull request or an issue)
    become jobs of ``job``, serialised by ``serial_key`` and run by ``handler``.
    ``while_suspended``: run even while the installation is suspended (the events that
    change the installation itself)."""

    event: str
    actions: frozenset[str]
    subject: str | None
    job: type[AnyJob]
    serial_key: SerialKey
    handler: str  # "perfbot.app.handlers.<module>:<function>"
    while_suspended: bool = False


def _pull_run_key(delivery: Delivery, job: RunJob) -> str:
    # One pull request is one head branch of one head repository: jobs of its runs are
    # serialised by that pair (the PR number is only proven inside the job).
    run = _object(delivery.payload, "workflow_run")
    head_repo = _object(run, "head_repository")
    return f"{job.run.repo_id}:{_scalar(head_repo.get('id'))}:{_scalar(run.get('head_branch'))}"


def _push_key(_delivery: Delivery, job: RunJob) -> str:
    return f"{job.run.repo_id}:push:{job.run.head_branch}"


def _command_key(_delivery: Delivery, job: IssueCommentJob) -> str:
    # The same key as the PR's other commands: two quick reruns run one after the other.
    return f"{job.repo.id}:pr:{job.number}"


def _rerequest_key(delivery: Delivery, job: RerequestJob) -> str:
    subject = _object(delivery.payload, delivery.event)
    pulls = [p.get("number") for p in subject.get("pull_requests") or [] if is_object(p)]
    numbers = [n for n in pulls if isinstance(n, int)]
    if len(numbers) == 1:
        return f"{job.repo.id}:pr:{numbers[0]}"
    return f"{job.repo.id}:sha:{job.head_sha}"


def _installation_key(delivery: Delivery, _job: InstallationJob) -> str:
    return f"installation:{delivery.installation_id}"


def _issue_command_key(_delivery: Delivery, job: IssueCommandJob) -> str:
    return f"{job.repo.id}:issue:{job.number}"


def watch_key(job: WatchJob) -> str:
    """The serial key of a branch's watch: one at a time per branch, across replicas."""
    return f"{job.repo.id}:watch:{job.branch}"


_HANDLERS: Final = "perfbot.app.handlers"
# The event of the jobs perfbot queues itself (no GitHub delivery is ever of it).
INTERNAL_WATCH: Final = "perfbot_watch"
ROUTES: Final = (
    Route(
        "workflow_run",
        frozenset({"completed"}),
        "pull_request",
        PullRunCompleted,
        _pull_run_key,
        f"{_HANDLERS}.workflow_run:on_pull_run_completed",
    ),
    Route(
        "workflow_run",
        frozenset({"requested", "in_progress"}),
        "pull_request",
        PullRunStarted,
        _pull_run_key,
        f"{_HANDLERS}.run_started:on_pull_run_started",
    ),
    # Recorded once finished (no comment to mark stale before): a job per completed push
    # run, which says why when it is not the default branch's measurement.
    Route(
        "workflow_run",
        frozenset({"completed"}),
        "push",
        PushRunCompleted,
        _push_key,
        f"{_HANDLERS}.push:on_push_run_completed",
    ),
    Route(
        "issue_comment",
        frozenset({"created"}),
        "pull_request",
        IssueCommentJob,
        _command_key,
        f"{_HANDLERS}.commands:on_issue_comment",
    ),
    # `/perfbot accept` on a watch issue (any other issue's command ends "ignored").
    Route(
        "issue_comment",
        frozenset({"created"}),
        "issue",
        IssueCommandJob,
        _issue_command_key,
        f"{_HANDLERS}.issue_commands:on_issue_command",
    ),
    # perfbot's own: queued when a push run of the default branch is recorded.
    Route(
        INTERNAL_WATCH,
        frozenset({"recorded"}),
        None,
        WatchJob,
        lambda _delivery, job: watch_key(job),
        f"{_HANDLERS}.watcher:on_watch",
    ),
    *(
        Route(
            event,
            frozenset({"rerequested"}),
            None,
            RerequestJob,
            _rerequest_key,
            f"{_HANDLERS}.commands:on_check_rerequested",
        )
        for event in ("check_run", "check_suite")
    ),
    # Uninstalling perfbot, or removing repositories from it, drops their stored state; a
    # suspended installation gets no GitHub call from perfbot until it is unsuspended.
    Route(
        "installation",
        frozenset({"deleted", "suspend", "unsuspend"}),
        None,
        InstallationJob,
        _installation_key,
        f"{_HANDLERS}.installation:on_installation",
        while_suspended=True,
    ),
    Route(
        "installation_repositories",
        frozenset({"removed"}),
        None,
        InstallationJob,
        _installation_key,
        f"{_HANDLERS}.installation:on_installation",
        while_suspended=True,
    ),
)
# The events an App receives without subscribing: its own installation's.
APP_EVENTS: Final = frozenset({"installation", "installation_repositories"})
# What perfbot's App subscribes to (its manifest's default events).
SUBSCRIBED_EVENTS: Final = frozenset(r.event for r in ROUTES) - APP_EVENTS - {INTERNAL_WATCH}


def route_for(event: str, action: str | None, subject: str | None = None) -> Route | None:
    """The route of a delivery of ``event`` and ``action`` about ``subject``."""
    for route in ROUTES:
        if route.event == event and action in route.actions and route.subject == subject:
            return route
    return None


def job_class(kind: str, action: str | None, subject: str | None) -> type[AnyJob] | None:
    """The class of a queued job of ``kind``, for ``job_payloads.decode``: by its action
    and subject where a kind has several classes, by the kind alone for the others (their
    payloads hold no action)."""
    if action is not None or subject is not None:
        route = route_for(kind, action, subject)
        return route.job if route is not None else None
    return next((route.job for route in ROUTES if route.event == kind), None)


def decode(kind: str, payload: str | bytes) -> AnyJob:
    """The job the queue holds as ``payload`` for ``kind``; raises BadPayload."""
    return job_payloads.decode(kind, payload, job_class)


def route_of(job: AnyJob) -> Route:
    """The route a job came by (every job class has one)."""
    return next(route for route in ROUTES if isinstance(job, route.job))


def handler_of(job: AnyJob) -> Handler:
    """The handler of ``job``'s route, imported on first use."""
    return _handler(route_of(job).handler)


@cache
def _handler(reference: str) -> Handler:
    module, _, function = reference.partition(":")
    handler: Handler = getattr(importlib.import_module(module), function)
    return handler


def job_for(
    delivery: Delivery, repo_disabled: Callable[[str], bool] = lambda _name: False
) -> NewJob | None:
    """The job a delivery asks for, or None when perfbot has nothing to do with it.

    ``repo_disabled`` is the operator's deny list: a denied repository gets no job at all.
    A delivery lacking a field GitHub always sets is no job either (nothing could run it).
    """
    job = triage(delivery, repo_disabled)
    return None if isinstance(job, str) else job


def triage(delivery: Delivery, repo_disabled: Callable[[str], bool]) -> NewJob | str:
    """``job_for``'s answer, or why there is no job, in one line (``perfbot replay``)."""
    refused = operator_refusal(repo_disabled, delivery.repository)
    if refused is not None:
        return f"{refused} (PERFBOT_DISABLED_REPOS): no job"
    subject = _subject(delivery)
    route = route_for(delivery.event, delivery.action, subject)
    if route is None:
        about = f" about a {subject.replace('_', ' ')}" if subject else ""
        return (
            f"perfbot does not act on {delivery.event} deliveries with the action "
            f"{delivery.action!r}{about}: no job"
        )
    try:
        job = _read(route, delivery)
    except BadPayload as exc:
        return f"the delivery is unusable ({exc}): no job"
    if job is None:
        return (
            "nothing for perfbot in it (not a person's /perfbot command, or a field GitHub "
            "always sends is missing): no job"
        )
    return NewJob(
        event=delivery.event,
        payload=encode(job),
        serial_key=route.serial_key(delivery, job),
        installation_id=delivery.installation_id,
    )


def _subject(delivery: Delivery) -> str | None:
    """What a delivery is about, where a kind has several routes (see ``Route``)."""
    if delivery.event == "workflow_run":
        run = delivery.payload.get("workflow_run")
        return _scalar_text(run.get("event")) if is_object(run) else None
    if delivery.event == "issue_comment":
        issue = delivery.payload.get("issue")
        return "pull_request" if is_object(issue) and issue.get("pull_request") else "issue"
    return None


def _read(route: Route, delivery: Delivery) -> AnyJob | None:
    """The job of a delivery on ``route``; raises BadPayload when a field is unusable."""
    payload = delivery.payload
    if route.event == "workflow_run":
        run, repo = payload.get("workflow_run"), payload.get("repository")
        if not is_object(run) or not is_object(repo):
            return None
        return _run_of(delivery, run, repo, _run_job(route.job))
    if route.event == "issue_comment":
        # A person's new comment holding a command (edited comments are ignored).
        return person_command(payload)
    if route.job is RerequestJob:
        # The "Re-run" button of a check run or check suite (its app is checked in the job).
        subject, repo = payload.get(delivery.event), payload.get("repository")
        if not is_object(subject) or not is_object(repo):
            return None
        return read_rerequest(delivery.event, payload)
    return read_installation(delivery.event, payload)


def _run_job(cls: type[AnyJob]) -> type[RunJob]:
    if cls is PullRunCompleted or cls is PullRunStarted or cls is PushRunCompleted:
        return cls
    raise AssertionError(f"{cls.__name__} is no workflow_run job")


def _run_of(delivery: Delivery, run: JSONObject, repo: JSONObject, cls: type[RunJob]) -> RunJob:
    """The job of a ``workflow_run`` delivery, read straight from the parsed body.

    Each field is taken as a JSON scalar (a container where GitHub sends a scalar counts
    as null, which the job refuses as it would any unusable field) and converted as
    ``read_workflow_run`` converts it: the same job it reads from the same fields. No
    copy of the fields in between: that copy and the second read of it were half of
    triage's time (``bench/ingest.py``).
    """
    action = delivery.action
    if action not in WORKFLOW_RUN_ACTIONS:
        raise BadPayload(f"workflow_run delivery with the action {shown(action)}")
    get = run.get
    owner = repo.get("owner")
    run_repo = get("repository")
    try:
        repo_id = int(_scalar(repo.get("id")))  # type: ignore[arg-type]
        head_repo_id = _scalar(_object(run, "head_repository").get("id"))
        conclusion = get("conclusion")
        default_branch = repo.get("default_branch")
        return cls(
            action,
            Run(
                id=int(_scalar(get("id"))),  # type: ignore[arg-type]
                attempt=int(_scalar(get("run_attempt")) or 1),
                number=int(_scalar(get("run_number")) or 0),
                event=str(_scalar(get("event"))),
                status=str(_scalar(get("status")) or ""),
                conclusion=conclusion if isinstance(conclusion, str) else None,
                head_sha=str(_scalar(get("head_sha"))),
                head_branch=str(_scalar(get("head_branch")) or ""),
                head_repo_id=head_repo_id if is_int(head_repo_id) else None,
                run_repo_id=int(
                    (_scalar(run_repo.get("id")) if is_object(run_repo) else None) or 0
                ),
                repo_id=repo_id,
                owner=str(_scalar(owner.get("login")) if is_object(owner) else None),
                name=str(_scalar(repo.get("name"))),
                workflow_name=str(_scalar(get("name")) or ""),
                workflow_path=str(_scalar(get("path")) or ""),
                html_url=str(_scalar(get("html_url")) or ""),
                hinted_pulls=_hinted_pulls(get("pull_requests"), repo_id),
                default_branch=default_branch if isinstance(default_branch, str) else None,
            ),
        )
    except (TypeError, ValueError) as exc:
        raise BadPayload(f"workflow_run delivery without a usable {exc}") from None


def _hinted_pulls(pulls: Any, repo_id: int) -> tuple[int, ...]:
    # GitHub lists PRs whose head *or branch* matches; only this repository's count.
    numbers = []
    for pull in pulls or ():
        if is_object(pull) and _base_repo_id(pull) == repo_id:
            number = pull.get("number")
            if is_int(number):
                numbers.append(number)
    return tuple(numbers)


def _object(parent: JSONObject, key: str) -> JSONObject:
    value = parent.get(key)
    return value if is_object(value) else {}


_SCALARS: Final = (str, int, float, bool)


def _scalar(value: Any) -> str | int | float | bool | None:
    return value if isinstance(value, _SCALARS) else None


def _scalar_text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _base_repo_id(pull: JSONObject) -> Any:
    base = pull.get("base")
    repo = base.get("repo") if is_object(base) else None
    return _scalar(repo.get("id")) if is_object(repo) else None
