"""Benchmark of the report engine: parse, compare and render at scale.

Cases:
  * 4 platforms × 5,000 metrics (zperf console logs, base and head), the issue's target
    being under 1 s for parse + compare + render;
  * a 20 MB twister.json (zperf recordings of many suites, with long logs).

Each figure is the best of ``--repeat`` runs; peak memory comes from a separate run under
tracemalloc (Python allocations) so that tracing does not slow the timed runs. Baselines
run in the same process on the same bytes: a bare regex-and-float pass over the zperf
lines, and ``json.loads`` of the twister file, so the ratios say what perfbot adds.

Run: .venv/bin/python bench/engine.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from perfbot.engine.judge.compare import compare
from perfbot.engine.read.sides import ReportFile, read_side
from perfbot.engine.show.render import render

PLATFORMS = 4
METRICS = 5_000
TWISTER_BYTES = 20 * 1024 * 1024


def zperf_files(seed: int, moved_every: int) -> list[ReportFile]:
    rng = random.Random(seed)
    files = []
    for p in range(PLATFORMS):
        lines = ["*** Booting Zephyr OS ***"]
        for i in range(METRICS):
            value = 10.0 + (i % 97)
            if moved_every and i % moved_every == 0:
                value *= rng.choice((0.9, 1.1))
            lines.append(f"[00:00:{i % 60:02d}.000,000] ZPERF-RESULT case{i:05d}_mbps={value:.3f}")
        lines.append("ZPERF-DONE")
        files.append(ReportFile(f"board-{p}/zperf.log", "\n".join(lines).encode()))
    return files


def twister_file() -> ReportFile:
    suites = []
    size = 0
    n = 0
    while size < TWISTER_BYTES:
        suite = {
            "name": f"sample.net.zperf.case{n}",
            "arch": "x86",
            "platform": ("qemu_x86/atom", "qemu_x86_64/atom")[n % 2],
            "path": "samples/net/zperf",
            "runnable": True,
            "retries": 0,
            "status": "passed" if n % 50 else "failed",
            "reason": "" if n % 50 else "Timeout",
            "log": "" if n % 50 else "x" * 20_000,
            "execution_time": "41.27",
            "build_time": "35.10",
            "testcases": [{"identifier": f"case{n}", "status": "passed"}],
            "recording": [{f"m{k}_mbps": f"{10 + k}.{n % 1000:03d}"} for k in range(8)],
        }
        # Nested two levels deeper in the document, each line gains 8 spaces of indent.
        text = json.dumps(suite, indent=4, separators=(",", ":"))
        size += len(text) + 8 * text.count("\n")
        suites.append(suite)
        n += 1
    document = {"environment": {"os": "Linux", "zephyr_version": "v4.3.0"}, "testsuites": suites}
    return ReportFile(
        "twister.json", json.dumps(document, indent=4, separators=(",", ":")).encode()
    )


def best_of(repeat: int, work: Callable[[], Any]) -> float:
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        timings.append(time.perf_counter() - start)
    return min(timings)


def peak_mib(work: Callable[[], Any]) -> float:
    tracemalloc.start()
    work()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / (1024 * 1024)


_ZPERF_LINE = re.compile(rb"ZPERF-RESULT ([A-Za-z0-9_]+)=([0-9.]+)")


def bare_line_scan(files: list[ReportFile]) -> int:
    """The floor any zperf reader pays: find the lines and convert the numbers."""
    count = 0
    for file in files:
        for match in _ZPERF_LINE.finditer(file.data):
            float(match.group(2))
            count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    base_files, head_files = zperf_files(1, 0), zperf_files(2, 40)
    state: dict[str, Any] = {}

    def parse() -> None:
        state["base"], state["head"] = read_side(base_files), read_side(head_files)

    def compare_sides() -> None:
        state["comparison"] = compare(state["base"], state["head"])

    def render_comment() -> None:
        state["body"] = render(state["comparison"])

    def everything() -> None:
        parse()
        compare_sides()
        render_comment()

    total_bytes = sum(len(f.data) for f in base_files + head_files)
    baseline = best_of(args.repeat, lambda: bare_line_scan(base_files + head_files))
    t_parse = best_of(args.repeat, parse)
    t_compare = best_of(args.repeat, compare_sides)
    t_render = best_of(args.repeat, render_comment)
    t_total = best_of(args.repeat, everything)
    peak = peak_mib(everything)
    metrics = sum(len(p.metrics) for p in state["comparison"].platforms)
    print(
        f"case: {PLATFORMS} platforms x {METRICS:,} metrics, base and head "
        f"({total_bytes / 1e6:.1f} MB of zperf logs, {metrics:,} compared metrics)"
    )
    print(f"  parse   {t_parse * 1000:8.1f} ms")
    print(f"  compare {t_compare * 1000:8.1f} ms")
    print(f"  render  {t_render * 1000:8.1f} ms   (comment {len(state['body'].encode()):,} bytes)")
    print(f"  total   {t_total * 1000:8.1f} ms   target < 1000 ms")
    print(f"  peak Python memory {peak:.1f} MiB")
    print(
        f"  baseline bare regex+float scan {baseline * 1000:.1f} ms; "
        f"parse/baseline {t_parse / baseline:.1f}x, total/baseline {t_total / baseline:.1f}x"
    )

    twister = twister_file()

    def parse_twister() -> None:
        state["twister"] = read_side([twister])

    json_baseline = best_of(args.repeat, lambda: json.loads(twister.data))
    t_twister = best_of(args.repeat, parse_twister)
    peak_twister = peak_mib(parse_twister)
    side = state["twister"]
    print(
        f"case: twister.json of {len(twister.data) / 1e6:.1f} MB "
        f"({len(side.series):,} series, {len(side.failures):,} failed suites)"
    )
    print(f"  parse   {t_twister * 1000:8.1f} ms   peak Python memory {peak_twister:.1f} MiB")
    print(
        f"  baseline json.loads {json_baseline * 1000:.1f} ms; "
        f"parse/baseline {t_twister / json_baseline:.2f}x"
    )
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS {max_rss:.0f} MiB")


if __name__ == "__main__":
    main()
