"""The App learns each metric's noise from the PRs measured against one target commit
(issue 13): the same drop is a regression on a stable metric and within noise on a noisy
one, whose band and evidence the comment gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from tests.harness import World, assert_done, in_process_service, wait_idle, zip_of

BASE = "b" * 40
# The base side of five PRs against one target commit: the same code measured five times.
# The noisy metric scatters by a few percent (like unpaced TCP), the stable one by 0.05 %.
NOISY_SCATTER = (1.00, 1.03, 0.97, 1.02, 0.98)
STABLE_SCATTER = (1.0, 1.0005, 0.9995, 1.0002, 0.9998)


def perfbot_json(noisy: float, stable: float) -> str:
    """One run, as a lab's own script would write it (perfbot JSON: a stochastic tool)."""
    metrics = [
        {"name": "tcp.receiver_mbps", "value": noisy, "unit": "Mbps", "better": "higher"},
        {"name": "udp.receiver_mbps", "value": stable, "unit": "Mbps", "better": "higher"},
    ]
    return json.dumps({"perfbot": 1, "platform": "lab-board", "metrics": metrics})


def report(base: tuple[float, float], head: tuple[float, float]) -> bytes:
    return zip_of(
        {
            "base/lab-board/suite.json": perfbot_json(*base),
            "head/lab-board/suite.json": perfbot_json(*head),
        }
    )


def post_run(client: httpx.Client, world: World, number: int, artifact: bytes) -> str:
    pull = world.fake.repo(world.repo).pulls[number]
    body, headers = world.delivery(world.measured_run(pull, 5000 + number, report=artifact))
    response = client.post("/webhook", content=body, headers=headers)
    assert response.status_code == 202, response.text
    return headers["X-GitHub-Delivery"]


def test_the_same_drop_is_red_on_a_stable_metric_and_within_noise_on_a_noisy_one(
    tmp_path: Path,
) -> None:
    # Confirm before red is off: the first look's verdicts are what this test is about.
    world = World.create({".github/perfbot.yml": "confirm: false\n"})
    database = tmp_path / "db"
    for number in range(1, 7):
        world.pull(number, f"{number:x}" * 40).base_sha = BASE
    with in_process_service(world, database) as client:
        for number, (noisy, stable) in enumerate(
            zip(NOISY_SCATTER, STABLE_SCATTER, strict=True), start=1
        ):
            # A/A: each PR's head measures what its base measured.
            values = (1000 * noisy, 100 * stable)
            delivery = post_run(client, world, number, report(values, values))
            wait_idle(client.get)
            assert_done(database, delivery)
        # The sixth PR drops both metrics by 6 %, one run per side.
        before, after = (1000.0, 100.0), (940.0, 94.0)
        delivery = post_run(client, world, 6, report(before, after))
        wait_idle(client.get)
        assert_done(database, delivery)

    (comment,) = world.bot_comments(6)
    stable_row = next(line for line in comment.splitlines() if "udp.receiver" in line)
    noisy_row = next(line for line in comment.splitlines() if "tcp.receiver" in line)
    assert "beyond 5 % tolerance" in stable_row
    assert "🔴" in stable_row
    assert "🔴" not in noisy_row
    assert "within noise" in noisy_row
    # The noisy metric's band and where it was learned: five measurements of main@bbbbbbb.
    assert re.search(r"(±|−\d+/\+)\d+ %", noisy_row), noisy_row
    assert "5 measurements of main" in noisy_row
    # Without the history (the first PR), neither single run could be called at all.
    (first,) = world.bot_comments(1)
    assert "🔴" not in first
