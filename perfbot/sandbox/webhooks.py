"""The webhook deliveries GitHub would send for the fake's state, signed."""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Mapping, Sequence

from perfbot.sandbox.common import Json
from perfbot.sandbox.events import (
    check_run_event,
    check_suite_event,
    installation_event,
    installation_repositories_event,
    issue_comment_event,
    issues_event,
    workflow_run_event,
)
from perfbot.sandbox.knobs import FakeKnobs
from perfbot.sandbox.models import CheckRun, Comment, Issue, Run


class FakeWebhooks(FakeKnobs):
    def webhook_payload_workflow_run(self, run: Run, action: str = "completed") -> Json:
        """The ``workflow_run`` delivery GitHub would send to the App for ``run``."""
        return workflow_run_event(self, run, action)

    def webhook_payload_issue_comment(
        self, comment: Comment, action: str = "created", sender: str | None = None
    ) -> Json:
        """The ``issue_comment`` delivery for ``comment`` (with ``issue.pull_request`` on PRs)."""
        return issue_comment_event(self, comment, action, sender or comment.user)

    def webhook_payload_check_run(
        self,
        check_run: CheckRun,
        action: str = "rerequested",
        sender: str = "alice",
        requested_action: str | None = None,
    ) -> Json:
        """The ``check_run`` delivery (``rerequested`` when someone clicks "Re-run")."""
        return check_run_event(self, check_run, action, sender, requested_action)

    def webhook_payload_issues(
        self,
        issue: Issue,
        action: str = "opened",
        sender: str | None = None,
        *,
        label: str | None = None,
        changes: Mapping[str, str] | None = None,
    ) -> Json:
        """The ``issues`` delivery for ``issue`` (``opened``, ``edited``, ``closed``,
        ``reopened``, ``labeled``…): ``label`` names the label of ``labeled``/``unlabeled``,
        ``changes`` the previous ``title``/``body`` of ``edited``."""
        return issues_event(self, issue, action, sender or issue.user, label, changes)

    def webhook_payload_check_suite(
        self, check_run: CheckRun, action: str = "rerequested", sender: str = "alice"
    ) -> Json:
        """The ``check_suite`` delivery of ``check_run``'s suite ("Re-run all checks")."""
        return check_suite_event(self, check_run, action, sender)

    def webhook_payload_installation(
        self,
        installation_id: int,
        action: str,
        repositories: Sequence[tuple[str, int]] = (),
        sender: str = "alice",
    ) -> Json:
        """The ``installation`` delivery (``created``, ``deleted``, ``suspend``,
        ``unsuspend``…), naming ``repositories`` ((full name, id) pairs) where GitHub does:
        on ``created`` and ``deleted``."""
        return installation_event(self, installation_id, action, repositories, sender)

    def webhook_payload_installation_repositories(
        self,
        installation_id: int,
        action: str,
        added: Sequence[tuple[str, int]] = (),
        removed: Sequence[tuple[str, int]] = (),
        sender: str = "alice",
    ) -> Json:
        """The ``installation_repositories`` delivery: repositories ((full name, id)
        pairs) ``added`` to or ``removed`` from the installation."""
        return installation_repositories_event(
            self, installation_id, action, added, removed, sender
        )

    def webhook_headers(
        self, event: str, body: bytes, secret: str, delivery: str | None = None
    ) -> dict[str, str]:
        """The headers of a signed delivery of ``body``, as GitHub sends them to the App."""
        sha256 = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        sha1 = hmac.new(secret.encode(), body, hashlib.sha1).hexdigest()
        return {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/fake",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-GitHub-Hook-ID": str(self.stable_id("hook")),
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": str(self.app_id),
            "X-Hub-Signature-256": f"sha256={sha256}",
            "X-Hub-Signature": f"sha1={sha1}",
        }
