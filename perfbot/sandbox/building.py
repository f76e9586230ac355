"""Building state: the ``add_*`` helpers tests set a scene with, and tokens."""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from perfbot.sandbox.common import (
    ACTIONS_APP_ID,
    ACTIONS_BOT_LOGIN,
    ACTIONS_TOKEN_PERMISSIONS,
    DEFAULT_PERMISSIONS,
    ROLE_TO_PERMISSION,
    TOKEN_LIFETIME,
    Json,
    fake_sha,
)
from perfbot.sandbox.core import FakeCore
from perfbot.sandbox.models import (
    Artifact,
    CheckRun,
    Comment,
    Commit,
    Delivery,
    Installation,
    Issue,
    Pull,
    Repo,
    Run,
    Token,
)


class FakeBuilding(FakeCore):
    def add_installation(
        self,
        installation_id: int,
        account_login: str,
        *,
        account_type: str = "Organization",
        permissions: Mapping[str, str] | None = None,
    ) -> Installation:
        installation = Installation(
            id=installation_id,
            account_login=account_login,
            account_type=account_type,
            permissions=dict(permissions or DEFAULT_PERMISSIONS),
        )
        self.installations[installation_id] = installation
        return installation

    def add_repo(
        self,
        full_name: str,
        repo_id: int,
        installation_id: int,
        default_branch: str = "main",
        files: Mapping[str, str | bytes] | None = None,
        *,
        private: bool = False,
    ) -> Repo:
        if installation_id not in self.installations:
            raise KeyError(f"add_installation({installation_id}, …) first")
        repo = Repo(
            full_name=full_name,
            id=repo_id,
            installation_id=installation_id,
            default_branch=default_branch,
            private=private,
            files=dict(files or {}),
        )
        self.repos[full_name.lower()] = repo
        self._stable_ids[f"repo:{full_name.lower()}"] = repo_id
        return repo

    def add_collaborator(self, repo: Repo | str, login: str, role: str = "write") -> None:
        if role not in ROLE_TO_PERMISSION:
            raise ValueError(f"unknown role {role!r}")
        self.repo(repo).collaborators[login.lower()] = role

    def add_issue(
        self,
        repo: Repo | str,
        number: int | None = None,
        title: str | None = None,
        body: str | None = None,
        *,
        labels: Sequence[str] = (),
        login: str = "alice",
        state: str = "open",
        app_id: int | None = None,
    ) -> Issue:
        """A plain issue: ``number`` (the repository's next one when None), opened by
        ``login`` (perfbot itself with ``app_id=fake.app_id`` and ``login=fake.bot_login``)."""
        target = self.repo(repo)
        number = number if number is not None else self.next_issue_number(target)
        if number in target.pulls or number in target.issues:
            raise ValueError(f"{target.full_name}#{number} exists")
        moment = self.now()
        issue = Issue(
            repo=target.full_name,
            number=number,
            id=self.next_id(),
            title=title or f"Issue {number}",
            body=body,
            state=state,
            state_reason="completed" if state == "closed" else None,
            labels=list(labels),
            user=login,
            user_type="Bot" if login.endswith("[bot]") else "User",
            app_id=app_id,
            created_at=moment,
            updated_at=moment,
            closed_at=moment if state == "closed" else None,
        )
        target.issues[number] = issue
        return issue

    def next_issue_number(self, repo: Repo | str) -> int:
        """The number GitHub would give the repository's next issue or pull request."""
        target = self.repo(repo)
        # Never one of a deleted issue's: GitHub does not give a number twice.
        target.last_number = max([target.last_number, *target.pulls, *target.issues]) + 1
        return target.last_number

    def add_commit(
        self,
        repo: Repo | str,
        message: str,
        *,
        branch: str | None = None,
        sha: str | None = None,
        parents: Sequence[str] | None = None,
        author: str = "alice",
        pull: int | None = None,
    ) -> Commit:
        """A commit on ``branch`` (the default one), on top of its head unless ``parents``."""
        target = self.repo(repo)
        branch = branch or target.default_branch
        head = target.branches.get(branch)
        commit = Commit(
            sha=sha or fake_sha("commit", target.full_name, len(target.commits), message),
            message=message,
            parents=list(parents if parents is not None else ([head] if head else [])),
            author=author,
            date=self.now(),
            pull=pull,
        )
        target.commits[commit.sha] = commit
        target.branches[branch] = commit.sha
        return commit

    def merge_pull(self, repo: Repo | str, number: int, *, squash: bool = True) -> Commit:
        """Merge pull request ``number`` into its base branch: one commit there (squashed,
        or a merge commit whose second parent is the head), which GitHub's
        ``commits/{sha}/pulls`` then answers with the pull request."""
        target = self.repo(repo)
        pull = target.pulls[number]
        base = target.branches.get(pull.base_ref)
        if squash:
            parents = [base] if base else []
            message = f"{pull.title} (#{number})"
        else:
            parents = [p for p in (base, pull.head_sha) if p]
            message = f"Merge pull request #{number} from {pull.head_repo_full_name}"
        commit = self.add_commit(
            target, message, branch=pull.base_ref, parents=parents, author=pull.user, pull=number
        )
        pull.merged, pull.state, pull.merge_commit_sha = True, "closed", commit.sha
        return commit

    def add_pull(
        self,
        repo: Repo | str,
        number: int,
        head_sha: str,
        head_ref: str,
        head_repo_full_name: str | None = None,
        head_repo_id: int | None = None,
        state: str = "open",
        labels: Sequence[str] = (),
        *,
        title: str = "Improve throughput",
        user: str = "alice",
        base_ref: str | None = None,
        merged: bool = False,
        draft: bool = False,
    ) -> Pull:
        base = self.repo(repo)
        head_name = head_repo_full_name or base.full_name
        pull = Pull(
            repo=base.full_name,
            number=number,
            id=self.next_id(),
            head_sha=head_sha,
            head_ref=head_ref,
            head_repo_full_name=head_name,
            head_repo_id=head_repo_id or self.stable_id(f"repo:{head_name.lower()}"),
            state=state,
            labels=list(labels),
            title=title,
            user=user,
            base_ref=base_ref or base.default_branch,
            base_sha=fake_sha(base.full_name, base_ref or base.default_branch),
            merged=merged,
            draft=draft,
            created_at=self.now(),
        )
        base.pulls[number] = pull
        return pull

    def add_run(
        self,
        repo: Repo | str,
        run_id: int,
        head_sha: str,
        head_branch: str,
        head_repo: tuple[str, int] | None = None,
        *,
        event: str = "pull_request",
        name: str = "net-perf",
        path: str = ".github/workflows/net-perf.yml",
        status: str = "completed",
        conclusion: str | None = "success",
        pull_requests: Sequence[Pull] | None = None,
        run_attempt: int = 1,
        actor: str | None = None,
    ) -> Run:
        """A workflow run; ``head_repo`` = (full_name, id) of a fork, None for the repo itself."""
        base = self.repo(repo)
        head_name, head_id = head_repo or (base.full_name, base.id)
        moment = self.now()
        run = Run(
            repo=base.full_name,
            id=run_id,
            head_sha=head_sha,
            head_branch=head_branch,
            head_repo_full_name=head_name,
            head_repo_id=head_id,
            event=event,
            name=name,
            path=path,
            status=status,
            conclusion=conclusion,
            run_attempt=run_attempt,
            run_number=len(self.runs) + 1,
            workflow_id=self.stable_id(f"workflow:{base.full_name}:{path}"),
            check_suite_id=self.next_id(),
            actor=actor or head_name.split("/")[0],
            pull_requests=None if pull_requests is None else list(pull_requests),
            created_at=moment,
            updated_at=moment,
        )
        self.runs[run_id] = run
        return run

    def add_artifact(
        self, repo: Repo | str, run: Run | int, name: str, zip_bytes: bytes, expired: bool = False
    ) -> Artifact:
        run_id = run.id if isinstance(run, Run) else run
        artifact = Artifact(
            id=self.next_id(),
            repo=self.repo(repo).full_name,
            run_id=run_id,
            name=name,
            data=zip_bytes,
            expired=expired,
            created_at=self.now(),
        )
        self.artifacts[artifact.id] = artifact
        if self._artifacts_indexed == len(self.artifacts) - 1:
            self._artifacts_by_run.setdefault(run_id, []).append(artifact)
            self._artifacts_indexed += 1
        return artifact

    def add_comment(
        self,
        repo: Repo | str,
        number: int,
        body: str,
        login: str = "alice",
        user_type: str = "User",
        app_id: int | None = None,
    ) -> Comment:
        target = self.repo(repo)
        if number not in target.pulls and number not in target.issues:
            self.add_issue(target, number)
        moment = self.now()
        comment = Comment(
            id=self.next_id(),
            repo=target.full_name,
            issue_number=number,
            body=body,
            user=login,
            user_type=user_type,
            app_id=app_id,
            created_at=moment,
            updated_at=moment,
        )
        self.comments[comment.id] = comment
        if self._comments_indexed == len(self.comments) - 1:
            key = comment.repo, comment.issue_number
            self._comments_by_issue.setdefault(key, []).append(comment)
            self._comments_indexed += 1
        return comment

    def add_bot_comment(self, repo: Repo | str, number: int, body: str) -> Comment:
        """A comment exactly as perfbot itself would have posted it."""
        return self.add_comment(repo, number, body, self.bot_login, "Bot", self.app_id)

    def delete_comment(self, comment_id: int) -> None:
        self.comments[comment_id].deleted = True

    def add_check_run(
        self,
        repo: Repo | str,
        name: str,
        head_sha: str,
        *,
        app_id: int | None = None,
        status: str = "completed",
        conclusion: str | None = "success",
    ) -> CheckRun:
        """A check run that already exists (by default perfbot's; another app's with app_id)."""
        moment = self.now()
        check = CheckRun(
            id=self.next_id(),
            repo=self.repo(repo).full_name,
            name=name,
            head_sha=head_sha,
            status=status,
            conclusion=conclusion,
            app_id=app_id or self.app_id,
            check_suite_id=self.next_id(),
            started_at=moment,
            completed_at=moment if status == "completed" else None,
        )
        self.check_runs[check.id] = check
        return check

    def add_delivery(
        self,
        event: str,
        action: str | None = None,
        *,
        status_code: int = 200,
        guid: str | None = None,
        installation_id: int | None = None,
        repository_id: int | None = None,
        redelivery: bool = False,
        delivered_at: datetime | None = None,
        payload: Json | None = None,
    ) -> Delivery:
        delivery = Delivery(
            payload=payload,
            id=self.next_id(),
            guid=guid or str(uuid.uuid4()),
            event=event,
            action=action,
            status_code=status_code,
            installation_id=installation_id,
            repository_id=repository_id,
            redelivery=redelivery,
            delivered_at=delivered_at or self.now(),
        )
        self.deliveries.append(delivery)
        return delivery

    def add_manifest_code(self, manifest: Mapping[str, Any]) -> str:
        """What github.com does when the operator confirms an App manifest: a one-time code.

        Refuses what GitHub refuses: a manifest without ``url`` or ``hook_attributes.url``.
        """
        hook = manifest.get("hook_attributes")
        if not manifest.get("url") or not isinstance(hook, dict) or not hook.get("url"):
            raise ValueError("a manifest needs url and hook_attributes.url")
        for name, level in dict(manifest.get("default_permissions") or {}).items():
            if level not in ("read", "write", "admin"):
                raise ValueError(f"permission {name}: {level!r} is not read, write or admin")
        code = secrets.token_hex(10)
        self.manifest_codes[code] = json.loads(json.dumps(manifest))
        return code

    def issue_token(self, installation_id: int, repository_ids: Sequence[int] | None = None) -> str:
        """An installation token, without the HTTP round-trip (for raw-httpx tests)."""
        installation = self.installations[installation_id]
        ids = None if repository_ids is None else frozenset(repository_ids)
        return self._issue_token(installation, dict(installation.permissions), ids).value

    def issue_actions_token(self, repo: Repo | str) -> str:
        """A workflow's ``GITHUB_TOKEN``: one repository, writing as github-actions[bot]."""
        found = self.repo(repo)
        installation = self.installations[found.installation_id]
        token = self._issue_token(
            installation, dict(ACTIONS_TOKEN_PERMISSIONS), frozenset({found.id})
        )
        token.author = (ACTIONS_BOT_LOGIN, ACTIONS_APP_ID)
        return token.value

    def _issue_token(
        self,
        installation: Installation,
        permissions: dict[str, str],
        repository_ids: frozenset[int] | None,
    ) -> Token:
        token = Token(
            value="ghs_" + secrets.token_urlsafe(27)[:36],
            installation_id=installation.id,
            expires_at=self.now() + TOKEN_LIFETIME,
            permissions=permissions,
            repository_ids=repository_ids,
        )
        self.tokens[token.value] = token
        return token
