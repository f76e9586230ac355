"""Contents, collaborator permissions and check runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.responses import Response

from perfbot.sandbox.common import (
    CHECK_CONCLUSIONS,
    CHECK_RUN_TEXT_LIMIT,
    CHECK_STATUSES,
    ROLE_TO_PERMISSION,
    Json,
)
from perfbot.sandbox.issue_json import (
    check_run_json,
    collaborator_json,
    content_dir_json,
    content_file_json,
)
from perfbot.sandbox.models import CheckRun, Repo
from perfbot.sandbox.plumbing import Call, HttpError, body_dict, invalid, json_response

if TYPE_CHECKING:
    from perfbot.sandbox.building import FakeBuilding


def files_at(repo: Repo, ref: str | None) -> dict[str, bytes]:
    if ref is None or ref in (repo.default_branch, f"refs/heads/{repo.default_branch}"):
        files = repo.files
    elif ref in repo.refs:
        files = repo.refs[ref]
    else:
        raise HttpError(404, f"No commit found for the ref {ref}")
    return {p: v.encode() if isinstance(v, str) else v for p, v in files.items()}


def get_contents(call: Call) -> Response:
    repo = call.repo
    path = call.params["path"].strip("/")
    ref = call.query.get("ref")
    files = files_at(repo, ref)
    shown_ref = ref or repo.default_branch
    raw = "application/vnd.github.raw" in call.request.headers.get("accept", "")
    if path in files:
        if raw:
            return Response(files[path], media_type="text/plain; charset=utf-8")
        return json_response(content_file_json(call.fake, repo, path, shown_ref, files[path]))
    if any(name.startswith(path + "/") for name in files):
        return json_response(content_dir_json(call.fake, repo, path, shown_ref, files))
    raise HttpError(404, "Not Found")


def collaborator_permission(call: Call) -> Response:
    login = call.params["username"]
    repo = call.repo
    # Anyone can read a public repository; GitHub reports that as "read".
    role = repo.collaborators.get(login.lower(), "none" if repo.private else "read")
    content = {
        "permission": ROLE_TO_PERMISSION[role],
        "role_name": role,
        "user": collaborator_json(call.fake, login, role),
    }
    return json_response(content)


def check_output(body: Json) -> dict[str, str | None] | None:
    output = body.get("output")
    if output is None:
        return None
    if not isinstance(output, dict) or not output.get("title") or "summary" not in output:
        raise invalid("CheckRun", "output", "output needs a title and a summary")
    for key in ("summary", "text"):
        value = output.get(key)
        if value is not None and len(str(value)) > CHECK_RUN_TEXT_LIMIT:
            raise invalid(
                "CheckRun",
                f"output.{key}",
                f"Output {key} is too long (maximum is {CHECK_RUN_TEXT_LIMIT} characters)",
            )
    return {key: output.get(key) for key in ("title", "summary", "text")}


def apply_check_fields(fake: FakeBuilding, check: CheckRun, body: Json) -> None:
    """Status, conclusion and output as GitHub combines them: a conclusion completes the run."""
    status = body.get("status", check.status)
    conclusion = body.get("conclusion", check.conclusion if "status" not in body else None)
    if status not in CHECK_STATUSES:
        raise invalid("CheckRun", "status", f"status {status!r} is not valid")
    if conclusion is not None and conclusion not in CHECK_CONCLUSIONS:
        raise invalid("CheckRun", "conclusion", f"conclusion {conclusion!r} is not valid")
    if conclusion is not None:
        status = "completed"
    if status == "completed" and conclusion is None:
        raise invalid("CheckRun", "conclusion", "conclusion is required when status is completed")
    if (output := check_output(body)) is not None:
        check.output = output
    for key in ("name", "details_url", "external_id"):
        if key in body:
            setattr(check, key, body[key])
    check.status, check.conclusion = status, conclusion
    if status == "in_progress" and check.started_at is None:
        check.started_at = fake.now()
    if status == "completed":
        check.completed_at = fake.now()


def create_check_run(call: Call) -> Response:
    fake, body = call.fake, body_dict(call)
    for key in ("name", "head_sha"):
        if not isinstance(body.get(key), str) or not body[key]:
            raise invalid("CheckRun", key, f"{key} wasn't supplied")
    check = CheckRun(
        id=fake.next_id(),
        repo=call.repo.full_name,
        name=body["name"],
        head_sha=body["head_sha"],
        app_id=fake.app_id,
        check_suite_id=fake.stable_id(f"suite:{call.repo.full_name}:{body['head_sha']}"),
        started_at=fake.now(),
    )
    apply_check_fields(fake, check, body)
    fake.check_runs[check.id] = check
    return json_response(check_run_json(fake, check), 201)


def check_run_of(call: Call) -> CheckRun:
    check = call.fake.check_runs.get(call.int_param("check_run_id"))
    if check is None or check.repo != call.repo.full_name:
        raise HttpError(404, "Not Found")
    return check


def update_check_run(call: Call) -> Response:
    check = check_run_of(call)
    if check.app_id != call.fake.app_id:
        raise HttpError(
            403,
            f"Invalid app_id `{call.fake.app_id}` - check run can only be modified by the "
            "GitHub App that created it.",
        )
    apply_check_fields(call.fake, check, body_dict(call))
    return json_response(check_run_json(call.fake, check))


def get_check_run(call: Call) -> Response:
    return json_response(check_run_json(call.fake, check_run_of(call)))
