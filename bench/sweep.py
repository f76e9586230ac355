"""Requests per sweep for missed deliveries: the cursor against a full read of the log.

A busy App's delivery log (``--per-day`` attempts a day for three days, in the fake
GitHub) is swept once, then:

  * a quiet sweep (nothing new since the last one);
  * sweeps after N new attempts (``--new``, a few of them failed), spread over pages.

For each, the ``GET /app/hook/deliveries`` requests are counted for perfbot's sweep,
which reads back to the last complete sweep's cursor, and for the former behaviour as
the baseline, measured in the same process on the same log: every sweep read the whole
three days. Redelivery requests (POST) are the same for both and are not counted.

Run: .venv/bin/python bench/sweep.py [--per-day N] [--new 10,250,1000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfbot.app import redeliver
from perfbot.app.redeliver import LOOKBACK_SECONDS, MAX_PAGES, sweep
from perfbot.app.settings import DEFAULT_REDELIVERY_MINUTES
from perfbot.github.app import GitHubApp
from perfbot.sandbox.fakegithub import FakeGitHub, rsa_keypair
from perfbot.store import SQLiteStore

LISTING = "/app/hook/deliveries"


def listings(fake: FakeGitHub) -> int:
    return sum(1 for r in fake.requests if r.path == LISTING)


def add_attempts(fake: FakeGitHub, count: int, span: timedelta, failed_every: int) -> None:
    """``count`` attempts spread evenly over the last ``span``, oldest first (GitHub's ids
    grow with time); every ``failed_every``-th one failed (a 502)."""
    for n in range(count):
        ago = span * (1 - (n + 1) / count)
        status = 502 if failed_every and n % failed_every == failed_every - 1 else 200
        fake.add_delivery(
            "workflow_run", "completed", status_code=status, delivered_at=fake.now() - ago
        )


async def measure(per_day: int, news: list[int]) -> None:
    # Redelivery requests are not what is measured: no pause between them.
    redeliver.REDELIVERY_PAUSE_SECONDS = 0.0
    fake = FakeGitHub()
    github = GitHubApp(
        fake.app_id, rsa_keypair().private_pem, fake.api_url, transport=fake.transport()
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(str(Path(tmp) / "perfbot.db"))
        await store.setup()
        try:
            add_attempts(fake, 3 * per_day, timedelta(days=3) - timedelta(minutes=1), 0)
            period = DEFAULT_REDELIVERY_MINUTES * 60

            def clock() -> float:
                return fake.now().timestamp()

            async def both() -> tuple[int, int]:
                """(requests of perfbot's sweep, of a full read) on the log as it is; checks
                that the sweep asked for every failed attempt's redelivery."""
                before = listings(fake)
                await github.list_hook_deliveries(clock() - LOOKBACK_SECONDS, MAX_PAGES)
                baseline = listings(fake) - before
                before = listings(fake)
                result = await sweep(github, store, owner="bench", clock=clock)
                assert result.complete
                asked = {d.id for d in fake.deliveries if d.id in set(fake.redeliveries)}
                assert asked == {d.id for d in fake.deliveries if d.status_code == 502}
                return listings(fake) - before, baseline

            first, baseline = await both()
            print(f"log: {3 * per_day} attempts over 3 days ({per_day}/day), 100 per page")
            print(f"{'sweep':<44} {'cursor':>7} {'full read':>10}")
            print(f"{'first sweep of a database':<44} {first:>7} {baseline:>10}")
            fake.advance(period)  # a period later, nothing new
            quiet, quiet_baseline = await both()
            print(f"{'quiet (nothing new)':<44} {quiet:>7} {quiet_baseline:>10}")
            for new in news:
                fake.advance(period)  # a period in which `new` attempts came in
                add_attempts(fake, new, timedelta(seconds=period), 50)
                calls, baseline = await both()
                label = f"after {new} new attempts ({new // 50} failed)"
                print(f"{label:<44} {calls:>7} {baseline:>10}")
            print(
                f"sweeps a day at the default period ({DEFAULT_REDELIVERY_MINUTES:g} min):"
                f" {24 * 60 / DEFAULT_REDELIVERY_MINUTES:.0f}; quiet, that is"
                f" {quiet * 24 * 60 / DEFAULT_REDELIVERY_MINUTES:.0f} requests a day with the"
                f" cursor, {quiet_baseline * 24 * 60 / DEFAULT_REDELIVERY_MINUTES:.0f} with full"
                " reads"
            )
            print(
                f"the former period (6 h, full reads): 4 sweeps a day, {4 * quiet_baseline}"
                " requests a day"
            )
        finally:
            await store.close()
            await github.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-day", type=int, default=2000, help="attempts a day in the log")
    parser.add_argument("--new", default="10,250,1000", help="new attempts before each sweep")
    args = parser.parse_args()
    news = [int(n) for n in args.new.split(",") if n]
    asyncio.run(measure(args.per_day, news))


if __name__ == "__main__":
    main()
