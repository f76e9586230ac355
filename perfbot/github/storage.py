"""An artifact's bytes from GitHub's storage host, where the API's 302 points: fetched with no
credential, no redirect and no cookie, and bounded in size."""

from __future__ import annotations

import aiohttp
import httpx

from perfbot.github.errors import ArtifactGone, GitHubError, GitHubUnavailable
from perfbot.github.transport import CALL_TIMEOUT, USER_AGENT


async def fetch_blob(storage: httpx.AsyncBaseTransport, location: str, max_bytes: int) -> bytes:
    """The blob at ``location``, refusing more than ``max_bytes``."""
    # Straight through the transport, not a client: no credential, no redirect, and
    # no cookie kept from one installation's download to the next.
    request = httpx.Request(
        "GET",
        location,
        headers={"user-agent": USER_AGENT},
        extensions={"timeout": CALL_TIMEOUT.as_dict()},
    )
    try:
        blob = await storage.handle_async_request(request)
        try:
            if blob.status_code >= 500:
                raise GitHubUnavailable("artifact storage answered 5xx", blob.status_code)
            if blob.status_code != 200:
                raise ArtifactGone(f"artifact storage answered {blob.status_code}")
            chunks, size = [], 0
            async for chunk in blob.aiter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise GitHubError(f"artifact larger than {max_bytes} bytes")
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            await blob.aclose()
    except (httpx.HTTPError, aiohttp.ClientError, TimeoutError) as exc:
        # An error's message may carry the signed URL: name only the kind. (aiohttp's
        # errors outside httpx-aiohttp's mapping arrive unmapped.)
        raise GitHubUnavailable(f"artifact download failed ({type(exc).__name__})") from None
