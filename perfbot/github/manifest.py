"""The GitHub App manifest of a perfbot deployment: the least it needs, and nothing more.

GitHub's manifest flow (``perfbot setup``) registers an App from this dictionary: the
operator confirms it on GitHub, GitHub hands back the App's id, key and webhook secret.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final
from urllib.parse import urlsplit

from perfbot.errors import PerfbotError

# Repository permissions, each with the reason perfbot needs it (github-platform.md §F).
PERMISSIONS: Final = MappingProxyType(
    {
        # List and download a run's artifacts, read runs, receive `workflow_run`; write only
        # to re-run a measurement (`/perfbot rerun`, the check run's Re-run button).
        "actions": "write",
        # Create and update the `perfbot` check run; receive its `rerequested` events.
        "checks": "write",
        # Read `.github/perfbot.yml` from the default branch (and from `<org>/.github`).
        "contents": "read",
        # Write its comment on the PR and the 👀 🚀 😕 reactions (PR comments are issue
        # comments; Issues write grants no power over the code or the PR's reviews).
        "issues": "write",
        # Mandatory for any repository access; covers the collaborator-permission API.
        "metadata": "read",
        # Prove which PR a run measured: get a PR, list the PRs of a commit.
        "pull_requests": "read",
    }
)

# Events perfbot acts on. `installation` and `installation_repositories` are delivered to
# every App without asking (and cannot be listed here).
EVENTS: Final = (
    "check_run",  # the check run's Re-run button (action rerequested)
    "check_suite",  # the check suite's Re-run button (action rerequested)
    "issue_comment",  # `/perfbot rerun` and `/perfbot help` on a PR, `/perfbot accept` on an issue
    "workflow_run",  # a measurement run started or completed
)

DEFAULT_NAME: Final = "perfbot"
MAX_NAME_LENGTH: Final = 34  # GitHub refuses longer App names
DESCRIPTION: Final = (
    "Network-performance comparisons on pull requests: one comment per PR, base against head."
)


class ManifestError(PerfbotError, ValueError):
    """A manifest input that GitHub would refuse; the message says which and why."""


def base_url(url: str, what: str) -> str:
    """``url`` without its trailing slash, when it is an absolute http(s) URL with a host."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ManifestError(f"{what} must be an http(s) URL with a host, got {url[:80]!r}")
    if parts.query or parts.fragment:
        raise ManifestError(f"{what} must not have a query or a fragment, got {url[:80]!r}")
    return url.strip().rstrip("/")


def build_manifest(public_url: str, redirect_url: str, name: str = DEFAULT_NAME) -> dict[str, Any]:
    """The manifest for a perfbot reachable at ``public_url`` (webhooks go to ``/webhook``).

    ``redirect_url`` is where GitHub sends the browser back with the one-time code.
    """
    public = base_url(public_url, "the public URL")
    name = name.strip()
    if not name or len(name) > MAX_NAME_LENGTH:
        raise ManifestError(f"the App's name must be 1 to {MAX_NAME_LENGTH} characters")
    return {
        "name": name,
        "url": public,
        "description": DESCRIPTION,
        "hook_attributes": {"url": f"{public}/webhook", "active": True},
        "redirect_url": base_url(redirect_url, "the redirect URL"),
        "public": False,
        "default_permissions": dict(PERMISSIONS),
        "default_events": list(EVENTS),
        "request_oauth_on_install": False,
        "setup_on_update": False,
    }
