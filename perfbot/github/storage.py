"""An artifact's bytes from GitHub's storage host, where the API's 302 points: fetched with no
credential, no redirect and no cookie, and bounded in size."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
from multidict import CIMultiDict

from perfbot.github.errors import ArtifactGone, GitHubError, GitHubUnavailable
from perfbot.github.transport import USER_AGENT
from perfbot.github.wire import Call, Wire, WireError


async def fetch_blob(storage: Wire, location: str, max_bytes: int) -> bytes:
    """The blob at ``location``, refusing more than ``max_bytes``."""
    # Straight into the storage's wire, with the user agent as its only header: no
    # credential, no redirect, and no cookie kept from one installation's download to
    # the next.
    call = Call("GET", location, urlsplit(location).path, CIMultiDict({"User-Agent": USER_AGENT}))
    try:
        blob = await storage.send(call, limit=max_bytes)
    except (httpx.HTTPError, WireError, TimeoutError, ValueError) as exc:
        # An error's message may carry the signed URL: name only the kind.
        raise GitHubUnavailable(f"artifact download failed ({type(exc).__name__})") from None
    status = blob.status_code
    if status >= 500:
        raise GitHubUnavailable("artifact storage answered 5xx", status)
    if status != 200:
        raise ArtifactGone(f"artifact storage answered {status}")
    if not blob.whole:
        raise GitHubError(f"artifact larger than {max_bytes} bytes")
    return blob.content
