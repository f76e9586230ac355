"""A stateful fake of the parts of GitHub that perfbot talks to.

Two ASGI apps: the REST API (``fake.api_app``) and the blob storage that artifact downloads
redirect to (``fake.storage_app``). They are separate origins on purpose, as on github.com: a
client that carried its token across the redirect is caught by the storage's request log.

Tests build state with the ``add_*`` helpers, point perfbot at ``fake.transport()`` (in-process)
or at ``serve(fake)`` (real loopback sockets), then assert on the state (``comments_on``,
``bot_comments``, ``check_runs``, ``reruns``…) and on the request log (``fake.requests``).

Every response body starts from a real GitHub payload under ``../shared/fixtures`` (octokit's
webhook examples and PyGithub's recorded REST responses), deep-copied with ids, urls and fields
overwritten. The fake serves the API version a request names (``X-GitHub-Api-Version``;
2022-11-28 without one, as GitHub does) in that version's shape: 2026-03-10 answers lack the
fields that version removed. Every answer matches GitHub's own OpenAPI description of its
version, and every webhook payload GitHub's webhook description: tests/conformance.py checks
each exchange of every test, tests/test_conformance.py the payloads (where GitHub's examples
and its description disagree, the fake follows the description: tests/CONFORMANCE.md).
Routes the fake does not know answer 501 and are listed in ``fake.unknown_routes``, so a new
call in perfbot shows up instead of passing by accident.
"""

from __future__ import annotations

from perfbot.sandbox.common import (
    ACTIONS_APP_ID,
    ACTIONS_BOT_LOGIN,
    ACTIONS_TOKEN_PERMISSIONS,
    CHAOS_KINDS,
    COMMENT_BODY_LIMIT,
    DEFAULT_API_URL,
    DEFAULT_API_VERSION,
    DEFAULT_PERMISSIONS,
    DEFAULT_STORAGE_URL,
    LATEST_API_VERSION,
    SUPPORTED_API_VERSIONS,
    ChaosKind,
    Json,
)
from perfbot.sandbox.models import (
    Artifact,
    CheckRun,
    Comment,
    Commit,
    Delivery,
    Hold,
    Installation,
    Issue,
    KeyPair,
    Pull,
    Reaction,
    RecordedRequest,
    Repo,
    Run,
    StorageRequest,
    Token,
    observing,
    rsa_keypair,
)
from perfbot.sandbox.server import FakeTransport, app_client, serve
from perfbot.sandbox.serving import FakeServing

__all__ = [
    "ACTIONS_APP_ID",
    "ACTIONS_BOT_LOGIN",
    "ACTIONS_TOKEN_PERMISSIONS",
    "CHAOS_KINDS",
    "COMMENT_BODY_LIMIT",
    "DEFAULT_API_URL",
    "DEFAULT_API_VERSION",
    "DEFAULT_PERMISSIONS",
    "DEFAULT_STORAGE_URL",
    "LATEST_API_VERSION",
    "SUPPORTED_API_VERSIONS",
    "Artifact",
    "ChaosKind",
    "CheckRun",
    "Comment",
    "Commit",
    "Delivery",
    "FakeGitHub",
    "FakeTransport",
    "Hold",
    "Installation",
    "Issue",
    "Json",
    "KeyPair",
    "Pull",
    "Reaction",
    "RecordedRequest",
    "Repo",
    "Run",
    "StorageRequest",
    "Token",
    "app_client",
    "observing",
    "rsa_keypair",
    "serve",
]


class FakeGitHub(FakeServing):
    """GitHub's state for one test, and the two ASGI apps that serve it.

    Its parts, each a module of its own: the state and clock (``core``), the ``add_*``
    helpers (``building``), the failure knobs (``knobs``), the webhook deliveries
    (``webhooks``) and the serving of both apps (``serving``).
    """
