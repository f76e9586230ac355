"""State → the JSON GitHub would send: users, repositories, the App, labels, pull requests,
workflow runs and artifacts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final, cast
from urllib.parse import quote

from perfbot.sandbox.common import (
    ARTIFACT_RETENTION,
    DEFAULT_PERMISSIONS,
    Json,
    copied,
    fake_sha,
    iso,
    legacy,
    node_id_of,
    template_rewritten,
)
from perfbot.sandbox.fixtures import templates
from perfbot.sandbox.models import Artifact, Pull, Repo, Run

if TYPE_CHECKING:
    from perfbot.sandbox.building import FakeBuilding


def user_json(fake: FakeBuilding, login: str, user_type: str = "User") -> Json:
    replacements = {"https://api.github.com": fake.api_url, "Codertocat": quote(login, safe="")}
    user = cast(Json, template_rewritten(templates().user, replacements))
    user_id = fake.stable_id(f"user:{login.lower()}")
    user.update(
        login=login,
        id=user_id,
        node_id=node_id_of("U", user_id),
        avatar_url=f"https://avatars.githubusercontent.com/u/{user_id}?v=4",
        type=user_type,
        site_admin=False,
    )
    return user


def owner_type(fake: FakeBuilding, login: str) -> str:
    return fake.account_type(login) or "User"


def repo_json(
    fake: FakeBuilding,
    full_name: str,
    repo_id: int,
    *,
    private: bool = False,
    default_branch: str = "main",
    fork: bool = False,
) -> Json:
    """A full repository object (valid as Repository and as MinimalRepository)."""
    repo = cast(
        Json,
        template_rewritten(
            templates().repo,
            {"https://api.github.com": fake.api_url, "octo-org/octo-repo": full_name},
        ),
    )
    owner, name = full_name.split("/")
    repo.update(
        id=repo_id,
        node_id=node_id_of("R", repo_id),
        name=name,
        full_name=full_name,
        private=private,
        visibility="private" if private else "public",
        fork=fork,
        default_branch=default_branch,
        owner=user_json(fake, owner, owner_type(fake, owner)),
        description=None,
    )
    if legacy():
        repo["master_branch"] = default_branch
    else:
        for removed in ("has_downloads", "master_branch", "use_squash_pr_title_as_default"):
            repo.pop(removed, None)
    return repo


def known_repo_json(fake: FakeBuilding, repo: Repo) -> Json:
    return repo_json(
        fake, repo.full_name, repo.id, private=repo.private, default_branch=repo.default_branch
    )


def head_repo_json(fake: FakeBuilding, base: Repo, full_name: str, repo_id: int) -> Json:
    if full_name.lower() == base.full_name.lower():
        return known_repo_json(fake, base)
    known = fake.repos.get(full_name.lower())
    if known is not None:
        return known_repo_json(fake, known)
    return repo_json(fake, full_name, repo_id, default_branch=base.default_branch, fork=True)


def app_json(fake: FakeBuilding, app_id: int | None = None, slug: str | None = None) -> Json:
    """The Integration object of this App (or of another one, for foreign bot comments)."""
    app = copied(templates().app, "owner")
    app_id = app_id or fake.app_id
    slug = slug or (fake.app_slug if app_id == fake.app_id else f"app-{app_id}")
    moment = iso(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    app.update(
        id=app_id,
        slug=slug,
        client_id=f"Iv1.{fake_sha(app_id)[:16]}",
        node_id=node_id_of("A", app_id),
        owner=user_json(fake, "perfbot-dev", "Organization"),
        name=slug.replace("-", " ").title(),
        description="Network-performance comparisons on pull requests (fake)",
        external_url="https://perfbot.example",
        html_url=f"https://github.com/apps/{slug}",
        created_at=moment,
        updated_at=moment,
        permissions=dict(DEFAULT_PERMISSIONS),
        events=["check_run", "issue_comment", "pull_request", "workflow_run"],
        installations_count=len(fake.installations),
    )
    return app


def label_json(fake: FakeBuilding, repo: str, name: str) -> Json:
    label_id = fake.stable_id(f"label:{repo.lower()}:{name}")
    return {
        "id": label_id,
        "node_id": node_id_of("LA", label_id),
        "url": f"{fake.api_url}/repos/{repo}/labels/{quote(name)}",
        "name": name,
        # A string: pull-request-simple's labels have no null description (GitHub's own
        # answers do send null for a label without one; tests/CONFORMANCE.md).
        "description": "",
        "color": "ededed",
        "default": False,
        "archived_by": None,  # required (and always null) in the 2026-03-10 schema
    }


def pull_side_json(
    fake: FakeBuilding, base: Repo, ref: str, sha: str, full_name: str, repo_id: int
) -> Json:
    owner = full_name.split("/", maxsplit=1)[0]
    return {
        "label": f"{owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user_json(fake, owner, owner_type(fake, owner)),
        "repo": head_repo_json(fake, base, full_name, repo_id),
    }


SIMPLE_PULL_OMITS: Final = (
    "merged",
    "mergeable",
    "rebaseable",
    "mergeable_state",
    "merged_by",
    "comments",
    "review_comments",
    "maintainer_can_modify",
    "commits",
    "additions",
    "deletions",
    "changed_files",
)


def pull_json(fake: FakeBuilding, pull: Pull, *, simple: bool = False) -> Json:
    """PullRequest, or PullRequestSimple (the list form) with ``simple``."""
    base = fake.repo(pull.repo)
    api = f"{fake.api_url}/repos/{base.full_name}"
    html = f"https://github.com/{base.full_name}/pull/{pull.number}"
    obj = copied(
        templates().pull, "user", "head", "base", "assignees", "requested_reviewers", "_links"
    )
    closed = pull.state == "closed"
    stamp = iso(pull.created_at)
    obj.update(
        url=f"{api}/pulls/{pull.number}",
        id=pull.id,
        node_id=node_id_of("PR", pull.id),
        html_url=html,
        diff_url=f"{html}.diff",
        patch_url=f"{html}.patch",
        issue_url=f"{api}/issues/{pull.number}",
        number=pull.number,
        state=pull.state,
        title=pull.title,
        user=user_json(fake, pull.user),
        body="",
        created_at=stamp,
        updated_at=stamp,
        closed_at=stamp if closed else None,
        merged_at=stamp if pull.merged else None,
        assignees=[],
        requested_reviewers=[],
        labels=[label_json(fake, base.full_name, name) for name in pull.labels],
        commits_url=f"{api}/pulls/{pull.number}/commits",
        review_comments_url=f"{api}/pulls/{pull.number}/comments",
        review_comment_url=f"{api}/pulls/comments{{/number}}",
        comments_url=f"{api}/issues/{pull.number}/comments",
        statuses_url=f"{api}/statuses/{pull.head_sha}",
        head=pull_side_json(
            fake, base, pull.head_ref, pull.head_sha, pull.head_repo_full_name, pull.head_repo_id
        ),
        base=pull_side_json(fake, base, pull.base_ref, pull.base_sha, base.full_name, base.id),
        author_association="CONTRIBUTOR" if pull.is_fork else "MEMBER",
        draft=pull.draft,
        merged=pull.merged,
        comments=len(fake.comments_on(base, pull.number)),
    )
    obj["_links"] = {
        "self": {"href": f"{api}/pulls/{pull.number}"},
        "html": {"href": html},
        "issue": {"href": f"{api}/issues/{pull.number}"},
        "comments": {"href": f"{api}/issues/{pull.number}/comments"},
        "review_comments": {"href": f"{api}/pulls/{pull.number}/comments"},
        "review_comment": {"href": f"{api}/pulls/comments{{/number}}"},
        "commits": {"href": f"{api}/pulls/{pull.number}/commits"},
        "statuses": {"href": f"{api}/statuses/{pull.head_sha}"},
    }
    if legacy():
        obj.update(merge_commit_sha=fake_sha("merge", pull.id), assignee=None)
    else:
        obj.pop("merge_commit_sha", None)
        obj.pop("assignee", None)
    if simple:
        for key in SIMPLE_PULL_OMITS:
            obj.pop(key, None)
    return obj


def pull_minimal_json(fake: FakeBuilding, pull: Pull) -> Json:
    """The short PR form of ``workflow_run.pull_requests`` and ``check_run.pull_requests``."""
    base = fake.repo(pull.repo)

    def side(ref: str, sha: str, full_name: str, repo_id: int) -> Json:
        url = f"{fake.api_url}/repos/{full_name}"
        repo = {"id": repo_id, "url": url, "name": full_name.split("/")[1]}
        return {"ref": ref, "sha": sha, "repo": repo}

    return {
        "url": f"{fake.api_url}/repos/{base.full_name}/pulls/{pull.number}",
        "id": pull.id,
        "number": pull.number,
        "head": side(pull.head_ref, pull.head_sha, pull.head_repo_full_name, pull.head_repo_id),
        "base": side(pull.base_ref, pull.base_sha, base.full_name, base.id),
    }


def run_pull_requests(fake: FakeBuilding, run: Run) -> list[Pull]:
    if run.pull_requests is not None:
        return run.pull_requests
    if run.is_fork:
        return []  # GitHub leaves it empty for fork PRs (actions/runner#3444)
    return [
        p
        for p in fake.repo(run.repo).pulls.values()
        if p.state == "open"
        and not p.is_fork
        and (p.head_sha == run.head_sha or p.head_ref == run.head_branch)
    ]


def run_json(fake: FakeBuilding, run: Run) -> Json:
    base = fake.repo(run.repo)
    api = f"{fake.api_url}/repos/{base.full_name}"
    url = f"{api}/actions/runs/{run.id}"
    obj = copied(templates().run, "repository", "head_repository", "actor", "triggering_actor")
    obj.update(
        id=run.id,
        name=run.name,
        node_id=node_id_of("WFR", run.id),
        head_branch=run.head_branch,
        head_sha=run.head_sha,
        path=run.path,
        display_title=run.display_title,
        run_number=run.run_number,
        event=run.event,
        status=run.status,
        conclusion=run.conclusion,
        workflow_id=run.workflow_id,
        check_suite_id=run.check_suite_id,
        check_suite_node_id=node_id_of("CS", run.check_suite_id),
        url=url,
        html_url=f"https://github.com/{base.full_name}/actions/runs/{run.id}",
        pull_requests=[pull_minimal_json(fake, p) for p in run_pull_requests(fake, run)],
        created_at=iso(run.created_at),
        updated_at=iso(run.updated_at),
        actor=user_json(fake, run.actor),
        triggering_actor=user_json(fake, run.actor),
        run_attempt=run.run_attempt,
        run_started_at=iso(run.updated_at),
        jobs_url=f"{url}/jobs",
        logs_url=f"{url}/logs",
        check_suite_url=f"{api}/check-suites/{run.check_suite_id}",
        artifacts_url=f"{url}/artifacts",
        cancel_url=f"{url}/cancel",
        rerun_url=f"{url}/rerun",
        previous_attempt_url=(
            f"{url}/attempts/{run.run_attempt - 1}" if run.run_attempt > 1 else None
        ),
        workflow_url=f"{api}/actions/workflows/{run.workflow_id}",
        repository=known_repo_json(fake, base),
        head_repository=head_repo_json(fake, base, run.head_repo_full_name, run.head_repo_id),
    )
    obj["head_commit"].update(
        id=run.head_sha, tree_id=fake_sha("tree", run.head_sha), message=run.display_title
    )
    return obj


def artifact_json(fake: FakeBuilding, artifact: Artifact) -> Json:
    run = fake.runs.get(artifact.run_id)
    url = f"{fake.api_url}/repos/{artifact.repo}/actions/artifacts/{artifact.id}"
    expires = artifact.created_at + ARTIFACT_RETENTION
    if artifact.expired:
        expires = min(expires, fake.now() - timedelta(seconds=1))
    obj = copied(templates().artifact)
    obj.update(
        id=artifact.id,
        node_id=node_id_of("AR", artifact.id),
        name=artifact.name,
        size_in_bytes=len(artifact.data),
        url=url,
        archive_download_url=f"{url}/zip",
        expired=artifact.expired,
        digest=artifact.digest,
        created_at=iso(artifact.created_at),
        updated_at=iso(artifact.created_at),
        expires_at=iso(expires),
        workflow_run=None
        if run is None
        else {
            "id": run.id,
            "repository_id": fake.repo(run.repo).id,
            "head_repository_id": run.head_repo_id,
            "head_branch": run.head_branch,
            "head_sha": run.head_sha,
        },
    )
    return obj
