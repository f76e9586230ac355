"""GitHub Actions outputs of ``perfbot compare``: annotations and the job summary.

A workflow command is a line ``::notice title=T::message`` on the job's output. Its
message and properties come from reports, which a pull request controls, so they are
escaped as the runner unescapes them (actions/toolkit ``command.ts``): in the message
``%`` → ``%25``, CR → ``%0D``, LF → ``%0A``; in a property also ``:`` → ``%3A`` and ``,``
→ ``%2C``. Nothing from a report can end the line and start a command of its own
(``::add-mask::``, ``::stop-commands::``), nor end a property early. Control characters
are dropped before that, so the log stays one clean line per annotation.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from perfbot.engine.judge.compare import MOVED, Comparison, MetricResult, Verdict
from perfbot.engine.show.escape import clean
from perfbot.engine.show.explain import beyond_tolerance
from perfbot.engine.show.terminal import change_text

TITLE = "perfbot"
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
MAX_MOVES_SHOWN = 10


def escape_data(value: str) -> str:
    """A workflow command's message, escaped as the runner expects."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """A workflow command's property value (``title=``), escaped as the runner expects."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, title: str) -> str:
    """One ``::kind title=…::message`` line, every part from a report escaped."""
    return (
        f"::{kind} title={escape_property(clean(title, 200))}::{escape_data(clean(message, 900))}"
    )


def annotation_lines(comparison: Comparison) -> list[str]:
    """One notice per platform that moved, one warning per regression beyond tolerance."""
    lines = []
    for platform in comparison.platforms:
        # A report-only metric's move is kept for the record, not announced.
        moved = [m for m in platform.metrics if m.verdict in MOVED and m.counts]
        if not moved:
            continue
        shown = ", ".join(_move(metric) for metric in moved[:MAX_MOVES_SHOWN])
        more = len(moved) - MAX_MOVES_SHOWN
        if more > 0:
            shown += f" and {more} more"
        # The platform is in the message too: the log shows only the message.
        lines.append(command("notice", f"{platform.name}: {shown}", f"{TITLE} ({platform.name})"))
        for metric in moved:
            if metric.verdict is Verdict.REGRESSED and metric.beyond_tolerance:
                _, _, tolerance, _ = comparison.policy.resolve(metric.name, metric.scale)
                message = (
                    f"{platform.name}: {metric.name} regressed {change_text(metric)} "
                    f"({beyond_tolerance(tolerance, metric.scale)})"
                )
                lines.append(command("warning", message, f"{TITLE} regression ({platform.name})"))
    return lines


def unavailable(reason: str) -> str:
    """The one notice of a comparison that could not be made."""
    return command("notice", f"comparison not available: {reason}", TITLE)


def _move(metric: MetricResult) -> str:
    return f"{metric.name} {change_text(metric)}"


def append_job_summary(markdown: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """Append ``markdown`` to the job summary; returns why not, or None when written."""
    path = environ.get(STEP_SUMMARY, "")
    if not path:
        return f"${STEP_SUMMARY} is not set (not in GitHub Actions): no job summary written"
    try:
        # The runner's own file (outside the workspace): appended, as each step does.
        with open(path, "a", encoding="utf-8") as summary:
            summary.write(markdown if markdown.endswith("\n") else markdown + "\n")
    except OSError as exc:
        return f"the job summary ${STEP_SUMMARY} cannot be written ({exc.strerror or exc})"
    return None
