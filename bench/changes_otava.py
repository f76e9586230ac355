"""Apache Otava 0.8.0 beside perfbot in bench/changes.py, in a virtual environment of its own.

Otava pins numpy 2.2 and brings BigQuery, Slack and PostgreSQL clients: it must never be
a dependency of perfbot, so the bench creates ``<cache>/otava-venv`` once (``python -m
venv`` and ``pip install apache-otava==0.8.0``, as any PyPI package is installed here) and
talks to it through a subprocess: the series go in as JSON, the change points come out.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

OTAVA = "apache-otava==0.8.0"
RUNNER = Path(__file__).with_name("otava_runner.py")
INSTALL_TIMEOUT = 900.0
RUN_TIMEOUT = 3600.0


class OtavaUnavailable(RuntimeError):
    """Otava's environment could not be created or run; the message is one sentence."""


@dataclass(frozen=True, slots=True)
class OtavaAnswer:
    batch: list[list[int]]
    prefix: list[list[int]]
    seconds: list[float]


def python_of(cache: Path) -> Path:
    """Otava's interpreter, the environment created first when it is not there yet."""
    venv = cache / "otava-venv"
    python = venv / "bin" / "python"
    if python.exists() and _has_otava(python):
        return python
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", "--clear", str(venv)],
            check=True,
            capture_output=True,
            timeout=INSTALL_TIMEOUT,
        )
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", OTAVA],
            check=True,
            capture_output=True,
            timeout=INSTALL_TIMEOUT,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise OtavaUnavailable(f"could not install {OTAVA} into {venv} ({_reason(exc)})") from None
    if not _has_otava(python):
        raise OtavaUnavailable(f"{OTAVA} was installed into {venv} but does not import")
    return python


def _has_otava(python: Path) -> bool:
    try:
        result = subprocess.run(
            [str(python), "-c", "import otava.series"],
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0


def _reason(exc: BaseException) -> str:
    if isinstance(exc, subprocess.CalledProcessError):
        lines = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {exc.returncode}"
    return str(exc) or type(exc).__name__


def run(
    python: Path, series: Sequence[Sequence[float]], prefixes: Sequence[tuple[int, int]]
) -> OtavaAnswer:
    request = json.dumps({"series": [list(s) for s in series], "prefixes": list(prefixes)})
    try:
        result = subprocess.run(
            [str(python), str(RUNNER)],
            input=request.encode(),
            capture_output=True,
            check=True,
            timeout=RUN_TIMEOUT,
        )
        answer = json.loads(result.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise OtavaUnavailable(f"Otava did not run ({_reason(exc)})") from None
    return OtavaAnswer(answer["batch"], answer["prefix"], answer["seconds"])
