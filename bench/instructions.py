"""Benchmark of the instructions perfbot executes per steady-state update, counted by
valgrind's callgrind: a figure that holds still whatever else the machine is doing.

bench/service.py's CPU per event moves by a third between runs of one commit on a shared
machine (2026-12-03, 1 process at 0 ms latency: 4.8 to 7.6 ms). A change worth a few per
cent cannot be told from that noise there; here it can. ``perfbot serve`` (one process)
runs under callgrind against bench/fakeserver.py (not under it). ``--events`` PRs each get
their first comment and one settling update (counted apart), then one more update each:
the deliveries' ingest, the jobs, the store and the GitHub calls of those updates are
what is counted, between callgrind's zeroing and its dump. Instructions are not time (no
cache misses, no system calls, no waiting for the GIL or the disk), so this complements
bench/service.py rather than replacing it; and valgrind makes perfbot about fifty times
slower, hence the few events.

Run: .venv/bin/python bench/instructions.py [--events N] [--rounds N]
     .venv/bin/python bench/against.py REV -- bench/instructions.py   (old and new)
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakeprocess import fake_github, post_all, wait_commented, warm_up

from tests.harness import perfbot_process, settings_env, wait_idle

# perfbot starts (imports, schema) in about a second; under callgrind in about a minute.
START_SECONDS = 600.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=30, help="updates counted a round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--keep",
        type=Path,
        help="copy each round's callgrind dump here (for callgrind_annotate)",
    )
    args = parser.parse_args()
    missing = [tool for tool in ("valgrind", "callgrind_control") if shutil.which(tool) is None]
    if missing:
        print(
            f"bench/instructions.py needs {' and '.join(missing)}: install valgrind "
            "(apt-get install -y valgrind) and run it again.",
            file=sys.stderr,
        )
        raise SystemExit(2)
    counts = [per_update(args.events, number, args.keep) for number in range(args.rounds)]
    print(
        f"instructions per steady-state update (callgrind, 1 process, {args.events} updates "
        f"a round after their first comments and settling updates):"
    )
    for number, count in enumerate(counts, 1):
        print(f"  round {number}: {count / 1e6:.2f} million")
    spread = (max(counts) - min(counts)) / statistics.median(counts)
    print(
        f"  median: {statistics.median(counts) / 1e6:.2f} million instructions per update "
        f"(rounds within {spread:.1%} of each other)"
    )


def per_update(events: int, round_number: int, keep: Path | None) -> float:
    """Instructions per update of one round, each round on fresh processes."""
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        # One installation per PR: GitHub's pace (a second between an installation's
        # writes) then never holds an update back.
        with fake_github(
            events, 0.0, scratch, warmup=events, installations=events, updates=True
        ) as setup:
            env = settings_env(
                setup.api_url,
                scratch / "perfbot.db",
                PERFBOT_PROCESSES="1",
                PERFBOT_PRIVATE_KEY=setup.private_key,
                PERFBOT_WRITE_PACE_SECONDS="1",
            )
            dumps = scratch / "callgrind"
            dumps.mkdir()
            callgrind = ("valgrind", "--tool=callgrind", f"--callgrind-out-file={dumps}/cg.%p")
            with perfbot_process(
                env,
                scratch / f"perfbot-{round_number}.log",
                wrapper=callgrind,
                start_timeout=START_SECONDS,
            ) as bot:
                pid, url = bot.process.pid, str(bot.client.base_url)  # valgrind runs it in place
                warm_up(setup, [url])
                _callgrind_control("--zero", pid)
                asyncio.run(post_all([url], setup.deliveries[:events]))
                wait_commented(setup.api_url, events, 900, "every timed update's comment")
                wait_idle(bot.client.get, 300, database=scratch / "perfbot.db")
                _callgrind_control("--dump", pid)
                dump = _newest_dump(dumps)
                total = _dumped_total(dump)
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    shutil.copy(dump, keep / f"callgrind.round{round_number + 1}")
    return total / events


def _callgrind_control(option: str, pid: int) -> None:
    subprocess.run(
        ["callgrind_control", option, str(pid)], check=True, capture_output=True, timeout=120
    )


def _newest_dump(dumps: Path) -> Path:
    """The dump ``--dump`` wrote: the newest file of the folder."""
    written = sorted(dumps.glob("cg.*"), key=lambda path: path.stat().st_mtime)
    if not written:
        raise AssertionError(f"callgrind wrote no dump in {dumps}")
    return written[-1]


def _dumped_total(dump: Path) -> float:
    """The instructions counted in ``dump`` (callgrind's ``totals:`` line)."""
    for line in dump.read_text(errors="replace").splitlines():
        if line.startswith(("totals:", "summary:")):
            return float(line.split()[1])
    raise AssertionError(f"the callgrind dump {dump} has no total")


if __name__ == "__main__":
    main()
