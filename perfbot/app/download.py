"""A run's report artifact: which one to read, and its download within the limits.

Shared by the PR path (``handlers/workflow_run``) and the push path (``handlers/push``):
both read untrusted zips, and both must refuse the same things the same way.
"""

from __future__ import annotations

import asyncio
from typing import Final

from perfbot.app.artifacts import (
    ArtifactContents,
    ArtifactError,
    ArtifactLimits,
    read_report_zip,
    zip_sha256,
)
from perfbot.github.calls import GitHubCalls
from perfbot.github.errors import ArtifactGone
from perfbot.github.types import ArtifactInfo

# Every report artifact is read within these limits (size, ratio, members, paths).
LIMITS: Final = ArtifactLimits()
# Up to this size a zip is read on the event loop: a thread costs more than the work.
# (16 KiB unzip to 3.2 MB at most, the ratio limit.)
INLINE_ZIP_BYTES: Final = 16 * 1024


def newest_artifact(artifacts: list[ArtifactInfo], name: str, run_id: int) -> ArtifactInfo | None:
    """The newest unexpired artifact called ``name`` that this run uploaded."""
    mine = [a for a in artifacts if a.name == name and not a.expired and a.run_id in (None, run_id)]
    return max(mine, key=lambda a: (a.created_at, a.id), default=None)


async def download_report(
    installation: GitHubCalls,
    owner: str,
    repo: str,
    artifact: ArtifactInfo,
    limits: ArtifactLimits,
) -> ArtifactContents:
    """The report's files within ``limits`` (size, digest, zip bombs, paths); raises
    ArtifactError with the reason (GitHub's own errors pass through)."""
    if artifact.size_in_bytes > limits.max_zip_bytes:
        raise ArtifactError(
            artifact.name,
            f"{artifact.size_in_bytes:,} bytes is over the {limits.max_zip_bytes:,}-byte limit",
        )
    data = await installation.download_artifact(
        owner, repo, artifact.id, max_bytes=limits.max_zip_bytes
    )
    digest = artifact.digest
    if digest and digest.startswith("sha256:") and zip_sha256(data) != digest:
        raise ArtifactError(artifact.name, "the download does not match the artifact's digest")
    # Decompressing up to the limits is CPU work too: in a thread, like the parsing, unless
    # the zip is small.
    if len(data) <= INLINE_ZIP_BYTES:
        return read_report_zip(data, artifact.name, limits)
    return await asyncio.to_thread(read_report_zip, data, artifact.name, limits)


async def read_report_or_error(
    installation: GitHubCalls, owner: str, repo: str, artifact: ArtifactInfo
) -> ArtifactContents | ArtifactError | ArtifactGone:
    """The report's files, or why they could not be read (shown in the comment); other
    errors (GitHub unavailable, say) are raised for the job to be retried."""
    try:
        return await download_report(installation, owner, repo, artifact, LIMITS)
    except (ArtifactError, ArtifactGone) as exc:
        return exc
