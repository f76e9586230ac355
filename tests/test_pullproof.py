"""Proving which PR a run measured: hints are checked, derivation needs exactly one match."""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfbot.app.pullproof import RunIdentity, prove_pull
from perfbot.github.types import PullInfo

RUN = RunIdentity(repo_id=100, head_sha="a" * 40, head_repo_id=200)
GOOD = PullInfo(
    number=7,
    state="open",
    head_sha="a" * 40,
    head_ref="feature",
    head_repo_id=200,
    base_repo_id=100,
    base_ref="main",
    base_sha="b" * 40,
    labels=(),
)


class Pulls:
    """A PR source holding PRs by number and by head commit, counting calls."""

    def __init__(self, *pulls: PullInfo) -> None:
        self.pulls = {p.number: p for p in pulls}
        self.calls = 0

    async def get_pull(self, owner: str, repo: str, number: int) -> PullInfo | None:
        self.calls += 1
        return self.pulls.get(number)

    async def pulls_for_commit(self, owner: str, repo: str, sha: str) -> list[PullInfo]:
        self.calls += 1
        return [p for p in self.pulls.values() if p.head_sha == sha]


async def test_a_correct_hint_costs_one_call() -> None:
    source = Pulls(GOOD)
    proof = await prove_pull(source, "o", "r", RUN, hint=7)
    assert proof.pull == GOOD
    assert source.calls == 1


@pytest.mark.parametrize(
    ("forged", "why"),
    [
        (replace(GOOD, number=8, head_sha="c" * 40), "head is"),
        (replace(GOOD, number=8, state="closed"), "is closed"),
        (replace(GOOD, number=8, head_repo_id=999), "another head repository"),
        (replace(GOOD, number=8, base_repo_id=999), "targets another repository"),
    ],
    ids=["other-head", "closed", "other-fork", "other-base"],
)
async def test_a_forged_hint_falls_back_to_the_commit(forged: PullInfo, why: str) -> None:
    # PR 8 exists but is not the run's; the run's real PR 7 is found from the commit.
    proof = await prove_pull(Pulls(GOOD, forged), "o", "r", RUN, hint=8)
    assert proof.pull == GOOD
    assert why in proof.reason


async def test_a_forged_hint_with_no_real_pr_posts_nothing() -> None:
    other = replace(GOOD, number=8, head_sha="c" * 40)
    proof = await prove_pull(Pulls(other), "o", "r", RUN, hint=8)
    assert proof.pull is None
    assert "nothing posted" in proof.reason


async def test_hint_for_a_missing_pr() -> None:
    proof = await prove_pull(Pulls(), "o", "r", RUN, hint=12345)
    assert proof.pull is None
    assert "does not exist" in proof.reason


async def test_two_open_prs_on_one_commit_fail_closed() -> None:
    twin = replace(GOOD, number=9)
    proof = await prove_pull(Pulls(GOOD, twin), "o", "r", RUN, hint=None)
    assert proof.pull is None
    assert "2 open PRs" in proof.reason


async def test_fork_run_without_hint_is_derived() -> None:
    proof = await prove_pull(Pulls(GOOD), "o", "r", RUN, hint=None)
    assert proof.pull == GOOD


async def test_run_without_head_repository_is_never_matched() -> None:
    run = replace(RUN, head_repo_id=None)
    proof = await prove_pull(Pulls(GOOD), "o", "r", run, hint=7)
    assert proof.pull is None
