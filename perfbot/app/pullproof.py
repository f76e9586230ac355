"""Which pull request a workflow run measured, proven against GitHub, failing closed.

The PR-number artifact is written by the run itself, which for a fork PR is code the
PR's author controls: it is a hint. A PR is accepted only when GitHub says it is open,
its head is the run's head commit from the run's head repository, and its base is this
repository. Without a usable hint, the PR is derived from the run's head commit, and
exactly one matching open PR must exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from perfbot.github.types import PullInfo


@dataclass(frozen=True, slots=True)
class RunIdentity:
    """The facts GitHub set about a run (never taken from an artifact)."""

    repo_id: int
    head_sha: str
    head_repo_id: int | None


class PullSource(Protocol):
    async def get_pull(self, owner: str, repo: str, number: int) -> PullInfo | None: ...

    async def pulls_for_commit(self, owner: str, repo: str, sha: str) -> list[PullInfo]: ...


@dataclass(frozen=True, slots=True)
class Proof:
    """The outcome: the proven PR, or None and the reason for the log."""

    pull: PullInfo | None
    reason: str


def mismatch(pull: PullInfo, run: RunIdentity) -> str | None:
    """Why ``pull`` is not the PR ``run`` measured, or None when it is."""
    if pull.state != "open":
        return f"PR {pull.number} is {pull.state}"
    if pull.head_sha != run.head_sha:
        return (
            f"PR {pull.number} head is {pull.head_sha[:12]}, the run measured {run.head_sha[:12]}"
        )
    if run.head_repo_id is None or pull.head_repo_id != run.head_repo_id:
        return f"PR {pull.number} comes from another head repository"
    if pull.base_repo_id != run.repo_id:
        return f"PR {pull.number} targets another repository"
    return None


async def prove_pull(
    source: PullSource, owner: str, repo: str, run: RunIdentity, hint: int | None
) -> Proof:
    """The PR the run belongs to, checked as the module docstring says."""
    hint_reason = "no PR-number hint"
    if hint is not None:
        pull = await source.get_pull(owner, repo, hint)
        if pull is None:
            hint_reason = f"hinted PR {hint} does not exist"
        else:
            reason = mismatch(pull, run)
            if reason is None:
                return Proof(pull, f"PR {hint} proven from the hint")
            hint_reason = f"hint rejected: {reason}"
    candidates = [
        pull
        for pull in await source.pulls_for_commit(owner, repo, run.head_sha)
        if mismatch(pull, run) is None
    ]
    if len(candidates) == 1:
        return Proof(
            candidates[0], f"PR {candidates[0].number} derived from the head commit ({hint_reason})"
        )
    found = "no open PR" if not candidates else f"{len(candidates)} open PRs"
    return Proof(None, f"{hint_reason}; {found} match the run's head commit: nothing posted")
