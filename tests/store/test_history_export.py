"""``Store.export_measurements`` (``perfbot history``) on every backend: the filters, the
bound, the order, and patterns and names that are special to SQL."""

from __future__ import annotations

import pytest

from perfbot.store import Store
from perfbot.store.export import MAX_EXPORT_ROWS, HistoryQuery
from tests.store.test_measurements import record

REPO_NAME = "acme/r500"  # record()'s repository


async def stored(store: Store) -> None:
    await store.record_measurements(
        [
            record(1, side="push", sha="1" * 40, metric="tcp_rx.mbps", at=100.0),
            record(2, side="push", sha="2" * 40, metric="tcp_rx.mbps", at=200.0),
            record(2, side="push", sha="2" * 40, metric="udp%loss_pct", at=200.0),
            record(3, side="base", metric="tcp_rx.mbps", platform="qemu_x86/atom", at=300.0),
            record(3, side="head", metric="tcp_rx.mbps", platform="qemu_x86_64", at=300.0),
            record(4, side="push", metric="tcp_rx.mbps", at=400.0, repo_id=501),
        ]
    )


async def test_rows_of_one_repository_oldest_first_with_every_field(store: Store) -> None:
    await stored(store)
    rows = await store.export_measurements(HistoryQuery("ACME/R500"))
    assert [(r.recorded_at, r.run_id, r.side, r.metric) for r in rows] == [
        (100.0, 1, "push", "tcp_rx.mbps"),
        (200.0, 2, "push", "tcp_rx.mbps"),
        (200.0, 2, "push", "udp%loss_pct"),
        (300.0, 3, "base", "tcp_rx.mbps"),
        (300.0, 3, "head", "tcp_rx.mbps"),
    ]
    first = rows[0]
    assert (first.repo_full_name, first.sha, first.run_attempt, first.pr_number) == (
        REPO_NAME,
        "1" * 40,
        1,
        None,
    )
    assert (first.platform, first.unit, first.samples, first.from_fork) == (
        "lab",
        "Mbps",
        (941.25, 940.5),
        False,
    )
    assert rows[3].pr_number == 3


@pytest.mark.parametrize(
    ("query", "runs"),
    [
        (HistoryQuery(REPO_NAME, metric="tcp_*"), [1, 2, 3, 3]),
        (HistoryQuery(REPO_NAME, metric="TCP_*"), []),  # case-sensitive on both
        (HistoryQuery(REPO_NAME, metric="udp%loss?pct"), [2]),
        (HistoryQuery(REPO_NAME, metric="udp_loss*"), []),  # _ is no wildcard
        (HistoryQuery(REPO_NAME, metric="udp*"), [2]),
        (HistoryQuery(REPO_NAME, platforms=("qemu_x86",)), [3]),  # the board, not _64
        (HistoryQuery(REPO_NAME, platforms=("qemu_x86", "qemu_x86_64")), [3, 3]),
        (HistoryQuery(REPO_NAME, branch="main"), [3]),
        (HistoryQuery(REPO_NAME, branch="feature"), [1, 2, 2, 3]),
        (HistoryQuery(REPO_NAME, since=200.0), [2, 2, 3, 3]),
        (HistoryQuery(REPO_NAME, until=200.0), [1]),
        (HistoryQuery(REPO_NAME, since=150.0, until=250.0), [2, 2]),
        (HistoryQuery(REPO_NAME, limit=2), [3, 3]),  # the newest rows
        (HistoryQuery("acme/r501"), [4]),
        (HistoryQuery("acme/r50%"), []),  # the repository is matched exactly
    ],
)
async def test_filters(store: Store, query: HistoryQuery, runs: list[int]) -> None:
    await stored(store)
    assert [row.run_id for row in await store.export_measurements(query)] == runs


async def test_a_repository_is_known_by_any_stored_row(store: Store) -> None:
    assert not await store.has_measurements(REPO_NAME)
    await stored(store)
    assert await store.has_measurements("Acme/R500")
    assert not await store.has_measurements("acme/widget")


def test_the_bound_is_checked() -> None:
    with pytest.raises(ValueError, match="limit must be from 1 to"):
        HistoryQuery(REPO_NAME, limit=MAX_EXPORT_ROWS + 1)
