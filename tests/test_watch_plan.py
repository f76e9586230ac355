"""The watch's decisions (``perfbot.engine.judge.watch.plan``): which issue to open, edit or
close for the series a push run touched, given what was reported and what was accepted."""

from __future__ import annotations

import random
from collections.abc import Sequence

from perfbot.engine.judge.changes import BranchSeries, ChangeId, MeasuredCommit
from perfbot.engine.judge.compare import Policy
from perfbot.engine.judge.watch import Closing, Reported, plan
from perfbot.model import Better, Scale

POLICY = Policy()


def sha(index: int) -> str:
    return f"{index:04x}" + "a" * 36


def series(
    levels: Sequence[float],
    *,
    metric: str = "udp.receiver_mbps",
    noise: float = 0.01,
    seed: int = 1,
    deterministic: bool | None = None,
) -> BranchSeries:
    rng = random.Random(seed)
    commits = tuple(
        MeasuredCommit(sha(i), (level * (1 + rng.gauss(0, noise)) if noise else level,))
        for i, level in enumerate(levels)
    )
    return BranchSeries(
        "qemu_x86", metric, "Mbps", Better.HIGHER, commits, Scale.RATIO, (), deterministic
    )


def step(at: int = 25, total: int = 40, drop: float = 0.06) -> list[float]:
    return [100.0 * (1 - drop * (i >= at)) for i in range(total)]


def identity(index: int, metric: str = "udp.receiver_mbps") -> ChangeId:
    return ChangeId("qemu_x86", metric, (), sha(index))


def test_a_step_opens_one_issue_at_its_first_commit() -> None:
    (only,) = plan([series(step())], [], policy=POLICY)
    assert only.issue is None
    assert only.sha == sha(25)
    ((change, reported),) = only.changes
    assert (change.metric, reported) == ("udp.receiver_mbps", None)
    assert round(change.change) == -6


def test_a_noisy_metric_without_a_step_opens_nothing() -> None:
    assert (
        plan([series([100.0] * 40, noise=0.04, seed=s) for s in range(5)], [], policy=POLICY) == []
    )


def test_fifty_metrics_changing_at_one_commit_are_one_issue() -> None:
    burst = [series(step(), metric=f"m{n:02d}", seed=n) for n in range(50)]
    (only,) = plan(burst, [], policy=POLICY)
    assert only.issue is None
    assert len(only.changes) == 50


def test_a_reported_change_keeps_its_issue_when_found_again_or_moved() -> None:
    standing = plan([series(step())], [Reported(identity(25), 12)], policy=POLICY)
    assert [(p.issue, p.changes[0][1]) for p in standing] == [(12, identity(25))]
    moved = plan([series(step())], [Reported(identity(23), 12)], policy=POLICY)
    assert [(p.issue, p.changes[0][1], p.changes[0][0].sha) for p in moved] == [
        (12, identity(23), sha(25))
    ]


def test_a_change_more_commits_call_noise_closes_its_issue() -> None:
    (gone,) = plan([series([100.0] * 40)], [Reported(identity(25), 12)], policy=POLICY)
    assert gone.closes
    assert [(e.closing, e.reported.issue) for e in gone.endings] == [(Closing.GONE, 12)]


def test_a_return_to_the_old_level_closes_the_issue_and_is_no_change_of_its_own() -> None:
    back = [100.0 * (1 - 0.06 * (25 <= i < 40)) for i in range(55)]
    (closed,) = plan([series(back)], [Reported(identity(25), 12)], policy=POLICY)
    assert closed.closes
    (ending,) = closed.endings
    assert ending.closing is Closing.RETURNED
    assert ending.returned_sha == sha(40)
    # Undone before anyone was told: nothing to open, not even for the way back.
    assert plan([series(back)], [], policy=POLICY) == []


def test_an_accepted_change_is_the_baseline_from_then_on() -> None:
    key = ("qemu_x86", "udp.receiver_mbps", ())
    assert plan([series(step())], [], policy=POLICY, accepted={key: sha(25)}) == []
    # A later step after the accepted one is a change again.
    twice = [100.0 * (1 - 0.06 * (i >= 25) - 0.06 * (i >= 50)) for i in range(70)]
    (again,) = plan([series(twice)], [], policy=POLICY, accepted={key: sha(25)})
    assert again.sha == sha(50)


def test_the_smallest_change_worth_an_issue() -> None:
    small = series(step(drop=0.015), noise=0.001)
    assert plan([small], [], policy=POLICY) == []  # 1.5 % is below the default 2 %
    (told,) = plan([small], [], policy=POLICY, min_change=1.0)
    assert told.sha == sha(25)
    exact = series(step(drop=0.015), noise=0.0, deterministic=True)  # under 2 %, exact
    (deterministic,) = plan([exact], [], policy=POLICY)
    assert deterministic.changes[0][0].deterministic


def test_a_new_change_at_a_commit_with_an_open_issue_joins_it() -> None:
    first, second = series(step(), metric="a"), series(step(), metric="b", seed=2)
    (joined,) = plan([first, second], [Reported(identity(25, "a"), 12)], policy=POLICY)
    assert joined.issue == 12
    assert [(c.metric, r) for c, r in joined.changes] == [("a", identity(25, "a")), ("b", None)]


def test_a_change_recorded_without_an_issue_stays_so() -> None:
    assert plan([series(step())], [Reported(identity(25), None)], policy=POLICY) == []


def test_a_deterministic_change_below_a_configured_floor_is_not_told() -> None:
    exact = series(step(drop=0.015), noise=0.0, deterministic=True)
    assert plan([exact], [], policy=POLICY, min_change=2.0) == []
    (told,) = plan([exact], [], policy=POLICY, min_change=1.0)
    assert told.sha == sha(25)


def test_a_change_too_near_the_series_end_to_be_found_again_is_left_open() -> None:
    # The window now holds only the first commits after the change (a shorter history):
    # the change cannot be found on two commits, which says nothing of whether it stands.
    short = series(step(total=27))
    assert plan([short], [Reported(identity(25), 12)], policy=POLICY) == []
    # Far from the edges and not found: noise, closed.
    flat = series([100.0] * 40)
    (gone,) = plan([flat], [Reported(identity(20), 12)], policy=POLICY)
    assert [e.closing for e in gone.endings] == [Closing.GONE]


def test_a_change_behind_a_later_accepted_level_is_closed() -> None:
    key = ("qemu_x86", "udp.receiver_mbps", ())
    twice = [100.0 * (1 - 0.06 * (i >= 25) - 0.06 * (i >= 50)) for i in range(70)]
    (closed,) = plan(
        [series(twice)], [Reported(identity(25), 12)], policy=POLICY, accepted={key: sha(50)}
    )
    assert (closed.issue, closed.closes) == (12, True)
    assert [e.closing for e in closed.endings] == [Closing.SUPERSEDED]
