"""The workflow templates in workflows/: their security properties, their scripts, their lints.

The scripts are taken out of the YAML and run the way GitHub runs a ``run:`` step
(``bash --noprofile --norc -eo pipefail``), then perfbot reads what they laid out, so a
template that writes names perfbot maps badly, or hides a failed side, fails here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from perfbot.app.handlers.push import single_side
from perfbot.app.repoconfig import RepoConfig
from perfbot.cli import _parser
from perfbot.engine.read.sides import ReportFile, SideReport, read_side
from tests.iperf3 import HOST
from tests.paths import REPO, shared

WORKFLOWS = REPO / "workflows"
NET_PERF = "net-perf.yml"
IPERF3 = "iperf3-suite.yml"
COMMENT = "perf-comment.yml"
MEASUREMENTS = (NET_PERF, IPERF3)
ALL = (*MEASUREMENTS, COMMENT)

PINNED = re.compile(r"^(?P<action>[\w.-]+/[\w.-]+)@(?P<sha>[0-9a-f]{40})$")
VERSION_COMMENT = re.compile(r"@(?P<sha>[0-9a-f]{40}) # v\d+\.\d+\.\d+$")
ZPERF_LOG = "zephyr-zperf/README-loopback-icount_expected_output.txt"


def load(name: str) -> dict[Any, Any]:
    document = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def triggers(document: dict[Any, Any]) -> dict[str, Any]:
    # YAML 1.1 reads the bare key `on` as the boolean True.
    on = document[True] if True in document else document["on"]
    assert isinstance(on, dict), "the triggers are written as a mapping"
    return on


def jobs(document: dict[Any, Any]) -> dict[str, dict[str, Any]]:
    found = document["jobs"]
    assert isinstance(found, dict)
    return found


def steps(name: str) -> list[dict[str, Any]]:
    return [step for job in jobs(load(name)).values() for step in job.get("steps", [])]


def step_named(name: str, title: str) -> dict[str, Any]:
    matching = [step for step in steps(name) if step.get("name") == title]
    assert len(matching) == 1, f"{name} has one step named {title!r}"
    return matching[0]


def job_env(name: str) -> dict[str, str]:
    (job,) = jobs(load(name)).values()
    return {key: str(value) for key, value in job.get("env", {}).items()}


def uses(name: str, action: str) -> list[dict[str, Any]]:
    return [step for step in steps(name) if str(step.get("uses", "")).startswith(action + "@")]


def run_step(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a ``run:`` script as GitHub's bash shell does, with only the given variables."""
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env={"PATH": os.environ["PATH"], "HOME": str(cwd), "GITHUB_WORKSPACE": str(cwd), **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def read_report(root: Path) -> tuple[SideReport, SideReport]:
    """Both sides of a laid-out report, read the way perfbot reads an artifact."""
    sides = []
    for side in ("base", "head"):
        files = [
            ReportFile(path.relative_to(root / side).as_posix(), path.read_bytes())
            for path in sorted((root / side).rglob("*"))
            if path.is_file()
        ]
        sides.append(read_side(files))
    return sides[0], sides[1]


def test_the_templates_are_the_three_known_ones() -> None:
    assert sorted(p.name for p in WORKFLOWS.glob("*.y*ml")) == sorted(ALL)


@pytest.mark.parametrize("name", MEASUREMENTS)
def test_measurement_workflows_have_a_read_only_token(name: str) -> None:
    document = load(name)
    assert document["permissions"] == {"contents": "read"}
    for job in jobs(document).values():
        assert job.get("permissions", {}) in ({}, {"contents": "read"})


def test_the_comment_workflow_grants_only_what_commenting_needs() -> None:
    document = load(COMMENT)
    assert document["permissions"] == {}, "nothing at workflow level"
    (job,) = jobs(document).values()
    # Comments on a pull request need Pull requests: write (or Issues: write, not needed).
    assert job["permissions"] == {
        "actions": "read",
        "contents": "read",
        "pull-requests": "write",
    }


@pytest.mark.parametrize("name", MEASUREMENTS)
def test_measurement_workflows_run_on_pull_request_once_per_pr(name: str) -> None:
    document = load(name)
    assert set(triggers(document)) == {"pull_request", "push"}
    concurrency = document["concurrency"]
    # A PR's new push cancels its previous run; each push to main has a group of its own.
    assert concurrency["group"] == (
        "${{ github.workflow }}-${{ github.event.pull_request.number || github.sha }}"
    )
    assert concurrency["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"


@pytest.mark.parametrize("name", MEASUREMENTS)
def test_measurement_workflows_measure_pushes_to_the_default_branch(name: str) -> None:
    on = triggers(load(name))
    assert on["push"]["branches"] == ["main"]
    # The same paths as pull requests: main is measured when what PRs are measured for moved.
    assert on["push"].get("paths") == (on["pull_request"] or {}).get("paths")
    assert job_env(name)["EVENT_NAME"] == "${{ github.event_name }}"
    # A push has no pull request: no number is written or uploaded (perfbot expects none).
    for title in ("Write the pull request number", "Upload the pull request number"):
        assert step_named(name, title)["if"].endswith("&& github.event_name == 'pull_request' }}")
    assert step_named(name, "Rebase it onto the target branch")["if"] == (
        "github.event_name == 'pull_request'"
    )


def test_net_perf_runs_for_the_network_paths() -> None:
    paths = triggers(load(NET_PERF))["pull_request"]["paths"]
    for expected in ("subsys/net/**", "drivers/ethernet/**", "samples/net/zperf/**"):
        assert expected in paths


def test_the_comment_workflow_follows_the_measurement_runs_of_pull_requests() -> None:
    document = load(COMMENT)
    on = triggers(document)
    assert set(on) == {"workflow_run"}
    assert on["workflow_run"]["types"] == ["completed"]
    names = {load(name)["name"] for name in MEASUREMENTS}
    assert names <= set(on["workflow_run"]["workflows"])
    (job,) = jobs(document).values()
    assert job["if"] == "github.event.workflow_run.event == 'pull_request'"


def test_the_comment_workflow_never_checks_out_or_downloads() -> None:
    for step in steps(COMMENT):
        action = str(step.get("uses", ""))
        assert not action.startswith("actions/checkout@")
        assert "download-artifact" not in action


@pytest.mark.parametrize("name", ALL)
def test_checkouts_do_not_persist_credentials(name: str) -> None:
    for step in uses(name, "actions/checkout"):
        assert step["with"]["persist-credentials"] is False


@pytest.mark.parametrize("name", ALL)
def test_no_expression_is_expanded_inside_a_script(name: str) -> None:
    scripts = [step["run"] for step in steps(name) if "run" in step]
    assert scripts
    for script in scripts:
        assert "${{" not in script, "values reach scripts through env, never by expansion"


def test_every_action_is_pinned_to_a_commit_with_its_version() -> None:
    shas: dict[str, set[str]] = {}
    for name in ALL:
        text = (WORKFLOWS / name).read_text(encoding="utf-8")
        for step in steps(name):
            if "uses" not in step:
                continue
            match = PINNED.match(step["uses"])
            assert match, f"{name}: {step['uses']} is not pinned to a full commit sha"
            shas.setdefault(match["action"], set()).add(match["sha"])
        for line in text.splitlines():
            if "uses:" in line:
                assert VERSION_COMMENT.search(line), f"{name}: no '# vX.Y.Z' on {line.strip()}"
    assert all(len(pins) == 1 for pins in shas.values()), "one version of each action"


@pytest.mark.parametrize("name", MEASUREMENTS)
def test_measurement_workflows_upload_the_artifacts_perfbot_reads(name: str) -> None:
    defaults = RepoConfig()
    uploads = {step["with"]["name"]: step for step in uses(name, "actions/upload-artifact")}
    assert set(uploads) == {defaults.report_artifact, defaults.pr_number_artifact}
    report = uploads[defaults.report_artifact]["with"]["path"].split()
    assert report == ["perf-report/base", "perf-report/head"]
    assert uploads[defaults.pr_number_artifact]["with"]["path"] == "pr-number/pr-number.txt"
    for step in uploads.values():
        # A failed measurement is still reported, not hidden.
        assert step["if"].startswith("${{ !cancelled()")


@pytest.mark.parametrize("name", MEASUREMENTS)
def test_measuring_steps_are_advisory(name: str) -> None:
    measuring = [s for s in steps(name) if str(s.get("name", "")).startswith(("Measure", "Rebase"))]
    assert measuring
    for step in measuring:
        assert step["continue-on-error"] is True


@pytest.mark.parametrize("name", MEASUREMENTS)
def test_the_pr_number_file_holds_the_number(name: str, tmp_path: Path) -> None:
    step = step_named(name, "Write the pull request number")
    assert job_env(name)["PR_NUMBER"] == "${{ github.event.pull_request.number }}"
    result = run_step(step["run"], tmp_path, {"PR_NUMBER": "4711"})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "pr-number" / "pr-number.txt").read_text() == "4711\n"


def test_perfbot_comment_is_called_with_flags_that_exist() -> None:
    step = step_named(COMMENT, "Post or edit the comment")
    assert step["env"]["RUN_ID"] == "${{ github.event.workflow_run.id }}"
    assert step["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
    command = shlex.split(step["run"].replace('"$RUN_ID"', "987654321"))
    assert command[:2] == ["perfbot", "comment"]
    # The real parser: an unknown or missing flag fails with SystemExit.
    args = _parser().parse_args(command[1:])
    assert args.run_id == 987654321


@pytest.mark.parametrize(
    ("spec", "accepted"),
    [
        ("perfbot[app] @ git+https://github.com/acme/perfbot@" + "a1" * 20, True),
        ("https://example.org/perfbot-0.1.0-py3-none-any.whl#sha256=" + "0" * 64, True),
        ("perfbot[app] @ git+https://github.com/acme/perfbot@main", False),
        ("perfbot[app] @ git+https://github.com/acme/perfbot@v0.1.0", False),
        ("", False),
    ],
)
def test_the_comment_workflow_installs_only_a_pinned_perfbot(
    spec: str, accepted: bool, tmp_path: Path
) -> None:
    script = step_named(COMMENT, "Install perfbot")["run"]
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    # A stand-in for python: records what pip would have installed.
    (fake_bin / "python").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$HOME/pip-args"\n')
    (fake_bin / "python").chmod(0o755)
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        env={
            "PATH": f"{fake_bin}:{os.environ['PATH']}",
            "HOME": str(tmp_path),
            "PERFBOT_PIP_SPEC": spec,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode == 0) is accepted, result.stdout
    installed = tmp_path / "pip-args"
    assert installed.exists() is accepted
    if accepted:
        assert installed.read_text().splitlines()[-1] == spec


def test_net_perf_lays_out_one_file_per_side_and_platform(tmp_path: Path) -> None:
    env = job_env(NET_PERF)
    assert env["PLATFORMS"].split() == ["qemu_x86", "qemu_x86_64"]
    # Three runs printed their results; the head run on qemu_x86 timed out before any.
    for side, platform in (("base", "qemu_x86"), ("base", "qemu_x86_64"), ("head", "qemu_x86_64")):
        run_dir = tmp_path / "twister-out" / side / platform / "qemu_x86_atom" / "zperf"
        run_dir.mkdir(parents=True)
        (run_dir / "handler.log").symlink_to(shared(ZPERF_LOG))
    failed = tmp_path / "twister-out" / "head" / "qemu_x86"
    failed.mkdir(parents=True)
    suite = {"name": "sample.net.zperf.loopback_icount", "status": "failed", "reason": "Timeout"}
    (failed / "twister.json").write_text(json.dumps({"testsuites": [suite]}))

    script = step_named(NET_PERF, "Lay out the report")["run"]
    outcomes = {"REBASE_OUTCOME": "success", "WEST_OUTCOME": "success"}
    result = run_step(script, tmp_path, {"PLATFORMS": env["PLATFORMS"], **outcomes})
    assert result.returncode == 0, result.stderr

    report = tmp_path / "perf-report"
    assert sorted(p.relative_to(report).as_posix() for p in report.rglob("*.*")) == [
        "base/qemu_x86/zperf.log",
        "base/qemu_x86_64/zperf.log",
        "head/qemu_x86/zperf.json",
        "head/qemu_x86_64/zperf.log",
    ]
    base, head = read_report(report)
    assert base.platforms == {"qemu_x86", "qemu_x86_64"}
    assert head.platforms == {"qemu_x86_64"}
    assert ("qemu_x86_64", "tcp4_mbps") in head.series
    assert not base.failures
    assert [(f.platform, f.case, f.reason) for f in head.failures] == [
        ("qemu_x86", "zperf", "twister: failed: Timeout")
    ]


@pytest.mark.parametrize(
    ("rebase", "west", "reason"),
    [
        ("failure", "skipped", "does not rebase cleanly onto its target branch"),
        ("skipped", "skipped", "an earlier step failed"),
        ("success", "failure", "setting up the west workspace failed"),
        ("success", "success", "the zperf run printed no result"),
    ],
)
def test_net_perf_reports_both_sides_when_nothing_could_be_measured(
    rebase: str, west: str, reason: str, tmp_path: Path
) -> None:
    script = step_named(NET_PERF, "Lay out the report")["run"]
    outcomes = {"REBASE_OUTCOME": rebase, "WEST_OUTCOME": west}
    result = run_step(script, tmp_path, {"PLATFORMS": "qemu_x86 qemu_x86_64", **outcomes})
    assert result.returncode == 0, result.stderr
    base, head = read_report(tmp_path / "perf-report")
    for side in (base, head):
        assert not side.series
        assert not side.unreadable
        assert sorted(f.platform for f in side.failures) == ["qemu_x86", "qemu_x86_64"]
        assert all(reason in f.reason for f in side.failures)


def iperf3_cases() -> list[str]:
    return [line.split()[0] for line in job_env(IPERF3)["CASES"].splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("setting", "value", "accepted"),
    [
        (None, None, True),
        ("TARGET", "", False),
        ("TARGET", "--help", False),
        ("PORT", "52o1", False),
        ("PLATFORM", "../elsewhere", False),
        ("PLATFORM", "fpga-vu13p", True),
        ("CASES", "tcp_rx\ntcp_2 -R\n", False),
        ("RUNS", "0", False),
        ("RUNS", "3; rm -rf /", False),
    ],
)
def test_iperf3_refuses_bad_settings_before_measuring(
    setting: str | None, value: str | None, accepted: bool, tmp_path: Path
) -> None:
    env = job_env(IPERF3)
    variables = {"TARGET": "perf-target.lab", "PORT": "5201", "PLATFORM": "lab"}
    variables["CASES"] = env["CASES"]
    variables["RUNS"] = env["RUNS"]
    if setting is not None and value is not None:
        variables[setting] = value
    (tmp_path / "perf-report").mkdir()  # left over from an earlier run
    script = step_named(IPERF3, "Check the settings and the runner")["run"]
    result = run_step(script, tmp_path, variables)
    assert (result.returncode == 0) is accepted, result.stdout
    if accepted:
        assert not (tmp_path / "perf-report").exists()
    else:
        assert result.stdout.startswith("::error::")


def test_iperf3_reports_every_case_of_a_side_that_was_not_measured(tmp_path: Path) -> None:
    env = job_env(IPERF3)
    script = step_named(IPERF3, "Record what was not measured")["run"]
    variables = {"PLATFORM": "lab", "CASES": env["CASES"], "REBASE_OUTCOME": "failure"}
    result = run_step(script, tmp_path, variables)
    assert result.returncode == 0, result.stderr
    base, head = read_report(tmp_path / "perf-report")
    for side in (base, head):
        assert sorted(f.case for f in side.failures) == sorted(iperf3_cases())
        assert {f.platform for f in side.failures} == {"lab"}


def test_iperf3_case_list_is_what_the_template_promises() -> None:
    env = job_env(IPERF3)
    assert env["TARGET"] == "${{ vars.PERFBOT_IPERF3_TARGET }}"
    assert env["RUNS"] == "3"
    lines = [line.split() for line in env["CASES"].splitlines() if line.strip()]
    by_name = {words[0]: words[1:] for words in lines}
    assert by_name["tcp_rx"] == []
    assert by_name["tcp_tx"] == ["-R"]
    assert all("-u" in flags and "-b" in flags for n, flags in by_name.items() if "udp" in n)
    assert any("--bidir" in flags for flags in by_name.values())
    assert all(not re.search(r"_\d+$", name) for name in by_name), "no name looks like a run"
    (job,) = jobs(load(IPERF3)).values()
    assert job["runs-on"][0] == "self-hosted"
    # The same-repository guard: forks' pull requests never reach the self-hosted runner.
    assert job["if"] == (
        "github.event_name == 'push'"
        " || github.event.pull_request.head.repo.full_name == github.repository"
    )


@pytest.mark.slow
def test_iperf3_measures_base_and_reports_a_failed_deploy(
    iperf3_server: int, tmp_path: Path
) -> None:
    env = job_env(IPERF3)
    deploy = tmp_path / "src" / env["DEPLOY"]
    deploy.parent.mkdir(parents=True)
    # The base deploys; the head's build "fails".
    deploy.write_text('#!/bin/sh\n[ "$2" = base ] || exit 3\n')
    deploy.chmod(0o755)
    script = step_named(IPERF3, "Measure base and head")["run"]
    variables = {
        "TARGET": HOST,
        "PORT": str(iperf3_server),
        "PLATFORM": "lab",
        "DEPLOY": env["DEPLOY"],
        "CASES": env["CASES"].replace("-b 1G", "-b 200M"),  # loopback, one second each
        "RUNS": "1",
        "DURATION": "1",
        "OMIT": "0",
    }
    result = run_step(script, tmp_path, variables)
    assert result.returncode == 0, result.stderr

    base, head = read_report(tmp_path / "perf-report")
    assert not base.unreadable
    assert not base.failures, [f.reason for f in base.failures]
    measured = {metric for platform, metric in base.series if platform == "lab"}
    for case in iperf3_cases():
        throughput = f"{case}.forward_mbps" if "bidir" in case else f"{case}.receiver_mbps"
        assert throughput in measured
    assert not head.series
    assert sorted(f.case for f in head.failures) == sorted(iperf3_cases())
    assert all(
        f.reason == f"not measured: {env['DEPLOY']} failed with status 3" for f in head.failures
    )


def test_the_workflows_pass_actionlint_and_zizmor() -> None:
    result = subprocess.run(
        [str(REPO / "scripts" / "lint-workflows")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"{len(ALL)} file(s), 0 finding(s)" in output
    assert "No findings to report" in output


# --- repeats, turns and the job summary (issue 13 item 7, issue 14 item 9) -------------------

# Templates whose tool is noisy (iperf3, netperf, pktgen, dperf): they repeat each case.
# net-perf's zperf under QEMU icount is deterministic and runs once.
STOCHASTIC = (IPERF3,)
REAL_IPERF3_JSON = REPO / "tests" / "data" / "cli" / "tcp_rx_1.json"


@pytest.mark.parametrize("name", STOCHASTIC)
def test_stochastic_templates_repeat_each_case_at_least_three_times(name: str) -> None:
    assert int(job_env(name)["RUNS"]) >= 3


def test_iperf3_base_and_head_take_turns_run_by_run(tmp_path: Path) -> None:
    env = job_env(IPERF3)
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    # A stand-in iperf3 that says which side is deployed, and prints a real -J output.
    (bin_dir / "iperf3").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$(cat "$HOME/deployed")" >> "{calls}"\n'
        f'cat "{REAL_IPERF3_JSON}"\n'
    )
    (bin_dir / "iperf3").chmod(0o755)
    deploy = tmp_path / "src" / env["DEPLOY"]
    deploy.parent.mkdir(parents=True)
    deploy.write_text('#!/bin/sh\nprintf "%s" "$2" > "$HOME/deployed"\n')
    deploy.chmod(0o755)
    script = step_named(IPERF3, "Measure base and head")["run"]
    variables = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "TARGET": HOST,
        "PORT": "5201",
        "PLATFORM": "lab",
        "DEPLOY": env["DEPLOY"],
        "CASES": env["CASES"],
        "RUNS": env["RUNS"],  # the template's default
        "DURATION": "1",
        "OMIT": "0",
    }
    result = run_step(script, tmp_path, variables)
    assert result.returncode == 0, result.stderr
    cases, runs = len(iperf3_cases()), int(env["RUNS"])
    turns = calls.read_text().split()
    # base, head, base, head…: each turn measures every case once.
    assert turns == [side for _ in range(runs) for side in ("base", "head") for _ in range(cases)]
    base, head = read_report(tmp_path / "perf-report")
    for side in (base, head):
        assert not side.failures
        assert {len(series.samples) for series in side.series.values()} == {runs}


@pytest.mark.parametrize("name", MEASUREMENTS)
def test_the_job_summary_uses_compare_as_the_seed_does(name: str) -> None:
    step = step_named(name, "Summarise the comparison")
    assert step["continue-on-error"] is True
    assert step["if"] == "${{ !cancelled() && steps.perfbot.outputs.installed == 'yes' }}"
    command = shlex.split(step["run"].replace("\\\n", " "))
    assert command[0] == "$RUNNER_TEMP/perfbot/bin/perfbot"
    args = _parser().parse_args(command[1:])  # the real parser: every flag exists
    assert args.job_summary
    assert args.annotate
    assert args.exit_zero
    assert args.base_dir == Path("perf-report")
    install = step_named(name, "Install perfbot for the job summary")
    assert install["continue-on-error"] is True
    assert install["env"] == {"PERFBOT_PIP_SPEC": "${{ vars.PERFBOT_PIP_SPEC }}"}


def test_the_job_summary_step_writes_the_summary_and_never_fails(tmp_path: Path) -> None:
    report = tmp_path / "perf-report"
    log = shared(ZPERF_LOG).read_text()
    for side, text in (("base", log), ("head", log.replace("tcp4_mbps=5.970", "tcp4_mbps=5.0"))):
        (report / side / "qemu_x86").mkdir(parents=True)
        (report / side / "qemu_x86" / "zperf.log").write_text(text)
    (tmp_path / "perfbot" / "bin").mkdir(parents=True)
    (tmp_path / "perfbot" / "bin" / "perfbot").symlink_to(REPO / ".venv" / "bin" / "perfbot")
    summary = tmp_path / "summary.md"
    script = step_named(NET_PERF, "Summarise the comparison")["run"]
    variables = {"RUNNER_TEMP": str(tmp_path), "GITHUB_STEP_SUMMARY": str(summary)}
    result = run_step(script, tmp_path, variables)
    assert result.returncode == 0, result.stderr  # a regression beyond tolerance: still 0
    assert summary.read_text().startswith("<!-- perfbot:report -->")
    commands = [line.split("::")[1] for line in result.stdout.splitlines() if line.startswith("::")]
    assert commands == [
        "notice title=perfbot (qemu_x86)",
        "warning title=perfbot regression (qemu_x86)",
    ]


@pytest.mark.parametrize("name", MEASUREMENTS)
@pytest.mark.parametrize(
    ("spec", "said"),
    [("", "::notice::no job summary"), ("perfbot @ git+https://x/perfbot@main", "::warning::")],
)
def test_the_job_summary_is_skipped_without_a_pinned_perfbot(
    name: str, spec: str, said: str, tmp_path: Path
) -> None:
    script = step_named(name, "Install perfbot for the job summary")["run"]
    output = tmp_path / "output"
    variables = {
        "PERFBOT_PIP_SPEC": spec,
        "GITHUB_OUTPUT": str(output),
        "RUNNER_TEMP": str(tmp_path),
    }
    result = run_step(script, tmp_path, variables)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(said)
    assert not output.exists()  # installed=yes was not written: the summary step is skipped


# --- pushes to the default branch (issue 15 item 2) ------------------------------------------


def push_report_files(report: Path) -> list[ReportFile]:
    """A push run's perf-report directory as the App reads its artifact."""
    return [
        ReportFile(path.relative_to(report).as_posix(), path.read_bytes())
        for path in sorted(report.rglob("*"))
        if path.is_file()
    ]


def test_net_perf_lays_out_head_alone_for_a_push(tmp_path: Path) -> None:
    run_dir = tmp_path / "twister-out" / "head" / "qemu_x86" / "qemu_x86_atom" / "zperf"
    run_dir.mkdir(parents=True)
    (run_dir / "handler.log").symlink_to(shared(ZPERF_LOG))
    script = step_named(NET_PERF, "Lay out the report")["run"]
    outcomes = {"REBASE_OUTCOME": "skipped", "WEST_OUTCOME": "success", "EVENT_NAME": "push"}
    result = run_step(script, tmp_path, {"PLATFORMS": "qemu_x86 qemu_x86_64", **outcomes})
    assert result.returncode == 0, result.stderr
    report = tmp_path / "perf-report"
    assert sorted(p.relative_to(report).as_posix() for p in report.rglob("*.*")) == [
        "head/qemu_x86/zperf.log",
        "head/qemu_x86_64/zperf.json",
    ]
    # As the App reads a push run's artifact: head/ alone, one run.
    side, note = single_side(push_report_files(report))
    assert side is not None
    assert note == ""
    assert ("qemu_x86", "tcp4_mbps") in side.series
    assert [(f.platform, f.reason) for f in side.failures] == [
        ("qemu_x86_64", "the zperf run printed no result (see the workflow log)")
    ]


def test_net_perf_says_why_a_push_was_not_measured(tmp_path: Path) -> None:
    script = step_named(NET_PERF, "Lay out the report")["run"]
    outcomes = {"REBASE_OUTCOME": "skipped", "WEST_OUTCOME": "failure", "EVENT_NAME": "push"}
    result = run_step(script, tmp_path, {"PLATFORMS": "qemu_x86", **outcomes})
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "perf-report" / "base").exists()
    side = read_side(
        [
            ReportFile(
                "qemu_x86/zperf.json",
                (tmp_path / "perf-report/head/qemu_x86/zperf.json").read_bytes(),
            )
        ]
    )
    assert [f.reason for f in side.failures] == [
        "not measured: setting up the west workspace failed (see the workflow log)"
    ]


# What iperf3 3.12 prints with -J when nothing listens (and it exits 0).
REFUSED_JSON = (
    '{"start": {"connected": [], "version": "iperf 3.12", "system_info": "Linux"},'
    ' "intervals": [], "end": {}, "error": "unable to connect to server: Connection refused"}'
)


@pytest.mark.parametrize(("refusals", "tries", "measured"), [(1, 2, True), (9, 3, False)])
def test_iperf3_tries_a_refused_client_again(
    tmp_path: Path, refusals: int, tries: int, measured: bool
) -> None:
    """A server between two clients refuses for a moment: that run is tried again, twice
    at most; a server that stays down is reported with iperf3's own error."""
    env = job_env(IPERF3)
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    # A stand-in iperf3 refused for its first `refusals` calls, then a real -J output.
    (bin_dir / "iperf3").write_text(
        f'#!/bin/sh\necho call >> "{calls}"\n'
        f'if [ "$(wc -l < "{calls}")" -le {refusals} ]; then\n'
        f"  echo '{REFUSED_JSON}'; exit 0\nfi\n"
        f'cat "{REAL_IPERF3_JSON}"\n'
    )
    (bin_dir / "iperf3").chmod(0o755)
    variables = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "TARGET": HOST,
        "PORT": "5201",
        "PLATFORM": "lab",
        "DEPLOY": env["DEPLOY"],
        "CASES": "tcp_rx",
        "RUNS": "1",
        "DURATION": "1",
        "OMIT": "0",
        "EVENT_NAME": "push",
    }
    result = run_step(step_named(IPERF3, "Measure base and head")["run"], tmp_path, variables)
    assert result.returncode == 0, result.stderr
    assert len(calls.read_text().split()) == tries
    report = tmp_path / "perf-report"
    side, _ = single_side(push_report_files(report))
    assert side is not None
    if measured:
        assert not side.failures
        assert ("lab", "tcp_rx.receiver_mbps") in side.series
    else:
        assert not side.series
        assert [f.reason for f in side.failures] == [
            "iperf3 reported an error: unable to connect to server: Connection refused"
        ]


