"""The store's Watch role on both backends: the changes told about, found again by their
first commit, and the acknowledgements kept for audit; forgotten with their repository or
installation."""

from __future__ import annotations

from dataclasses import replace

from perfbot.store import Store
from perfbot.store.watched import Acknowledgement, WatchedChange

REPO = 500


def change(metric: str = "udp.receiver_mbps", **fields: object) -> WatchedChange:
    base = WatchedChange(
        repo_id=REPO,
        branch="main",
        platform="qemu_x86",
        metric=metric,
        settings=(("streams", "1"),),
        first_sha="a" * 40,
        sha="a" * 40,
        installation_id=7,
        issue_number=12,
        state="open",
        direction="regression",
        change=-6.1,
        unit="Mbps",
        scale="ratio",
        created_at=1000.0,
        updated_at=1000.0,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def ack(**fields: object) -> Acknowledgement:
    base = Acknowledgement(
        repo_id=REPO,
        installation_id=7,
        subject="branch",
        branch="main",
        pr_number=None,
        sha="a" * 40,
        platform="qemu_x86",
        metric="udp.receiver_mbps",
        settings=(("streams", "1"),),
        value=93.7,
        login="writer",
        reason="larger buffers",
        accepted_at=2000.0,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


async def test_a_change_is_found_again_by_its_first_commit_and_moves(store: Store) -> None:
    await store.save_watched([change(), change("tcp.receiver_mbps", issue_number=None)])
    assert {c.metric for c in await store.open_changes(REPO, "main")} == {
        "udp.receiver_mbps",
        "tcp.receiver_mbps",
    }
    moved = change(sha="b" * 40, updated_at=3000.0, created_at=9999.0)
    await store.save_watched([moved])
    found = [c for c in await store.open_changes(REPO, "main") if c.metric.startswith("udp")]
    assert found == [replace(moved, created_at=1000.0)]  # one row, its first time kept
    assert await store.open_changes(REPO, "other") == []
    assert await store.open_changes(REPO + 1, "main") == []


async def test_an_issues_changes_open_and_closed(store: Store) -> None:
    closed = change("tcp.receiver_mbps", state="closed", closed_reason="returned")
    await store.save_watched([change(), closed, change("x", issue_number=13)])
    assert [c.metric for c in await store.issue_changes(REPO, 12)] == [
        "tcp.receiver_mbps",
        "udp.receiver_mbps",
    ]
    assert [c.metric for c in await store.open_changes(REPO, "main")] == ["udp.receiver_mbps", "x"]


async def test_acknowledgements_are_kept_and_only_standing_ones_count(store: Store) -> None:
    await store.acknowledge([ack(), ack(metric="tcp", revoked_at=3000.0, revoked_by="admin")])
    await store.acknowledge([ack(reason="again", accepted_at=2500.0)])
    standing = await store.branch_acknowledgements(REPO, "main")
    assert [(a.metric, a.reason) for a in standing] == [
        ("udp.receiver_mbps", "larger buffers"),
        ("udp.receiver_mbps", "again"),
    ]
    assert standing[0] == ack()
    assert await store.branch_acknowledgements(REPO, "release") == []


async def test_the_watch_is_forgotten_with_its_repository_and_installation(store: Store) -> None:
    await store.save_watched([change(), change(repo_id=REPO + 1, installation_id=8)])
    await store.acknowledge([ack(), ack(repo_id=REPO + 1, installation_id=8)])
    await store.forget_repositories([REPO])
    assert await store.open_changes(REPO, "main") == []
    assert await store.branch_acknowledgements(REPO, "main") == []
    assert len(await store.open_changes(REPO + 1, "main")) == 1
    await store.forget_installation(8)
    assert await store.open_changes(REPO + 1, "main") == []
    assert await store.branch_acknowledgements(REPO + 1, "main") == []


async def test_hostile_names_round_trip(store: Store) -> None:
    nasty = "m\x00\u202e`|@x"
    await store.save_watched([change(nasty, unit="M\x00bps")])
    (found,) = await store.open_changes(REPO, "main")
    assert found.metric == nasty.replace("\x00", "\N{REPLACEMENT CHARACTER}")


async def test_a_pulls_acknowledgements_are_its_own_and_revoked_ones_are_kept(
    store: Store,
) -> None:
    pulled = {"subject": "pull", "pr_number": 7, "branch": "main"}
    await store.acknowledge(
        [
            ack(**pulled),
            ack(**pulled, metric="tcp", accepted_at=2100.0),
            ack(**{**pulled, "pr_number": 8}),  # another PR's
            ack(),  # the branch's
            ack(pr_number=7),  # a branch's, whatever its number
        ]
    )
    standing = await store.pull_acknowledgements(REPO, 7)
    assert [(a.metric, a.pr_number, a.subject) for a in standing] == [
        ("udp.receiver_mbps", 7, "pull"),
        ("tcp", 7, "pull"),
    ]
    assert standing[0] == ack(**pulled)
    await store.revoke_acknowledgements(
        REPO, 7, [("qemu_x86", "udp.receiver_mbps")], login="admin", now=3000.0
    )
    assert [a.metric for a in await store.pull_acknowledgements(REPO, 7)] == ["tcp"]
    # Only PR 7's: the other PR's and the branch's stand.
    assert len(await store.pull_acknowledgements(REPO, 8)) == 1
    assert len(await store.branch_acknowledgements(REPO, "main")) == 2
    await store.revoke_acknowledgements(REPO, 7, [], login="admin", now=3100.0)
    assert len(await store.pull_acknowledgements(REPO, 7)) == 1
    await store.forget_repositories([REPO])
    assert await store.pull_acknowledgements(REPO, 8) == []
