"""The typed errors every GitHub call maps its failures to (``retryable`` says: try later)."""

from __future__ import annotations

from perfbot.errors import PerfbotError


class GitHubError(PerfbotError):
    """A GitHub call failed; ``retryable`` (False here) says whether the job should be tried
    again."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GitHubUnavailable(GitHubError):
    """5xx, a timeout or a connection error: try again later."""

    retryable = True


class RateLimited(GitHubError):
    """A primary or secondary rate limit: try again after ``retry_after`` seconds; ``reset``,
    when GitHub named its window's reset instead of a ``Retry-After`` (a primary limit), is
    that moment (seconds since the epoch), for a pace kept on its own clock."""

    retryable = True

    def __init__(self, message: str, retry_after: float, reset: float | None = None) -> None:
        super().__init__(message, 403)
        self.retry_after = retry_after
        self.reset = reset


class WaitForTurn(GitHubError):
    """perfbot's own pace holds the job back (the installation's rate limit is spent until
    its reset): it waits in the queue for ``retry_after`` seconds, and that wait is not a
    failed attempt."""

    retryable = True

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message, None)
        self.retry_after = retry_after


class AuthFailed(GitHubError):
    """401: a wrong key, a revoked installation or a skewed clock. Retried (with backoff)
    so that deliveries survive until the operator fixes the credentials."""

    retryable = True


class ArtifactGone(GitHubError):
    """The artifact expired or was deleted (404/410)."""
