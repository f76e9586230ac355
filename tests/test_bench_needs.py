"""A bench that needs a tool the machine lacks says so in one sentence, not a traceback:
bench/ingest.py without wrk on the PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO


def test_the_ingest_bench_without_wrk_says_what_it_needs(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "ingest.py"), "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PATH": str(empty)},
        cwd=REPO,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "bench/ingest.py needs wrk to load the servers: install it (apt-get install -y wrk)"
        " and run it again."
    ]
