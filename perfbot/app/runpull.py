"""The pull request a completed run measured: GitHub's own hint or the run's PR-number
artifact, then the proof against GitHub (``perfbot.app.pullproof``), then the mute label.

Shared by the App's handler and ``perfbot comment``: both prove a PR the same way before
a byte is posted, and a forged number costs nothing but the log line.
"""

from __future__ import annotations

import logging

from perfbot.app.artifacts import ArtifactError, read_pr_number_zip
from perfbot.app.download import newest_artifact
from perfbot.app.jobs import Run
from perfbot.app.pullproof import prove_pull
from perfbot.app.repoconfig import RepoConfig
from perfbot.github.calls import GitHubCalls
from perfbot.github.errors import ArtifactGone, GitHubError
from perfbot.github.types import ArtifactInfo, PullInfo

# The PR-number artifact holds a few bytes; a bigger one is no such artifact.
MAX_PR_NUMBER_BYTES = 64 * 1024


async def proven_pull(
    github: GitHubCalls,
    run: Run,
    artifacts: list[ArtifactInfo],
    config: RepoConfig,
    log: logging.LoggerAdapter[logging.Logger],
) -> PullInfo | str:
    """The run's PR once proven, or why none is (not proven, or muted by its label): that
    reason is logged already."""
    if len(run.hinted_pulls) == 1:
        # GitHub itself names exactly one PR of this repository: no need to download the
        # run's (untrusted) PR-number artifact; the proof checks the PR either way.
        hint: int | None = run.hinted_pulls[0]
    else:
        artifact = newest_artifact(artifacts, config.pr_number_artifact, run.id)
        hint = await _pull_hint(github, run, artifact, log)
    proof = await prove_pull(github, run.owner, run.name, run.identity, hint)
    log.info("%s", proof.reason)
    pull = proof.pull
    if pull is None:
        return proof.reason
    if config.mutes(pull.labels):
        muted = f"ignored: PR {pull.number} carries the mute label"
        log.info("%s", muted)
        return muted
    return pull


async def _pull_hint(
    github: GitHubCalls,
    run: Run,
    artifact: ArtifactInfo | None,
    log: logging.LoggerAdapter[logging.Logger],
) -> int | None:
    """The PR number the run wrote, or None; any problem only costs the hint."""
    fallback = run.hinted_pulls[0] if run.hinted_pulls else None
    if artifact is None:
        return fallback
    try:
        data = await github.download_artifact(
            run.owner, run.name, artifact.id, max_bytes=MAX_PR_NUMBER_BYTES
        )
        return read_pr_number_zip(data, artifact.name)
    except (ArtifactError, ArtifactGone) as exc:
        log.info("PR-number artifact ignored: %s", exc)
    except GitHubError as exc:
        if exc.retryable:
            raise
        log.info("PR-number artifact ignored: %s", exc)
    return fallback
