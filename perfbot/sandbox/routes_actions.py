"""GitHub Actions endpoints: workflow runs, their artifacts and downloads, re-runs."""

from __future__ import annotations

import secrets

from starlette.responses import Response

from perfbot.sandbox.common import BLOB_URL_LIFETIME, RUN_STATUSES
from perfbot.sandbox.models import Artifact, Blob, Run
from perfbot.sandbox.plumbing import Call, HttpError, json_response, paginate
from perfbot.sandbox.repo_json import artifact_json, run_json


def run_of(call: Call) -> Run:
    run = call.fake.runs.get(call.int_param("run_id"))
    if run is None or run.repo != call.repo.full_name:
        raise HttpError(404, "Not Found")
    return run


def list_runs(call: Call) -> Response:
    fake, query = call.fake, call.query
    runs = [r for r in fake.runs.values() if r.repo == call.repo.full_name]
    if "head_sha" in query:
        runs = [r for r in runs if r.head_sha == query["head_sha"]]
    if "event" in query:
        runs = [r for r in runs if r.event == query["event"]]
    if "branch" in query:
        runs = [r for r in runs if r.head_branch == query["branch"]]
    if "actor" in query:
        runs = [r for r in runs if r.actor == query["actor"]]
    if "status" in query:
        # One parameter for both: a status ("completed") or a conclusion ("success").
        wanted = query["status"]
        by_status = wanted in RUN_STATUSES
        runs = [r for r in runs if (r.status if by_status else r.conclusion) == wanted]
    runs.sort(key=lambda r: r.id, reverse=True)
    page, headers = paginate(call, runs)
    content = {"total_count": len(runs), "workflow_runs": [run_json(fake, r) for r in page]}
    return json_response(content, headers=headers)


def get_run(call: Call) -> Response:
    return json_response(run_json(call.fake, run_of(call)))


def artifact_listing(call: Call, artifacts: list[Artifact]) -> Response:
    if "name" in call.query:
        artifacts = [a for a in artifacts if a.name == call.query["name"]]
    newest_first = call.query.get("direction", "desc") == "desc"
    artifacts.sort(key=lambda a: (a.created_at, a.id), reverse=newest_first)
    page, headers = paginate(call, artifacts)
    content = {
        "total_count": len(artifacts),
        "artifacts": [artifact_json(call.fake, a) for a in page],
    }
    return json_response(content, headers=headers)


def list_run_artifacts(call: Call) -> Response:
    run = run_of(call)
    return artifact_listing(call, call.fake.artifacts_of_run(run.id))


def list_repo_artifacts(call: Call) -> Response:
    repo = call.repo.full_name
    return artifact_listing(call, [a for a in call.fake.artifacts.values() if a.repo == repo])


def artifact_of(call: Call) -> Artifact:
    artifact = call.fake.artifacts.get(call.int_param("artifact_id"))
    if artifact is None or artifact.repo != call.repo.full_name:
        raise HttpError(404, "Not Found")
    return artifact


def get_artifact(call: Call) -> Response:
    return json_response(artifact_json(call.fake, artifact_of(call)))


def download_artifact(call: Call) -> Response:
    artifact = artifact_of(call)
    if call.params["archive_format"] != "zip":
        raise HttpError(404, "Not Found")
    if artifact.expired:
        raise HttpError(410, "Artifact has expired")
    fake = call.fake
    blob = Blob(
        token=secrets.token_urlsafe(24),
        artifact_id=artifact.id,
        data=artifact.data,
        expires_at=fake.now() + BLOB_URL_LIFETIME,
    )
    fake.blobs[blob.token] = blob
    return Response(status_code=302, headers={"location": f"{fake.storage_url}/blobs/{blob.token}"})


def rerun(call: Call) -> Response:
    run = run_of(call)
    if run.status != "completed":
        raise HttpError(403, "This workflow run is not completed and cannot be re-run")
    run.run_attempt += 1
    run.status = "queued"
    run.conclusion = None
    run.updated_at = call.fake.now()
    call.fake.reruns.append(run.id)
    return json_response({}, 201)
