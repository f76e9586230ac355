"""Benchmark of the report engine: parse, compare and render at scale.

Cases:
  * 4 platforms × 5,000 metrics (zperf console logs, base and head, 20,000 compared
    metrics): parse + compare + render in process (target: at most 0.5 s), and a whole
    ``perfbot compare`` process over the same files (target: at most 1 s), each in three
    rounds, beside its baseline of the same round (a bare regex-and-float scan, in process
    and as a bare Python process);
  * a 20 MB twister.json (zperf recordings of many suites, with long logs).

Each figure is the best of ``--repeat`` runs; peak memory comes from a separate run under
tracemalloc (Python allocations) so that tracing does not slow the timed runs. Baselines
run in the same process on the same bytes: a bare regex-and-float pass over the zperf
lines, and ``json.loads`` of the twister file, so the ratios say what perfbot adds.

Run: .venv/bin/python bench/engine.py [--repeat N] [--rounds N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
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


def best_of(repeat: int, work: Callable[[], Any], cpu: list[float] | None = None) -> float:
    """The best wall time of ``repeat`` runs; the best CPU time of this process over the
    same runs is appended to ``cpu`` when given (on a shared machine the wall time also
    counts the turns other processes take on the cores)."""
    timings, cpu_timings = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        work()
        timings.append(time.perf_counter() - start)
        cpu_timings.append(time.process_time() - start_cpu)
    if cpu is not None:
        cpu.append(min(cpu_timings))
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


def whole_process(
    base_files: list[ReportFile], head_files: list[ReportFile]
) -> tuple[float, float, float]:
    """Seconds of one ``perfbot compare DIR --markdown FILE`` process over the same files,
    and of a bare Python process doing the regex+float scan of them (the floor of any
    Python tool: the interpreter's start and the reading); then the CPU seconds of the
    perfbot process."""
    with tempfile.TemporaryDirectory() as tmp:
        for side, files in (("base", base_files), ("head", head_files)):
            for file in files:
                target = Path(tmp, side, file.path)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(file.data)
        command = [sys.executable, "-m", "perfbot", "compare", tmp, "--exit-zero"]
        start, used = time.perf_counter(), _children_cpu()
        subprocess.run([*command, "--markdown", str(Path(tmp, "out.md"))], check=True)
        perfbot, perfbot_cpu = time.perf_counter() - start, _children_cpu() - used
        scan = (
            "import pathlib, re; pattern = re.compile(rb'ZPERF-RESULT ([A-Za-z0-9_]+)=([0-9.]+)')\n"
            f"for path in pathlib.Path({tmp!r}).rglob('*.log'):\n"
            "    [float(m.group(2)) for m in pattern.finditer(path.read_bytes())]"
        )
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", scan], check=True)
        bare = time.perf_counter() - start
    return perfbot, bare, perfbot_cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def comment_digest(body: str) -> str:
    """The comment's bytes in short, so that two commits' runs (bench/against.py) show at
    a glance whether a speed-up changed a verdict or a word of the comment."""
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every figure")
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
    print(
        f"case: {PLATFORMS} platforms x {METRICS:,} metrics, base and head "
        f"({total_bytes / 1e6:.1f} MB of zperf logs)"
    )
    totals, ratios, processes, process_ratios = [], [], [], []
    cpu_totals: list[float] = []
    cpu_processes: list[float] = []
    for round_number in range(1, args.rounds + 1):
        baseline = best_of(args.repeat, lambda: bare_line_scan(base_files + head_files))
        t_parse = best_of(args.repeat, parse)
        t_compare = best_of(args.repeat, compare_sides)
        t_render = best_of(args.repeat, render_comment)
        t_total = best_of(args.repeat, everything, cpu_totals)
        perfbot, bare, perfbot_cpu = whole_process(base_files, head_files)
        cpu_processes.append(perfbot_cpu)
        totals.append(t_total)
        ratios.append(t_total / baseline)
        processes.append(perfbot)
        process_ratios.append(perfbot / bare)
        print(
            f"  round {round_number}: parse {t_parse * 1000:.0f} ms, compare "
            f"{t_compare * 1000:.0f} ms, render {t_render * 1000:.0f} ms, total "
            f"{t_total * 1000:.0f} ms (CPU {cpu_totals[-1] * 1000:.0f} ms; "
            f"{t_total / baseline:.0f}x the bare regex+float scan, "
            f"{baseline * 1000:.1f} ms); whole process `perfbot compare` {perfbot * 1000:.0f} ms "
            f"(CPU {perfbot_cpu * 1000:.0f} ms; "
            f"{perfbot / bare:.1f}x a bare Python process scanning the same files, "
            f"{bare * 1000:.0f} ms)"
        )
    metrics = sum(len(p.metrics) for p in state["comparison"].platforms)
    print(
        f"  {metrics:,} compared metrics in process: median total "
        f"{statistics.median(totals) * 1000:.0f} ms (target <= 500 ms; CPU "
        f"{statistics.median(cpu_totals) * 1000:.0f} ms), "
        f"{statistics.median(ratios):.0f}x the bare scan; comment "
        f"{len(state['body'].encode()):,} bytes, sha256 {comment_digest(state['body'])}"
    )
    print(
        f"  whole process `perfbot compare`: median {statistics.median(processes) * 1000:.0f} ms"
        f" (target <= 1000 ms; CPU {statistics.median(cpu_processes) * 1000:.0f} ms), "
        f"{statistics.median(process_ratios):.1f}x the bare process"
    )
    print(f"  peak Python memory {peak_mib(everything):.1f} MiB")

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
