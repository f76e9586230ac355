"""Job payloads: the JSON text the queue stores for a job, and the job read back from it.

``encode(job)`` is what triage queues (``NewJob.payload``); ``decode(kind, text,
class_of)`` gives the dataclass back, in every version of its kind this perfbot knows,
or raises ``BadPayload`` saying why it cannot (the worker then ends the job FAILED with
that sentence, at once: no retry helps). ``class_of`` is the route table's answer to
which class a job is (``perfbot.app.routes.job_class``). The versions are listed in
``perfbot.app.jobs``.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any, Final, Literal, Union, cast, get_args, get_origin, get_type_hints

import orjson

from perfbot.app.jobs import (
    LEGACY_VERSION,
    AnyJob,
    BadPayload,
    InstallationJob,
    JobTooNew,
    PullRunCompleted,
    RerequestJob,
    RunJob,
    UnknownJob,
    is_int,
    person_command,
    read_installation,
    read_rerequest,
    read_workflow_run,
    shown,
)
from perfbot.app.jsonobject import JSONObject


def encode(job: AnyJob) -> str:
    """The JSON text the queue stores for ``job``: its version, its fields, and its subject
    where a kind of job has several classes (a comment on a PR or on an issue).

    orjson writes the dataclass itself (nested ones as objects, tuples as arrays), the
    version spliced in front: a fifth of the time of building the dict first, on the
    path of every delivery that becomes a job (``bench/ingest.py``).
    """
    subject = getattr(type(job), "subject", None)
    try:
        fields_text = orjson.dumps(job)[1:-1]
    except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits
        document = {
            "version": job.version,
            **_plain(job),
            **({"subject": subject} if subject else {}),
        }
        return json.dumps(document)
    parts = [b'{"version":', str(job.version).encode()]
    if fields_text:
        parts += [b",", fields_text]
    if subject:
        parts += [b',"subject":', orjson.dumps(subject)]
    parts.append(b"}")
    return b"".join(parts).decode()


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


# The route table's answer (``perfbot.app.routes.job_class``): the class of a job by its
# webhook event, and for a workflow_run by its action and its run's event too.
ClassOf = Callable[[str, str | None, str | None], type[AnyJob] | None]


def decode(kind: str, payload: str | bytes, class_of: ClassOf) -> AnyJob:
    """The job the queue holds as ``payload`` for a job of ``kind``; raises BadPayload."""
    try:
        document = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise BadPayload(f"the {kind} job's payload is not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise BadPayload(f"the {kind} job's payload is not a JSON object")
    version = document.get("version", LEGACY_VERSION)
    if not is_int(version) or version < LEGACY_VERSION:
        raise BadPayload(f"the {kind} job's payload has no usable version ({shown(version)})")
    action, subject = _kind_of(kind, document, version)
    cls = class_of(kind, action, subject)
    if cls is None:
        if kind == "workflow_run" and version <= PullRunCompleted.version:
            # A malformed workflow_run job says what is wrong with it, as any other does.
            _read_run(document, version)
        what = f"event {kind!r}" if action is None else f"{kind} {action} of a {subject} run"
        raise UnknownJob(f"no handler for {what}")
    if version > cls.version:
        raise JobTooNew(
            f"job payload version {version} is newer than this perfbot (knows "
            f"{LEGACY_VERSION}–{cls.version} of {kind}): upgrade, or it is dropped"
        )
    if version == LEGACY_VERSION:
        return _read_legacy(kind, document, cls)
    fields_only = {k: value for k, value in document.items() if k not in ("version", "subject")}
    # An upgrade is of the kind's older versions: a class of the kind still at this version
    # (a watch issue's command, at 2) reads its fields as they are.
    upgrade = _UPGRADES.get((kind, version)) if version < cls.version else None
    if upgrade is not None:
        fields_only = upgrade(fields_only)
    job: AnyJob = _build(cls, fields_only, f"the {kind} job")
    if isinstance(job, RerequestJob | InstallationJob) and job.event != kind:
        raise BadPayload(f"the {kind} job's payload is a {job.event} job")
    return job


def _read_run(document: dict[str, Any], version: int) -> None:
    """Read a workflow_run job whose kind no route knows, for what is wrong with it."""
    if version == LEGACY_VERSION:
        read_workflow_run(document, PullRunCompleted)
    else:
        fields_only = {key: value for key, value in document.items() if key != "version"}
        upgrade = _UPGRADES.get(("workflow_run", version))
        _build(PullRunCompleted, upgrade(fields_only) if upgrade else fields_only, "the job")


def _kind_of(kind: str, document: dict[str, Any], version: int) -> tuple[str | None, str | None]:
    """What tells a kind's classes apart: a workflow_run job's action and its run's event,
    an issue_comment job's subject (a pull request's, or an issue's); (None, None) for the
    other kinds, which have one class each."""
    if kind == "issue_comment":
        if version == LEGACY_VERSION:
            issue = document.get("issue")
            on_pull = isinstance(issue, dict) and bool(issue.get("pull_request"))
            return "created", "pull_request" if on_pull else "issue"
        subject = document.get("subject", "pull_request")  # version 2 knew PRs only
        return "created", subject if isinstance(subject, str) else "?"
    if kind != "workflow_run":
        return None, None
    run = document.get("workflow_run" if version == LEGACY_VERSION else "run")
    action = document.get("action")
    event = run.get("event") if isinstance(run, dict) else None
    return (
        action if isinstance(action, str) else "?",
        event if isinstance(event, str) else "?",
    )


def _workflow_run_v2(document: dict[str, Any]) -> dict[str, Any]:
    """A version-2 workflow_run job as version 3: its run's default branch unknown."""
    run = document.get("run")
    if isinstance(run, dict) and "default_branch" not in run:
        return {**document, "run": {**run, "default_branch": None}}
    return document


