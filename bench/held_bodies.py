"""Held webhook bodies against ``perfbot serve``: memory, and how long until cut off.

Starts ``perfbot serve`` (one process, SQLite, the fake GitHub) on loopback, then opens
N connections per variant of ``tests/held_bodies.py`` (24 MiB bodies, declared or
chunked, malformed or well-formed but wrong signatures, all held before their end; and
4 MiB bodies held one byte short), and F per flood variant (connections that send
nothing; heads with a well-formed signature and no body; 256 KiB declared, held after
64 KiB). Once every sender has sent what it will, it sends signed deliveries one after
another. Prints perfbot's RSS before, its peak (VmHWM) and its RSS after, when the last
held connection was closed by perfbot, and what the signed deliveries were answered.

    .venv/bin/python bench/held_bodies.py [--per-variant 12] [--flood 300] [--source DIR]

``--source DIR`` runs the perfbot package found in DIR instead (e.g. an older commit:
``git archive <rev> perfbot | tar -x -C DIR``) against the same attack.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from perfbot.sandbox.fakegithub import serve
from tests.harness import World, perfbot_process, settings_env, wait_until
from tests.held_bodies import FLOOD_VARIANTS, MIB, VARIANTS, rss_bytes, start_senders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-variant", type=int, default=12)
    parser.add_argument("--flood", type=int, default=300, help="connections per flood variant")
    parser.add_argument("--deliveries", type=int, default=5, help="signed deliveries sent")
    parser.add_argument("--spacing", type=float, default=1.0, help="seconds between them")
    parser.add_argument("--wait", type=float, default=60.0, help="seconds to wait for closes")
    parser.add_argument("--source", type=Path, help="a directory holding another perfbot/")
    args = parser.parse_args()
    extra = {"PYTHONPATH": str(args.source.resolve())} if args.source else {}
    world = World.create()
    run = world.measured_run(world.pull(7, "a" * 40), 1001)
    with tempfile.TemporaryDirectory() as tmp, serve(world.fake) as fake:
        env = {**settings_env(fake.api_url, Path(tmp) / "perfbot.db"), **extra}
        with perfbot_process(env, Path(tmp) / "perfbot.log") as bot:
            port = int(str(bot.client.base_url).rsplit(":", 1)[1].rstrip("/"))
            pid = bot.process.pid
            before = rss_bytes(pid)
            started = time.monotonic()
            senders = start_senders(port, args.per_variant)
            senders += start_senders(port, args.flood, FLOOD_VARIANTS)
            # Every sender is under way (or done, or cut off) before GitHub's turn.
            wait_until(lambda: all(s.sent or not s.thread.is_alive() for s in senders), 30)
            sent_at = time.monotonic() - started
            statuses: list[str] = []
            for n in range(args.deliveries):
                if n:
                    time.sleep(args.spacing)  # spread over the time the flood holds
                body, headers = world.delivery(run, delivery_id=f"real-{n}")
                try:
                    response = bot.client.post("/webhook", content=body, headers=headers)
                    statuses.append(str(response.status_code))
                except OSError as exc:
                    statuses.append(f"failed: {exc}")
            deadline = started + args.wait
            closed = [s.wait_closed(deadline) for s in senders]
            peak, after = rss_bytes(pid, "VmHWM"), rss_bytes(pid)
            for sender in senders:
                sender.close()
    print(f"perfbot from {args.source or 'this checkout'}; {len(senders)} held connections")
    print(f"  variants: {', '.join(v.name for v in VARIANTS)} ({args.per_variant} each)")
    print(f"  flood: {', '.join(v.name for v in FLOOD_VARIANTS)} ({args.flood} each)")
    print(
        f"  RSS before {before / MIB:.0f} MiB, peak {peak / MIB:.0f} MiB "
        f"(+{(peak - before) / MIB:.0f} MiB), after {after / MIB:.0f} MiB"
    )
    open_ = sum(1 for c in closed if c is None)
    if open_:
        print(f"  {open_} of {len(senders)} connections still open after {args.wait:g} s")
    else:
        last = max(c for c in closed if c is not None) - started
        print(f"  every connection closed by perfbot; the last {last:.1f} s after the attack began")
    print(
        f"  signed deliveries, from {sent_at:.1f} s after the attack began, "
        f"{args.spacing:g} s apart: {', '.join(statuses)}"
    )


if __name__ == "__main__":
    main()