def test_iperf3_measures_a_push_alone_runs_times(tmp_path: Path) -> None:
    env = job_env(IPERF3)
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    (bin_dir / "iperf3").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$(cat "$HOME/deployed")" >> "{calls}"\n'
        f'cat "{REAL_IPERF3_JSON}"\n'
    )
    (bin_dir / "iperf3").chmod(0o755)
    deploy = tmp_path / "src" / env["DEPLOY"]
    deploy.parent.mkdir(parents=True)
    deploy.write_text('#!/bin/sh\nprintf "%s" "$2" > "$HOME/deployed"\n')
    deploy.chmod(0o755)
    variables = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "TARGET": HOST,
        "PORT": "5201",
        "PLATFORM": "lab",
        "DEPLOY": env["DEPLOY"],
        "CASES": env["CASES"],
        "RUNS": env["RUNS"],
        "DURATION": "1",
        "OMIT": "0",
        "EVENT_NAME": "push",
    }
    result = run_step(step_named(IPERF3, "Measure base and head")["run"], tmp_path, variables)
    assert result.returncode == 0, result.stderr
    runs = int(env["RUNS"])
    assert calls.read_text().split() == ["head"] * (runs * len(iperf3_cases()))
    report = tmp_path / "perf-report"
    assert [p.name for p in report.iterdir()] == ["head"]
    # The stop-gap step leaves a push's measured cases alone and adds no base.
    record = step_named(IPERF3, "Record what was not measured")["run"]
    again = run_step(
        record,
        tmp_path,
        {
            "PLATFORM": "lab",
            "CASES": env["CASES"],
            "REBASE_OUTCOME": "skipped",
            "EVENT_NAME": "push",
        },
    )
    assert again.returncode == 0, again.stderr
    assert [p.name for p in report.iterdir()] == ["head"]
    side, _ = single_side(push_report_files(report))
    assert side is not None
    assert not side.failures
    assert {len(series.samples) for series in side.series.values()} == {runs}


