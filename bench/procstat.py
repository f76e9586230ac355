"""What Linux's /proc says of the benches' processes: CPU time, children, resident set."""

from __future__ import annotations

import os
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (in parentheses, spaces and all)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def children(pid: int) -> list[int]:
    """The live children of ``pid``, of all its threads."""
    return [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]


def serving(pid: int) -> list[int]:
    """The children of ``perfbot serve``'s supervisor that serve: not multiprocessing's
    resource tracker, which it starts beside them."""
    return [
        child
        for child in children(pid)
        if b"resource_tracker" not in Path(f"/proc/{child}/cmdline").read_bytes()
    ]


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a live process and of its live descendants; a
    process that is gone is an error (a descendant that just exited counts nothing)."""
    fields = stat_fields(pid)
    own = (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime
    return own + sum(_descendant_cpu(child) for child in children(pid))


def _descendant_cpu(pid: int) -> float:
    try:
        return process_cpu(pid)
    except FileNotFoundError:  # it exited between the listing and the read
        return 0.0


def rss_kib(pid: int) -> int:
    """The resident set of a live process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise ValueError(f"/proc/{pid}/status has no VmRSS line")
