"""The webhook payloads GitHub would deliver to the App, built from the fake's state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast
from urllib.parse import quote

from perfbot.sandbox.common import (
    Json,
    copied,
    fake_sha,
    iso,
    node_id_of,
    template_rewritten,
)
from perfbot.sandbox.fixtures import templates
from perfbot.sandbox.issue_json import (
    check_run_json,
    comment_json,
    installation_json,
    issue_json,
    repository_stubs,
)
from perfbot.sandbox.models import CheckRun, Comment, Issue, Repo, Run
from perfbot.sandbox.repo_json import known_repo_json, label_json, owner_type, run_json, user_json

if TYPE_CHECKING:
    from perfbot.sandbox.building import FakeBuilding


def installation_stub(repo: Repo) -> Json:
    return {"id": repo.installation_id, "node_id": node_id_of("IN", repo.installation_id)}


def with_repository(fake: FakeBuilding, payload: Json, repo: Repo, sender: str) -> Json:
    """Adds the parts every App delivery has: repository, sender, installation, organization."""
    payload["repository"] = known_repo_json(fake, repo)
    payload["sender"] = user_json(fake, sender, "Bot" if sender.endswith("[bot]") else "User")
    payload["installation"] = installation_stub(repo)
    payload.pop("organization", None)
    if owner_type(fake, repo.owner) == "Organization":
        organization = cast(
            Json,
            template_rewritten(
                templates().organization,
                {"octo-org": repo.owner, "https://api.github.com": fake.api_url},
            ),
        )
        org_id = fake.stable_id(f"user:{repo.owner.lower()}")
        organization.update(id=org_id, node_id=node_id_of("O", org_id), login=repo.owner)
        payload["organization"] = organization
    return payload


def workflow_run_event(fake: FakeBuilding, run: Run, action: str) -> Json:
    repo = fake.repo(run.repo)
    payload = copied(templates().workflow_run_event)
    workflow = payload["workflow"]
    workflow.update(
        id=run.workflow_id,
        node_id=node_id_of("W", run.workflow_id),
        name=run.name,
        path=run.path,
        url=f"{fake.api_url}/repos/{repo.full_name}/actions/workflows/{run.workflow_id}",
        html_url=f"https://github.com/{repo.full_name}/blob/{repo.default_branch}/{run.path}",
        badge_url=f"https://github.com/{repo.full_name}/workflows/{quote(run.name)}/badge.svg",
    )
    payload["action"] = action
    payload["workflow_run"] = run_json(fake, run)
    return with_repository(fake, payload, repo, run.actor)


def issues_event(
    fake: FakeBuilding,
    issue: Issue,
    action: str,
    sender: str,
    label: str | None,
    changes: Mapping[str, str] | None,
) -> Json:
    repo = fake.repo(issue.repo)
    payload: Json = {"action": action, "issue": issue_json(fake, repo, issue.number)}
    if label is not None:
        payload["label"] = label_json(fake, repo.full_name, label)
    if action == "edited":
        payload["changes"] = {key: {"from": value} for key, value in (changes or {}).items()}
    return with_repository(fake, payload, repo, sender)


def issue_comment_event(fake: FakeBuilding, comment: Comment, action: str, sender: str) -> Json:
    repo = fake.repo(comment.repo)
    payload: Json = {
        "action": action,
        "issue": issue_json(fake, repo, comment.issue_number),
        "comment": comment_json(fake, comment),
    }
    if action == "edited":
        payload["changes"] = {"body": {"from": comment.previous_body}}
    return with_repository(fake, payload, repo, sender)


def check_suite_json(fake: FakeBuilding, check: CheckRun, check_run: Json) -> Json:
    """The full check suite of ``check`` (``check_run_json`` is the check run's JSON)."""
    repo = fake.repo(check.repo)
    suite = copied(templates().check_suite)
    pull = next((p for p in repo.pulls.values() if p.head_sha == check.head_sha), None)
    url = f"{fake.api_url}/repos/{repo.full_name}/check-suites/{check.check_suite_id}"
    runs = [c for c in fake.check_runs.values() if c.check_suite_id == check.check_suite_id]
    suite.update(
        id=check.check_suite_id,
        node_id=node_id_of("CS", check.check_suite_id),
        head_branch=pull.head_ref if pull else repo.default_branch,
        head_sha=check.head_sha,
        status="completed",
        conclusion=check.conclusion,
        url=url,
        check_runs_url=f"{url}/check-runs",
        latest_check_runs_count=max(1, len(runs)),
        before=None,
        after=check.head_sha,
        pull_requests=check_run["pull_requests"],
        app=check_run["app"],
        created_at=check_run["started_at"] or iso(fake.now()),
        updated_at=check_run["completed_at"] or iso(fake.now()),
    )
    suite["head_commit"].update(
        id=check.head_sha, tree_id=fake_sha("tree", check.head_sha), timestamp=suite["created_at"]
    )
    return suite


def check_run_event(
    fake: FakeBuilding, check: CheckRun, action: str, sender: str, requested_action: str | None
) -> Json:
    repo = fake.repo(check.repo)
    check_run = check_run_json(fake, check)
    suite = check_suite_json(fake, check, check_run)
    # The check run carries the short form of its suite, as GitHub sends it.
    check_run["check_suite"] = {
        key: suite[key] for key in templates().check_run["check_suite"] if key in suite
    }
    payload: Json = {"action": action, "check_run": check_run}
    if requested_action is not None:
        payload["requested_action"] = {"identifier": requested_action}
    return with_repository(fake, payload, repo, sender)


def check_suite_event(fake: FakeBuilding, check: CheckRun, action: str, sender: str) -> Json:
    repo = fake.repo(check.repo)
    suite = check_suite_json(fake, check, check_run_json(fake, check))
    return with_repository(fake, {"action": action, "check_suite": suite}, repo, sender)


def installation_event(
    fake: FakeBuilding,
    installation_id: int,
    action: str,
    repositories: Sequence[tuple[str, int]],
    sender: str,
) -> Json:
    installation = fake.installations[installation_id]
    # The delivery tells of the change; the fake's own state is the test's to change.
    suspended_by = sender if action == "suspend" else None
    installed = installation_json(fake, installation, suspended_by)
    if action == "unsuspend":
        installed.update(suspended_by=None, suspended_at=None, updated_at=iso(fake.now()))
    payload: Json = {"action": action, "installation": installed}
    if action in ("created", "deleted"):
        payload["repositories"] = repository_stubs(repositories)
        payload["requester"] = None
    payload["sender"] = user_json(fake, sender)
    return payload


def installation_repositories_event(
    fake: FakeBuilding,
    installation_id: int,
    action: str,
    added: Sequence[tuple[str, int]],
    removed: Sequence[tuple[str, int]],
    sender: str,
) -> Json:
    installation = fake.installations[installation_id]
    return {
        "action": action,
        "installation": installation_json(fake, installation),
        "repository_selection": installation.repository_selection,
        "repositories_added": repository_stubs(added),
        "repositories_removed": repository_stubs(removed),
        "requester": None,
        "sender": user_json(fake, sender),
    }