def test_iperf3_reports_every_case_of_a_push_that_was_not_measured(tmp_path: Path) -> None:
    env = job_env(IPERF3)
    script = step_named(IPERF3, "Record what was not measured")["run"]
    variables = {"PLATFORM": "lab", "CASES": env["CASES"], "EVENT_NAME": "push"}
    result = run_step(script, tmp_path, {**variables, "REBASE_OUTCOME": "skipped"})
    assert result.returncode == 0, result.stderr
    report = tmp_path / "perf-report"
    assert [p.name for p in report.iterdir()] == ["head"]
    reasons = {
        json.loads(path.read_text())["failures"][0]["reason"] for path in report.rglob("*.json")
    }
    assert reasons == {
        "not measured: the measuring step stopped before this case (see the workflow log)"
    }


def test_a_push_job_summary_shows_the_single_run(tmp_path: Path) -> None:
    head = tmp_path / "perf-report" / "head" / "qemu_x86"
    head.mkdir(parents=True)
    (head / "zperf.log").write_text(shared(ZPERF_LOG).read_text())
    (tmp_path / "perfbot" / "bin").mkdir(parents=True)
    (tmp_path / "perfbot" / "bin" / "perfbot").symlink_to(REPO / ".venv" / "bin" / "perfbot")
    summary = tmp_path / "summary.md"
    step = step_named(NET_PERF, "Summarise the comparison")
    assert step["env"]["REPORT"] == (
        "${{ github.event_name == 'push' && 'perf-report/head' || 'perf-report' }}"
    )
    variables = {
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(summary),
        "REPORT": "perf-report/head",
    }
    result = run_step(step["run"], tmp_path, variables)
    assert result.returncode == 0, result.stderr
    assert "### Measurements: " in summary.read_text()
