"""Run a benchmark on an older commit and on this checkout, alternately, in one run.

A change that "makes nothing slower" is shown so: the same bench script, the same
machine, the same minutes, old and new taking turns (so that a busy neighbour slows
both alike). The older commit is checked out into a temporary git worktree beside a link
to ``../shared`` (as the tests expect) and run with this virtual environment; each run's
own output is printed under its label, round by round.

Run: .venv/bin/python bench/against.py REV [--rounds N] -- bench/engine.py [ARGS...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def checkout(rev: str, scratch: Path) -> Path:
    """A worktree of ``rev`` at ``scratch/main``, with ``scratch/shared`` beside it."""
    tree = scratch / "main"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), rev],
        check=True,
    )
    (scratch / "shared").symlink_to(ROOT.parent / "shared")
    (tree / ".venv").symlink_to(ROOT / ".venv")
    return tree


def run(tree: Path, script: list[str]) -> str:
    """The bench's output, run from ``tree`` with ``tree`` first on the import path."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, *script],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
        return f"(exited {done.returncode})\n" + "\n".join(tail)
    return done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="the older commit (any git revision)")
    parser.add_argument("--rounds", type=int, default=2, help="turns each (default 2)")
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        parser.error("name the bench to run after --, e.g. -- bench/engine.py")
    split = argv.index("--")
    args = parser.parse_args(argv[:split])
    script = argv[split + 1 :]
    old_name = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", args.rev],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="perfbot-against-") as scratch:
        old = checkout(args.rev, Path(scratch))
        try:
            for turn in range(1, args.rounds + 1):
                for label, tree in ((f"old ({old_name})", old), ("new (this checkout)", ROOT)):
                    print(f"=== round {turn}, {label}: {' '.join(script)}", flush=True)
                    print(run(tree, script), flush=True)
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
