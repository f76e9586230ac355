"""The exception tree of perfbot: every exception it defines descends from PerfbotError.

    PerfbotError                              perfbot.errors
    ├── ReportError (ValueError)              perfbot.errors
    │   ├── ParseError                        perfbot.errors
    │   └── UnknownFormat                     perfbot.errors
    ├── GitHubError                           perfbot.github.errors
    │   ├── GitHubUnavailable                 perfbot.github.errors             retryable
    │   ├── RateLimited                       perfbot.github.errors             retryable
    │   ├── AuthFailed                        perfbot.github.errors             retryable
    │   ├── WaitForTurn                       perfbot.github.errors             retryable
    │   └── ArtifactGone                      perfbot.github.errors
    ├── WireError                             perfbot.github.wire               retryable
    ├── DatabaseUnavailable (RuntimeError)    perfbot.store.postgres            retryable
    ├── SchemaTooNew (RuntimeError)           perfbot.store._migrations
    ├── Lost                                  perfbot.support.keepalive
    ├── PullLocked                            perfbot.app.pulllock              retryable
    ├── Paced                                 perfbot.app.watch_issues          retryable
    ├── BadPayload (ValueError)               perfbot.app.jobs
    │   ├── UnknownJob                        perfbot.app.jobs
    │   └── JobTooNew                         perfbot.app.jobs
    ├── ArtifactError                         perfbot.app.artifacts
    ├── ReplayError                           perfbot.app.replay
    ├── SettingsError                         perfbot.app.settings
    ├── UnsafeYaml (ValueError)               perfbot.app.safeyaml
    ├── WebhookError                          perfbot.app.triage
    │   ├── SignatureMismatch                 perfbot.app.triage
    │   ├── PayloadTooLarge                   perfbot.app.triage
    │   ├── BodyTimeout                       perfbot.app.triage
    │   └── Busy                              perfbot.app.triage
    ├── SetupError                            perfbot.github.setup
    ├── ManifestError (ValueError)            perfbot.github.manifest
    ├── FixturesMissing                       perfbot.sandbox.fixtures
    ├── HttpError                             perfbot.sandbox.plumbing
    ├── RenderUnavailable                     perfbot.sandbox.markdown
    ├── SceneError                            perfbot.cli.try_scene
    └── UsageError                            perfbot.cli.usage

What each means:

- ReportError: a report file could not be used; ParseError: it is in a known format but
  broken (path, format, reason); UnknownFormat: no parser recognised it (path).
- GitHubError: a GitHub call failed (``status``: GitHub's answer, if any). Unavailable is
  a 5xx, a timeout or a lost connection; RateLimited carries ``retry_after``; AuthFailed
  is a 401 (retried so deliveries outlive a credentials fix); ArtifactGone a 404/410.
  WaitForTurn: perfbot's own write pace holds the job back (``retry_after``); like Paced,
  the job goes back to the queue without spending an attempt.
- WireError: a connection to GitHub or its storage failed, or an answer broke HTTP; the
  GitHub calls map it to GitHubUnavailable, and it names no URL.
- DatabaseUnavailable: PostgreSQL could not be reached or logged into. SchemaTooNew: the
  database was migrated by a newer perfbot.
- Lost: a lease or lock expired while its block ran (``perfbot.support.keepalive``).
  PullLocked: another job holds a pull request's lock, or this one lost it. Paced: a watch
  issue waits for its repository's minute (``retry_after``).
- BadPayload: a queued job this perfbot cannot run (malformed, an unknown kind, or queued
  by a newer perfbot).
- ArtifactError: an artifact is not a usable zip. UnsafeYaml: a configuration file whose
  YAML is too costly to build (an alias bomb) or refers to itself. SettingsError, SetupError,
  ManifestError, UsageError: the operator's settings, ``perfbot setup``'s inputs, an App
  manifest, a command line. WebhookError: a delivery refused (``status``: the HTTP
  answer; Busy is the 503 of a full body budget, not a job's).
- FixturesMissing: the fake GitHub (``perfbot try``, the tests) cannot find the recorded
  payloads it answers from. HttpError: the fake's answer with an error status, raised by
  its route handlers and never seen outside it. RenderUnavailable: what draws a comment
  as GitHub does (cmark-gfm, GitHub's CSS, mermaid) is not installed. SceneError: a step
  of ``perfbot try`` did not end as perfbot should end it. ReplayError: ``perfbot replay``
  cannot replay the delivery it was given (a bad file, an unknown id).

``retryable`` (a class attribute, False unless marked above) means exactly "the same job,
run again later, may succeed": the worker retries a job that raised such an error (with
backoff, up to ``perfbot.support.retry.MAX_ATTEMPTS``) and ends any other perfbot error's
job FAILED at once, with its message as the reason. An exception that is not perfbot's
own (a bug, an OSError) is retried too, as an internal error.

Messages are sentences that name the input and, where there is one, the next step.
They never carry a token, a signed URL or a stack trace. This module imports nothing:
every layer may raise these.
"""

from __future__ import annotations


class PerfbotError(Exception):
    """Root of every error perfbot raises on purpose."""

    # Whether the job that raised it should be run again later (see the module's text).
    retryable: bool = False


class ReportError(PerfbotError, ValueError):
    """A report file could not be turned into measurements."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class ParseError(ReportError):
    """The file looked like ``format`` but could not be read as such."""

    def __init__(self, path: str, format: str, reason: str) -> None:
        self.format = format
        super().__init__(path, f"could not read as {format}: {reason}")


class UnknownFormat(ReportError):
    """No registered format recognised the file's content."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "not a supported report format (run `perfbot formats` to list them)")
