"""The comment's history shows only this repository's own rows, and never a fork PR's rows
as the target branch's trend (issue 15 item 4); in-process service, fake GitHub."""

from __future__ import annotations

from pathlib import Path

from tests.harness import World, in_process_service, regressed, report_zip, wait_idle, wait_until
from tests.test_push_runs import MAIN_SHAS, post, push_run


def comment(world: World, number: int) -> str:
    (body,) = world.bot_comments(number)
    return body


def test_a_private_repositorys_pushes_are_never_another_repositorys_trend(
    tmp_path: Path,
) -> None:
    world = World.create()
    secret = World(world.fake, world.fake.add_repo("acme/secret", 501, 1, private=True))
    with in_process_service(world, tmp_path / "db") as client:
        for index, sha in enumerate(MAIN_SHAS):  # the same metrics, on the other's main
            post(client, *secret.delivery(push_run(secret, 2000 + index, sha)))
        wait_idle(client.get)
        pull = world.pull(7, "a" * 40)
        post(client, *world.delivery(world.measured_run(pull, 3000)))
        wait_until(lambda: len(world.bot_comments(7)) == 1, 15, "the comment")
        wait_idle(client.get)
    body = comment(world, 7)
    assert "🔴" in body  # tcp4 moved: its chart is there, as bars of base and PR
    assert "bar [" in body
    assert "Recent values" not in body
    for sha in MAIN_SHAS:
        assert sha[:7] not in body


def test_a_fork_prs_base_side_is_never_the_branchs_trend(tmp_path: Path) -> None:
    world = World.create()
    with in_process_service(world, tmp_path / "db") as client:
        fork = world.pull(8, "f" * 40, fork=True)
        post(
            client, *world.delivery(world.measured_run(fork, 3100, report=report_zip(regressed())))
        )
        wait_until(lambda: len(world.bot_comments(8)) == 1, 15, "the fork's comment")
        wait_idle(client.get)
        # The fork's own pushes are its own: its second push lists the first.
        fork.head_sha = "e" * 40
        post(client, *world.delivery(world.measured_run(fork, 3101)))
        wait_until(lambda: "eeeeeee" in comment(world, 8), 15, "the fork's second comment")
        wait_idle(client.get)
        # A PR of the repository itself, against the same main commit the fork measured.
        pull = world.pull(9, "a" * 40)
        post(client, *world.delivery(world.measured_run(pull, 3200)))
        wait_until(lambda: len(world.bot_comments(9)) == 1, 15, "the PR's comment")
        wait_idle(client.get)
        first = comment(world, 9)
        # Its second push: now main's value is its own first push's base side.
        pull.head_sha = "b" * 40
        post(client, *world.delivery(world.measured_run(pull, 3201)))
        wait_until(lambda: "bbbbbbb" in comment(world, 9), 15, "the PR's second comment")
        wait_idle(client.get)
    fork_body = comment(world, 8)
    assert "This PR's pushes: 1 earlier measured push" in fork_body
    assert "Recent values" not in fork_body  # only a fork's rows: no trend at all
    body = comment(world, 9)
    assert "This PR's pushes: 1 earlier measured push" in body
    assert "ffffff" not in body
    assert "eeeeeee" not in body
    assert "Recent values on <code>main</code>" in body
    assert "below all 1 recent <code>main</code> commit" in body
    # Its first push had no trend: the same main commit was measured only by the fork.
    assert "Recent values" not in first
    assert "bar [" in first
