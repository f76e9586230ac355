"""The watch's issue as GitHub shows it: its title, its body rendered by cmark-gfm, and the
comments that close it; every name hostile, and a burst of changes within the size limit."""

from __future__ import annotations

import random
import re

import pytest

from perfbot.engine.judge.changes import BranchSeries, ChangePoint, MeasuredCommit, detect
from perfbot.engine.show.watch import (
    ISSUE_BODY_LIMIT,
    IssueFacts,
    PullRef,
    WatchedChange,
    accepted_comment,
    issue_body,
    issue_title,
    marker,
    returned_comment,
)
from perfbot.model import Better
from tests.test_markdown_render import rendered
from tests.test_mermaid import hostile_strings

REPO = "acme/widget"
SERVER = "https://github.com"


def stepped(
    metric: str = "udp_500M.receiver_mbps",
    platform: str = "qemu_x86",
    unit: str = "Mbps",
    *,
    seed: int = 3,
    drop: float = 0.06,
) -> WatchedChange:
    """A series of 40 commits with a step down of ``drop`` at commit 25, and its change."""
    rng = random.Random(seed)
    commits = tuple(
        MeasuredCommit(
            f"{i:02x}{seed:02x}" + "c" * 36,
            ((1 - drop * (i >= 25)) * 100 * (1 + rng.gauss(0, 0.01)),),
        )
        for i in range(40)
    )
    series = BranchSeries(platform, metric, unit, Better.HIGHER, commits)
    (change,) = detect(series)
    points = tuple(
        (c.sha[:7], c.samples[0], change.before.value if i < change.index else change.after.value)
        for i, c in enumerate(commits)
    )
    return WatchedChange(change, points)


def facts(
    change: ChangePoint, *, between: tuple[str, ...] = (), pulls: tuple[PullRef, ...] = ()
) -> IssueFacts:
    return IssueFacts(REPO, "main", change.sha, change.previous_sha, between, pulls)


def links(body: str) -> list[str]:
    return [a.attrs.get("href", "") for a in rendered(body).find("a")]


def visible_text(body: str) -> str:
    """What GitHub scans for mentions and references: the rendered text outside code blocks."""
    root = rendered(body)

    def walk(node: object) -> str:
        if isinstance(node, str):
            return node
        tag = getattr(node, "tag", "")
        if tag == "pre":
            return " "
        return "".join(walk(child) for child in getattr(node, "children", []))

    return walk(root)


def test_one_change_is_named_by_metric_platform_change_and_commit() -> None:
    watched = stepped()
    change = watched.change
    assert change.index == 25
    title = issue_title([change], change.sha)
    assert title == f"perfbot: `udp_500M.receiver_mbps` on `qemu_x86` {title.split('` ')[2]}"
    assert re.search(rf"−6\.\d+ % since `{change.sha[:7]}`$", title)
    body = issue_body([watched], facts(change))
    assert body.startswith(marker(change.sha) + "\n")
    assert f"Suspect commit**: [<code>{change.sha[:7]}</code>]" in body
    assert links(body) == [f"{SERVER}/{REPO}/commit/{change.sha}"]
    assert "🔴" in body
    assert "25 commits" in body  # the level before was measured by 25 commits
    assert body.count("```mermaid") == 1


def test_an_unmeasured_range_links_githubs_comparison_and_the_prs_that_merged_it() -> None:
    watched = stepped()
    change = watched.change
    between = (change.previous_sha, "d" * 40, "e" * 40, change.sha)
    pulls = (PullRef(41, "Faster rx"), PullRef(42, "Bigger buffers"))
    body = issue_body([watched], facts(change, between=between, pulls=pulls))
    compare = f"{SERVER}/{REPO}/compare/{change.previous_sha}...{change.sha}"
    assert links(body) == [compare, f"{SERVER}/{REPO}/pull/41", f"{SERVER}/{REPO}/pull/42"]
    assert "3 commits after" in body
    assert "Otherwise look at the commits of the range" in body


def test_changes_at_one_commit_are_one_issue_within_githubs_limit() -> None:
    burst = [stepped(f"metric_{n:03d}.receiver_mbps", seed=n % 7 + 1) for n in range(500)]
    shas = {w.change.sha[:2] for w in burst}
    assert len(shas) == 1  # commit 25 of every series
    body = issue_body(burst, facts(burst[0].change))
    assert len(body.encode("utf-8")) <= ISSUE_BODY_LIMIT
    assert "| … and " in body
    title = issue_title([w.change for w in burst], burst[0].change.sha)
    assert title.startswith("perfbot: 500 metrics changed since ")
    assert "500 regressions" in title


@pytest.mark.parametrize("name", hostile_strings()[:40])
def test_hostile_names_stay_inert_in_the_title_and_the_body(name: str) -> None:
    watched = stepped(name, name, name[:10])
    change = watched.change
    title = issue_title([change], change.sha)
    assert "\n" not in title
    assert len(title) < 200
    # Only perfbot's own backticks: around the metric, the platform and the commit.
    assert title.count("`") == 6
    assert not re.search(r"@[A-Za-z0-9]", title)
    assert not re.search(r"#[0-9]", title)
    pulls = (PullRef(7, name),)
    body = issue_body([watched], facts(change, pulls=pulls))
    assert set(links(body)) <= {f"{SERVER}/{REPO}/commit/{change.sha}", f"{SERVER}/{REPO}/pull/7"}
    shown = visible_text(body)
    assert not re.search(r"@[A-Za-z0-9]", shown)
    assert not re.search(r"(?<![A-Za-z])#[0-9]", shown)
    comments = [n.attrs["data"] for n in rendered(body).find("#comment")]
    assert comments == [marker(change.sha).removeprefix("<!--").removesuffix("-->")]


def test_the_closing_comments_say_why() -> None:
    change = stepped().change
    back = returned_comment(change, "f" * 40)
    assert "back where it was" in back
    assert "<code>fffffff</code>" in back
    accepted = accepted_comment("writer", "larger buffers @team", 1)
    assert accepted.startswith("Accepted by <code>writer</code>: larger buffers &#64;")
    assert "new level as the baseline" in accepted
    assert "new levels of 3 metrics" in accepted_comment("writer", "", 3)
