"""What a repository can set in ``.github/perfbot.yml``: the validated values, and what they
mean for a write (``config_refusal``). Reading the file is ``perfbot.app.configfile``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal, Protocol

from perfbot.engine.judge.compare import MetricRule, Policy

PERMISSIONS = ("triage", "write", "maintain", "admin")
# When a PR gets perfbot's comment (``comment:``): every report, a report with something to
# say (``conclusion.worth_a_comment``), or never (the check run only).
CommentMode = Literal["always", "on-change", "never"]
COMMENT_MODES: tuple[CommentMode, ...] = ("always", "on-change", "never")


@dataclass(frozen=True, slots=True)
class WatchConfig:
    """The default branch's watch: the change points of its measured pushes, an issue each.

    ``enabled`` None: the operator's default (``PERFBOT_WATCH``, on unless turned off).
    ``metrics``: globs of the metrics watched. ``min_change``: the smallest change worth an
    issue, in the metric's units (percent, points for loss, counts for counters); None:
    2 % (the comparison's floor for points and counts), and any change of a deterministic
    metric. ``issues`` False: the change points are recorded, no issue is opened.
    """

    enabled: bool | None = None
    metrics: tuple[str, ...] = ("*",)
    min_change: float | None = None
    issues: bool = True

    def watched(self, metric: str) -> bool:
        """Whether ``metric`` is one of the watched metrics."""
        return any(fnmatchcase(metric, pattern) for pattern in self.metrics)

    def on(self, operator_default: bool) -> bool:
        """Whether the watch runs, given the operator's default for every installation."""
        return operator_default if self.enabled is None else self.enabled


@dataclass(frozen=True, slots=True)
class RepoConfig:
    """Everything a repository can set; the defaults apply when nobody set anything."""

    enabled: bool = True
    workflows: tuple[str, ...] = ()  # names or paths of measurement workflows; () = all
    report_artifact: str = "perf-report"
    pr_number_artifact: str = "pr-number"
    threshold: float = 1.0
    tolerance: float = 5.0
    metrics: tuple[MetricRule, ...] = ()
    rerun_permission: str = "write"
    # Who may accept a new level (`/perfbot accept` on a watch issue) or a PR's regression
    # (`/perfbot accept` on the PR).
    accept_permission: str = "write"
    comment: CommentMode = "always"
    mute_label: str = "perfbot: mute"
    check_run: bool = True
    fail_on_regression: bool = False
    # A stochastic metric's regression beyond tolerance is measured once more (perfbot
    # re-runs the measurement) before the comment calls it: see perfbot.engine.judge.confirm.
    confirm: bool = True
    # Platforms to report, by full name (qemu_x86/atom) or board (qemu_x86); () = all.
    platforms: tuple[str, ...] = ()
    watch: WatchConfig = WatchConfig()

    def policy(self) -> Policy:
        """The comparison policy these settings describe."""
        return Policy(threshold=self.threshold, tolerance=self.tolerance, rules=self.metrics)

    def writes_comment(self, *, exists: bool, worth: bool) -> bool:
        """Whether a report goes to the PR's comment: a comment that exists is kept up to
        date whatever ``comment:`` says (never left stale); a new one is written for every
        report (``always``), for one ``worth`` a comment (``on-change``), or never."""
        return exists or self.comment == "always" or (self.comment == "on-change" and worth)

    def mutes(self, labels: Iterable[str]) -> bool:
        """Whether a PR with ``labels`` is muted (GitHub compares labels without case)."""
        return self.mute_label.casefold() in {label.casefold() for label in labels}

    def matches_workflow(self, name: str, path: str) -> bool:
        """Whether a run of the workflow ``name`` at ``path`` is a measurement run."""
        if not self.workflows:
            return True
        file_name = path.rpartition("/")[2]
        return any(entry in (name, path, file_name) for entry in self.workflows if entry)


@dataclass(frozen=True, slots=True)
class ConfigResult:
    """The merged configuration, the one-line problems found, and whether the org excluded it."""

    repo_config: RepoConfig
    errors: tuple[str, ...] = ()
    excluded_by_org: bool = False


def config_refusal(
    result: ConfigResult, owner: str, name: str, pull: _Labelled | None = None
) -> str | None:
    """Why the repository's configuration keeps perfbot from writing to ``owner/name``
    (or to ``pull``, by its mute label) now, or None when it may."""
    if result.excluded_by_org:
        return f"{owner}/.github excludes {name}"
    if not result.repo_config.enabled:
        return f"perfbot is disabled for {owner}/{name} by its configuration"
    if pull is not None and result.repo_config.mutes(pull.labels):
        return f"PR {pull.number} carries the mute label"
    return None


class _Labelled(Protocol):
    """A pull request as the mute label sees it (``perfbot.github.types.PullInfo``)."""

    @property
    def number(self) -> int: ...
    @property
    def labels(self) -> tuple[str, ...]: ...
