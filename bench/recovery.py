"""Benchmark: how soon a killed ``perfbot serve``'s job is resumed once it is restarted.

Each repetition starts ``perfbot serve`` (one process, a SQLite file) against the fake
GitHub on loopback, sends one finished measurement run, and SIGKILLs the process (by its
PID) while the fake hangs the report download; then starts it again on the same database
and times from that restart to the job's comment. The restarted process sees at once
that the process holding the job has ended (the lock it held on its presence file is
gone, perfbot/store/presence.py) and takes the job over without waiting for its lease
(``PERFBOT_LEASE_SECONDS``, 20 s by default) to run out.

Figures only: each repetition's seconds, then the median and the worst. A repetition that
sees no comment within ``--timeout`` seconds of its restart stops the run with an error.

Run: .venv/bin/python bench/recovery.py [--repeat 3] [--lease SECONDS] [--timeout 60]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.harness import kill_mid_job_and_restart

MAX_REPEAT = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help=f"1 to {MAX_REPEAT}")
    parser.add_argument("--lease", type=float, default=None, help="PERFBOT_LEASE_SECONDS")
    parser.add_argument("--timeout", type=float, default=60.0, help="per restart, seconds")
    args = parser.parse_args()
    # The fake GitHub's server logs the hung download it cancels when it stops: noise here.
    logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)
    if not 1 <= args.repeat <= MAX_REPEAT:
        parser.error(f"--repeat must be from 1 to {MAX_REPEAT}")
    extra = {} if args.lease is None else {"PERFBOT_LEASE_SECONDS": f"{args.lease:g}"}
    lease = extra.get("PERFBOT_LEASE_SECONDS", "the default")
    print(f"restart to comment after SIGKILL mid-job, lease {lease}, {args.repeat} runs")
    figures = []
    for n in range(1, args.repeat + 1):
        with tempfile.TemporaryDirectory(prefix="perfbot-recovery-") as workdir:
            recovery = kill_mid_job_and_restart(Path(workdir), timeout=args.timeout, **extra)
        outcome = recovery.outcome
        ended = "no job" if outcome is None else f"{outcome.status}, {outcome.attempts} attempts"
        print(f"  run {n}: {recovery.seconds:5.1f} s  ({ended})")
        figures.append(recovery.seconds)
    print(f"median {statistics.median(figures):.1f} s, worst {max(figures):.1f} s")


if __name__ == "__main__":
    main()