def _pull_command_v2(document: dict[str, Any]) -> dict[str, Any]:
    """A version-2 job of a PR's command (``rerun`` or ``help``) as version 3: no globs,
    no reason."""
    return {"globs": [], "reason": "", **document}


# (kind, older version) → the document in the kind's current version's fields.
_UPGRADES: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {
    ("workflow_run", 2): _workflow_run_v2,
    ("issue_comment", 2): _pull_command_v2,
}


# --- version 1: the previous release's payloads, or a webhook body ----------------------------


def _read_legacy(kind: str, payload: JSONObject, cls: type[AnyJob]) -> AnyJob:
    if kind == "workflow_run":
        return read_workflow_run(payload, cast(type[RunJob], cls))
    if kind == "issue_comment":
        job = person_command(payload)
        if job is None:
            raise BadPayload("the issue_comment job is no person's new command on a pull request")
        return job
    if kind in ("check_run", "check_suite"):
        return read_rerequest(kind, payload)
    return read_installation(kind, payload)


# --- version 2: the dataclass's own fields, checked against their types ----------------------


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _build(cls: type[Any], document: object, where: str) -> Any:
    if not isinstance(document, dict):
        raise BadPayload(f"{where} is not a JSON object")
    names = [f.name for f in fields(cls)]
    missing = [name for name in names if name not in document]
    unknown = sorted(set(document) - set(names))
    if missing or unknown:
        problems = [f"lacks {', '.join(missing)}"] if missing else []
        problems += [f"has unknown {', '.join(unknown)}"] if unknown else []
        raise BadPayload(f"{where}'s payload {' and '.join(problems)}")
    hints = _hints(cls)
    return cls(**{name: _value(hints[name], document[name], f"{where}'s {name}") for name in names})


def _value(hint: Any, value: object, where: str) -> Any:
    if type(value) is hint and hint in _EXACT:
        return value  # most fields: what the last lines below say, without the lookups
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        for option in get_args(hint):
            if option in _EXACT:
                # What ``_value`` says of a plain option, without raising: the value as
                # it is when it is of that exact type (None for NoneType), else the next.
                if type(value) is option:
                    return value
                continue
            try:
                return _value(option, value, where)
            except BadPayload:
                continue
        raise BadPayload(f"{where} is {shown(value)}, not a {_named(hint)}")
    if origin is Literal:
        if value in get_args(hint) and isinstance(value, str):
            return value
        raise BadPayload(f"{where} is {shown(value)}, not one of {list(get_args(hint))}")
    if origin is tuple:
        if not isinstance(value, list):
            raise BadPayload(f"{where} is {shown(value)}, not a list")
        (item,) = {arg for arg in get_args(hint) if arg is not Ellipsis}
        return tuple(_value(item, element, where) for element in value)
    if is_dataclass(hint) and isinstance(hint, type):
        return _build(hint, value, where)
    if hint is type(None) and value is None:
        return None
    if hint is float and (is_int(value) or isinstance(value, float)):
        return float(value)
    if hint in (int, str, bool) and type(value) is hint:
        return value
    raise BadPayload(f"{where} is {shown(value)}, not a {_named(hint)}")


# The hints a value matches by its exact type alone, and is read as it is.
_EXACT: Final = frozenset({int, str, bool, type(None)})


def _named(hint: Any) -> str:
    return " or ".join(getattr(arg, "__name__", str(arg)) for arg in (get_args(hint) or (hint,)))
