"""Conditional reads: perfbot names the ETag of its last answer when it reads the PR, the
configuration file or an issue again, and GitHub's 304 (not counted against the rate
limit) gives the same value back; a change on GitHub is seen at once. A first comment on a
PR without comments is posted without listing them. The fake answers as GitHub does."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from perfbot.github.conditional import ENTRY_OVERHEAD, Validators, conditional_read, kept_size
from perfbot.sandbox.fakegithub import RecordedRequest
from tests.harness import World, in_process_service, wait_idle, wait_until

HEAD = "a" * 40


def shown(world: World, number: int, run_id: int) -> bool:
    comments = world.bot_comments(number)
    return len(comments) == 1 and f"runs/{run_id})" in comments[0]


def deliver(
    client: httpx.Client, world: World, run_id: int, number: int = 7
) -> list[RecordedRequest]:
    """One completed run of PR ``number``, until its comment shows it; the API requests."""
    before = len(world.fake.requests)
    pull = world.repo.pulls[number]
    body, headers = world.delivery(world.measured_run(pull, run_id))
    assert client.post("/webhook", content=body, headers=headers).status_code == 202
    wait_until(lambda: shown(world, number, run_id), 30, f"the comment of run {run_id}")
    wait_idle(client.get, 30)
    return world.fake.requests[before:]


def pull_reads(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in requests if r.method == "GET" and r.path.endswith("/pulls/7")]


def test_a_pr_read_again_is_a_304_that_does_not_count(tmp_path: Path) -> None:
    world = World.create()
    world.pull(7, HEAD)
    world.pull(8, "8" * 40)
    with in_process_service(world, tmp_path / "db") as client:
        first = deliver(client, world, 1001)
        another = deliver(client, world, 2001, 8)  # a first comment, the configuration known
        # A PR without comments: no listing of them before the first comment.
        assert not [r for r in first if r.method == "GET" and r.path.endswith("/comments")]
        deliver(client, world, 1002)  # perfbot's own comment changed the PR: read anew
        steady = deliver(client, world, 1003)
    # The PR counted once in a first comment (the proof; read again just before the write,
    # a 304), never in a steady-state update (the proof alone: publish.proof_stands).
    assert [r.status for r in pull_reads(first)] == [200, 304]
    assert [r.status for r in pull_reads(steady)] == [304]
    counted = [r for r in steady if r.status != 304 and "access_tokens" not in r.path]
    assert len(counted) == 4  # the artifacts, the download, the comment, the check run
    assert world.fake.rate_limited_calls()[-4:] == counted
    # A first comment once the process knows the configuration: 5 (the PR read once).
    counted = [r for r in another if r.status != 304 and "access_tokens" not in r.path]
    called = [f"{r.method} {r.path.removeprefix('/repos/acme/widget/')}" for r in counted]
    assert [re.sub(r"/\d+/zip$", "/ID/zip", call) for call in called] == [
        "GET actions/runs/2001/artifacts",
        "GET pulls/8",  # the proof; read again before the write, a 304
        "GET actions/artifacts/ID/zip",
        "POST issues/8/comments",
        "POST check-runs",
    ]


def test_a_change_on_github_is_read_at_once(tmp_path: Path) -> None:
    world = World.create()
    pull = world.pull(7, HEAD)
    with in_process_service(world, tmp_path / "db") as client:
        deliver(client, world, 1001)
        deliver(client, world, 1002)
        pull.labels.append("perfbot: mute")
        before = len(world.fake.requests)
        body, headers = world.delivery(world.measured_run(pull, 1003))
        assert client.post("/webhook", content=body, headers=headers).status_code == 202
        wait_until(
            lambda: any(r.path.endswith("/pulls/7") for r in world.fake.requests[before:]),
            30,
            "the PR read",
        )
        wait_idle(client.get, 30)
    (read, *_) = pull_reads(world.fake.requests[before:])
    assert read.status == 200  # the label changed the PR: a new answer, not a 304
    assert shown(world, 7, 1002)  # and the muted PR's comment was left as it was


def test_a_pr_with_a_comment_is_searched_for_perfbots(tmp_path: Path) -> None:
    world = World.create()
    world.pull(7, HEAD)
    world.fake.add_comment(world.repo, 7, "LGTM", "bob")
    with in_process_service(world, tmp_path / "db") as client:
        first = deliver(client, world, 1001)
    assert [r for r in first if r.method == "GET" and r.path.endswith("/issues/7/comments")]


def test_validators_keep_the_newest_answers_within_their_bytes() -> None:
    validators = Validators(max_bytes=3 * (ENTRY_OVERHEAD + 100))
    for n in range(5):
        validators.put(("pull", n), f'"{n}"', n, 100)
    assert len(validators) == 3
    assert validators.get(("pull", 0)) is None
    entry = validators.get(("pull", 4))
    assert entry is not None
    assert (entry.etag, entry.value) == ('"4"', 4)
    validators.put(("huge",), '"h"', "x", 10**9)
    assert validators.get(("huge",)) is None
    assert len(validators) == 3


async def test_the_configuration_and_an_issue_read_again_are_304s() -> None:
    world = World.create()
    repo = world.repo
    repo.files[".github/perfbot.yml"] = "threshold: 3\n"
    issue = world.fake.add_issue(repo, title="a change of level", body="body")
    app = world.github_app()
    try:
        async with app.installation(1) as installation:
            texts = [await installation.get_file("acme", "widget", ".github/perfbot.yml")]
            texts.append(await installation.get_file("acme", "widget", ".github/perfbot.yml"))
            titles = [(await installation.get_issue("acme", "widget", issue.number)) for _ in "ab"]
            repo.files[".github/perfbot.yml"] = "threshold: 4\n"
            texts.append(await installation.get_file("acme", "widget", ".github/perfbot.yml"))
    finally:
        await app.close()
    assert texts == ["threshold: 3\n", "threshold: 3\n", "threshold: 4\n"]
    assert titles[0] == titles[1] is not None
    reads = [r for r in world.fake.requests if r.method == "GET" and "access_tokens" not in r.path]
    files = [r.status for r in reads if r.path.endswith("/perfbot.yml")]
    issues = [r.status for r in reads if r.path.endswith(f"/issues/{issue.number}")]
    assert (files, issues) == ([200, 304, 200], [200, 304])
    assert not [r for r in world.fake.rate_limited_calls() if r.status == 304]


async def test_what_is_kept_counts_as_the_value_not_as_githubs_answer() -> None:
    # A PR's answer is some 15 KB of JSON, the value kept a few fields. Counted at the
    # answer's size, this budget would hold one PR of the ten and every read would be in
    # full, a round robin through the LRU; counted at the value's, all ten are 304s.
    @dataclass(frozen=True)
    class Answer:
        status_code: int
        headers: dict[str, str]
        content: bytes

    @dataclass(frozen=True)
    class Pull:
        number: int
        head_sha: str

    validators = Validators(max_bytes=10 * (ENTRY_OVERHEAD + 1000))
    sent: list[dict[str, str]] = []

    async def call(method: str, send: Callable[[], Awaitable[Answer]]) -> Answer:
        return await send()

    def read(number: int) -> Awaitable[Pull | None]:
        async def send(headers: dict[str, str]) -> Answer:
            sent.append(headers)
            if headers.get("If-None-Match") == f'"{number}"':
                return Answer(304, {}, b"")
            return Answer(200, {"etag": f'"{number}"'}, b"x" * 15_000)

        return conditional_read(
            validators,
            ("pull", number),
            call=call,
            send=send,
            convert=lambda _answer: Pull(number, HEAD),
            gone=(404,),
        )

    first = [await read(n) for n in range(10)]
    again = [await read(n) for n in range(10)]
    assert again == first == [Pull(n, HEAD) for n in range(10)]
    assert [bool(headers) for headers in sent] == [False] * 10 + [True] * 10
    assert 0 < kept_size(first[0]) < 1000
    assert kept_size("threshold: 3\n") == len("threshold: 3\n")
