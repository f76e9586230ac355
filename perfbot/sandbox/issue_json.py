"""State → the JSON GitHub would send: issues, comments, reactions, check runs, deliveries,
contents, collaborators, commits and installations."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

from perfbot.sandbox.common import (
    LEVELS,
    REACTIONS,
    RENDERING,
    ROLE_TO_PERMISSION,
    WEBHOOKS,
    Json,
    copied,
    fake_sha,
    git_blob_sha,
    iso,
    legacy,
    node_id_of,
    rewritten,
)
from perfbot.sandbox.fixtures import templates
from perfbot.sandbox.models import CheckRun, Comment, Commit, Delivery, Installation, Reaction, Repo
from perfbot.sandbox.repo_json import app_json, label_json, pull_minimal_json, user_json

if TYPE_CHECKING:
    from perfbot.sandbox.building import FakeBuilding


def association(fake: FakeBuilding, repo: Repo, login: str, user_type: str) -> str:
    if user_type == "Bot":
        return "NONE"
    if login.lower() == repo.owner.lower():
        return "OWNER"
    if login.lower() in repo.collaborators:
        return "COLLABORATOR"
    return "CONTRIBUTOR"


def author_association(fake: FakeBuilding, comment: Comment) -> str:
    return association(fake, fake.repo(comment.repo), comment.user, comment.user_type)


def reaction_counts(comment: Comment, url: str) -> Json:
    counts: Json = {"url": f"{url}/reactions", "total_count": len(comment.reactions)}
    for content in REACTIONS:
        counts[content] = sum(1 for r in comment.reactions if r.content == content)
    return counts


def comment_json(fake: FakeBuilding, comment: Comment) -> Json:
    repo = fake.repo(comment.repo)
    kind = "pull" if comment.issue_number in repo.pulls else "issues"
    url = f"{fake.api_url}/repos/{repo.full_name}/issues/comments/{comment.id}"
    app = None
    if comment.app_id is not None:
        app = app_json(fake, comment.app_id, comment.user.removesuffix("[bot]"))
    obj = copied(templates().comment, "user")
    obj.update(
        url=url,
        html_url=f"https://github.com/{repo.full_name}/{kind}/{comment.issue_number}"
        f"#issuecomment-{comment.id}",
        issue_url=f"{fake.api_url}/repos/{repo.full_name}/issues/{comment.issue_number}",
        id=comment.id,
        node_id=node_id_of("IC", comment.id),
        user=user_json(fake, comment.user, comment.user_type),
        created_at=iso(comment.created_at),
        updated_at=iso(comment.updated_at),
        author_association=author_association(fake, comment),
        performed_via_github_app=app,
        body=comment.body,
        reactions=reaction_counts(comment, url),
    )
    return obj


def reaction_json(fake: FakeBuilding, reaction: Reaction) -> Json:
    user_type = "Bot" if reaction.user.endswith("[bot]") else "User"
    return {
        "id": reaction.id,
        "node_id": node_id_of("REA", reaction.id),
        "user": user_json(fake, reaction.user, user_type),
        "content": reaction.content,
        "created_at": iso(reaction.created_at),
    }


def check_run_json(fake: FakeBuilding, check: CheckRun) -> Json:
    api = f"{fake.api_url}/repos/{check.repo}"
    url = f"{api}/check-runs/{check.id}"
    obj = copied(templates().check_run, "check_suite", "app")
    repo = fake.repo(check.repo)
    pulls = [
        pull_minimal_json(fake, p)
        for p in repo.pulls.values()
        if p.head_sha == check.head_sha and p.state == "open" and not p.is_fork
    ]
    obj.update(
        id=check.id,
        head_sha=check.head_sha,
        node_id=node_id_of("CR", check.id),
        external_id=check.external_id,
        url=url,
        html_url=f"https://github.com/{check.repo}/runs/{check.id}",
        details_url=check.details_url or f"https://github.com/{check.repo}/runs/{check.id}",
        status=check.status,
        conclusion=check.conclusion,
        started_at=iso(check.started_at) if check.started_at else None,
        completed_at=iso(check.completed_at) if check.completed_at else None,
        output={
            "title": check.output.get("title"),
            "summary": check.output.get("summary"),
            "text": check.output.get("text"),
            "annotations_count": 0,
            "annotations_url": f"{url}/annotations",
        },
        name=check.name,
        check_suite={"id": check.check_suite_id},
        app=app_json(fake, check.app_id),
        pull_requests=pulls,
    )
    return obj


def delivery_json(delivery: Delivery) -> Json:
    return {
        "id": delivery.id,
        "guid": delivery.guid,
        "delivered_at": iso(delivery.delivered_at),
        "redelivery": delivery.redelivery,
        "duration": delivery.duration,
        "status": delivery.status,
        "status_code": delivery.status_code,
        "event": delivery.event,
        "action": delivery.action,
        "installation_id": delivery.installation_id,
        "repository_id": delivery.repository_id,
        "throttled_at": None,
    }


def content_links(fake: FakeBuilding, repo: Repo, path: str, ref: str, sha: str) -> Json:
    api = f"{fake.api_url}/repos/{repo.full_name}"
    return {
        "url": f"{api}/contents/{quote(path)}?ref={quote(ref)}",
        "git_url": f"{api}/git/blobs/{sha}",
        "html_url": f"https://github.com/{repo.full_name}/blob/{ref}/{quote(path)}",
    }


def content_file_json(fake: FakeBuilding, repo: Repo, path: str, ref: str, data: bytes) -> Json:
    sha = git_blob_sha(data)
    links = content_links(fake, repo, path, ref, sha)
    encoded = base64.b64encode(data).decode()
    # GitHub wraps the base64 text at 60 columns with "\n"; clients must tolerate it.
    wrapped = "\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60)) + "\n"
    return {
        "type": "file",
        "encoding": "base64",
        "size": len(data),
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "content": wrapped,
        "sha": sha,
        **links,
        "download_url": f"https://raw.githubusercontent.com/{repo.full_name}/{ref}/{path}",
        "_links": {"self": links["url"], "git": links["git_url"], "html": links["html_url"]},
    }


def content_dir_json(
    fake: FakeBuilding, repo: Repo, path: str, ref: str, files: Mapping[str, bytes]
) -> list[Json]:
    prefix = f"{path}/" if path else ""
    entries: dict[str, Json] = {}
    for name, data in sorted(files.items()):
        if not name.startswith(prefix):
            continue
        child, _, rest = name[len(prefix) :].partition("/")
        child_path = prefix + child
        if child_path in entries:
            continue
        sha = git_blob_sha(data) if not rest else fake_sha("tree", child_path)
        links = content_links(fake, repo, child_path, ref, sha)
        entries[child_path] = {
            "type": "dir" if rest else "file",
            "size": 0 if rest else len(data),
            "name": child,
            "path": child_path,
            "sha": sha,
            **links,
            "download_url": None if rest else links["html_url"],
            "_links": {"self": links["url"], "git": links["git_url"], "html": links["html_url"]},
        }
    return list(entries.values())


def collaborator_json(fake: FakeBuilding, login: str, role: str) -> Json:
    level = LEVELS[ROLE_TO_PERMISSION[role]]
    user = user_json(fake, login)
    user["permissions"] = {
        "pull": level >= 1,
        "triage": role in ("triage", "write", "maintain", "admin"),
        "push": level >= 2,
        "maintain": role in ("maintain", "admin"),
        "admin": role == "admin",
    }
    user["role_name"] = role
    return user


def issue_json(fake: FakeBuilding, repo: Repo, number: int) -> Json:
    """The issue ``number``: a plain issue, or a pull request as the issues API shows it."""
    api = f"{fake.api_url}/repos/{repo.full_name}"
    obj = copied(templates().issue)
    pull = repo.pulls.get(number)
    issue = repo.issues.get(number)
    kind = "pull" if pull else "issues"
    body: str | None
    if pull is not None:
        issue_id = fake.stable_id(f"issue:{repo.full_name}:{number}")
        title, body, state, labels = pull.title, "", pull.state, pull.labels
        user, user_type, app_id, state_reason = pull.user, "User", None, None
        created, updated = pull.created_at, pull.created_at
        closed = pull.created_at if pull.state == "closed" else None
        closed_by = None
    else:
        assert issue is not None, f"{repo.full_name}#{number} is neither issue nor pull"
        issue_id, title, body, state, labels = (
            issue.id,
            issue.title,
            issue.body,
            issue.state,
            issue.labels,
        )
        user, user_type, app_id = issue.user, issue.user_type, issue.app_id
        state_reason, created, updated = issue.state_reason, issue.created_at, issue.updated_at
        closed, closed_by = issue.closed_at, issue.closed_by
    app = None
    if app_id is not None:
        app = app_json(fake, app_id, user.removesuffix("[bot]"))
    obj.update(
        url=f"{api}/issues/{number}",
        repository_url=api,
        labels_url=f"{api}/issues/{number}/labels{{/name}}",
        comments_url=f"{api}/issues/{number}/comments",
        events_url=f"{api}/issues/{number}/events",
        html_url=f"https://github.com/{repo.full_name}/{kind}/{number}",
        id=issue_id,
        node_id=node_id_of("I", issue_id),
        number=number,
        title=title,
        user=user_json(fake, user, user_type),
        labels=[label_json(fake, repo.full_name, n) for n in labels],
        state=state,
        state_reason=state_reason,
        locked=bool(issue and issue.locked),
        assignees=[],
        comments=len(fake.comments_on(repo, number)),
        created_at=iso(created),
        updated_at=iso(updated),
        closed_at=iso(closed) if closed else None,
        author_association=association(fake, repo, user, user_type),
        body=body,
        performed_via_github_app=app,
    )
    obj["reactions"] = rewritten(
        obj["reactions"],
        {"https://api.github.com/repos/Codertocat/Hello-World/issues/1": f"{api}/issues/{number}"},
    )
    if legacy():
        obj["assignee"] = None
    else:
        obj.pop("assignee", None)
    if RENDERING.get() != WEBHOOKS:
        # The REST issue: who closed it, and its timeline (webhook issues have neither).
        obj["closed_by"] = user_json(fake, closed_by) if closed_by else None
        obj["timeline_url"] = f"{api}/issues/{number}/timeline"
    if pull is not None:
        html = f"https://github.com/{repo.full_name}/pull/{number}"
        obj["pull_request"] = {
            "url": f"{api}/pulls/{number}",
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "merged_at": iso(pull.created_at) if pull.merged else None,
        }
        if obj["pull_request"]["merged_at"] is None and not legacy():
            # 2026-03-10 made these fields non-null; merged_at, not required, is left out
            # for a pull request that was not merged (tests/CONFORMANCE.md).
            del obj["pull_request"]["merged_at"]
    return obj


def commit_json(fake: FakeBuilding, repo: Repo, commit: Commit) -> Json:
    """A commit as the commits and compare APIs show it."""
    api = f"{fake.api_url}/repos/{repo.full_name}"
    html = f"https://github.com/{repo.full_name}"
    person = {
        "name": commit.author,
        "email": f"{commit.author}@users.noreply.github.com",
        "date": iso(commit.date),
    }
    return {
        "url": f"{api}/commits/{commit.sha}",
        "sha": commit.sha,
        "node_id": node_id_of("C", fake.stable_id(f"commit:{commit.sha}")),
        "html_url": f"{html}/commit/{commit.sha}",
        "comments_url": f"{api}/commits/{commit.sha}/comments",
        "commit": {
            "url": f"{api}/git/commits/{commit.sha}",
            "author": person,
            "committer": person,
            "message": commit.message,
            "comment_count": 0,
            "tree": {
                "sha": fake_sha("tree", commit.sha),
                "url": f"{api}/git/trees/{fake_sha('tree', commit.sha)}",
            },
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
                "verified_at": None,
            },
        },
        "author": user_json(fake, commit.author),
        "committer": user_json(fake, commit.author),
        "parents": [
            {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{html}/commit/{p}"}
            for p in commit.parents
        ],
    }


def installation_json(
    fake: FakeBuilding, installation: Installation, suspended_by: str | None = None
) -> Json:
    """The full installation object of the installation events (suspended by
    ``suspended_by``, or by its account when the fake's state says it is suspended).

    GitHub's examples disagree with its webhook description here: their ``created_at`` and
    ``updated_at`` are UNIX seconds and they lack ``app_slug``, ``suspended_by`` and
    ``suspended_at``. The fake follows the description (date-time strings, every required
    field); perfbot reads both forms. See tests/CONFORMANCE.md.
    """
    if installation.suspended and suspended_by is None:
        suspended_by = installation.account_login
    obj = copied(templates().installation, "account", "suspended_by")
    account_id = fake.stable_id(f"user:{installation.account_login.lower()}")
    html = "https://github.com/" + (
        f"organizations/{installation.account_login}/settings/installations/{installation.id}"
        if installation.account_type == "Organization"
        else f"settings/installations/{installation.id}"
    )
    moment = iso(installation.created_at)
    obj.update(
        id=installation.id,
        account=user_json(fake, installation.account_login, installation.account_type),
        repository_selection=installation.repository_selection,
        access_tokens_url=f"{fake.api_url}/app/installations/{installation.id}/access_tokens",
        repositories_url=f"{fake.api_url}/installation/repositories",
        html_url=html,
        app_id=fake.app_id,
        app_slug=fake.app_slug,
        target_id=account_id,
        target_type=installation.account_type,
        permissions=dict(installation.permissions),
        events=["check_run", "check_suite", "issue_comment", "issues", "workflow_run"],
        created_at=moment,
        updated_at=iso(fake.now()) if suspended_by else moment,
        single_file_name=None,
        suspended_by=user_json(fake, suspended_by) if suspended_by else None,
        suspended_at=iso(fake.now()) if suspended_by else None,
    )
    return obj


def repository_stubs(repositories: Sequence[tuple[str, int]]) -> list[Json]:
    return [
        {
            "id": repo_id,
            "node_id": node_id_of("R", repo_id),
            "name": full_name.split("/")[-1],
            "full_name": full_name,
            "private": False,
        }
        for full_name, repo_id in repositories
    ]
