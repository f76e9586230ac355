"""Switch one safeguard off at a time and check that the test suite notices.

Each mutant replaces the body of one function in a copy of the checkout (found by its
qualified name with ``ast``, so the mutant survives unrelated edits to the module) and
runs the tests against that copy; a mutant is *killed* when pytest fails. The copy is
put first on ``PYTHONPATH``, so ``perfbot serve`` subprocesses run the mutant too.

    .venv/bin/python scripts/mutants.py            # every mutant; exit 1 if one survives
    .venv/bin/python scripts/mutants.py mute-label # only the named ones
    .venv/bin/python scripts/mutants.py --list

The figure printed last is the kill ratio: killed / applied.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Not copied: caches, the virtual environment and git's own files.
IGNORED = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", "*.db*"
)
# A survivor costs a whole run of these; a killed mutant usually stops within seconds.
TIME_LIMIT_SECONDS = 900


@dataclass(frozen=True)
class Mutant:
    name: str
    what: str  # the safeguard switched off, in words
    path: str  # the module, relative to the checkout
    function: str  # qualified name: "Class.method" or "function"
    body: str  # the replacement body (Python source, unindented); "" with old/new
    tests: tuple[str, ...] = ("tests",)  # what to run; the suite by default
    # Instead of a whole body: this exact text, found once inside the function, becomes
    # ``new`` (one condition or argument switched off, the rest of the body kept).
    old: str = ""
    new: str = ""


MUTANTS = (
    Mutant(
        "mute-label",
        "the PR's mute label is ignored",
        "perfbot/app/repoconfig.py",
        "RepoConfig.mutes",
        "return False",
    ),
    Mutant(
        "deny-list",
        "the operator's PERFBOT_DISABLED_REPOS is ignored",
        "perfbot/app/settings.py",
        "Settings.repo_disabled",
        "return False",
    ),
    Mutant(
        "pull-proof",
        "the PR proof accepts any open PR",
        "perfbot/app/pullproof.py",
        "mismatch",
        'return None if pull.state == "open" else f"PR {pull.number} is {pull.state}"',
    ),
    Mutant(
        "workflows-filter",
        "the workflows: filter accepts every run",
        "perfbot/app/repoconfig.py",
        "RepoConfig.matches_workflow",
        "return True",
    ),
    Mutant(
        "signature",
        "the webhook signature check is skipped",
        "perfbot/app/triage.py",
        "verify_signature",
        "return None",
    ),
    Mutant(
        "unescaped",
        "report text reaches the comment unescaped",
        "perfbot/engine/show/escape.py",
        "text",
        "return value",
    ),
    # Today's verdict and confirm-before-red safeguards (issue 13), each judged by the
    # tests that own it (--pytest overrides).
    Mutant(
        "fork-rows-marked",
        "a fork's report is recorded as trusted, so it teaches the noise model",
        "perfbot/app/measurements.py",
        "report_records",
        "",
        ("tests/test_recording.py", "tests/test_noise_app.py", "tests/test_push_runs.py"),
        old="from_fork = run.head_repo_id != run.repo_id",
        new="from_fork = False",
    ),
    Mutant(
        "fork-rows-learned",
        "the noise history is read with fork rows included",
        "perfbot/app/measurements.py",
        "learned_noise",
        "",
        ("tests/test_learned_noise.py", "tests/test_noise_app.py", "tests/test_push_runs.py"),
        old="exclude_run_id=run.id,",
        new="exclude_run_id=run.id, include_forks=True,",
    ),
    Mutant(
        "own-run-learned",
        "the run being judged is evidence of its own noise",
        "perfbot/app/measurements.py",
        "learned_noise",
        "",
        ("tests/test_learned_noise.py", "tests/test_noise_app.py", "tests/test_confirm.py"),
        old="exclude_run_id=run.id,",
        new="exclude_run_id=None,",
    ),
    Mutant(
        "confirm-fork",
        "a fork's PR is re-run automatically",
        "perfbot/app/confirm.py",
        "request",
        "",
        ("tests/test_confirm.py", "tests/test_confirm_request.py"),
        old="if run.head_repo_id != run.repo_id:",
        new="if False:",
    ),
    Mutant(
        "confirm-once",
        "the once-per-commit lock is taken per run (another run of the commit re-runs too)",
        "perfbot/app/confirm.py",
        "request",
        "",
        ("tests/test_confirm.py", "tests/test_confirm_request.py"),
        # The mark's take alone (its drop names the commit's key too).
        old='_commit_key(run), f"{OWNER}:{run.id}:{run.attempt}", CONFIRM',
        new='_commit_key(run) + str(run.id), f"{OWNER}:{run.id}:{run.attempt}", CONFIRM',
    ),
    Mutant(
        "confirm-retry",
        "a retried job asks GitHub for a second confirming re-run",
        "perfbot/app/confirm.py",
        "request",
        "",
        ("tests/test_confirm_request.py",),
        old="if await ctx.store.mark_holder(next_attempt, now) == OWNER:",
        new="if False:",
    ),
    Mutant(
        "robust-test",
        "the robust test on the medians never moves a metric (one outlier hides a drop)",
        "perfbot/engine/judge/compare.py",
        "_robustly_moved",
        "return False",
        ("tests/test_compare.py", "tests/test_noise.py", "tests/test_noise_app.py"),
    ),
    Mutant(
        "ranks",
        "the rank test always agrees (one outlier run makes a move alone)",
        "perfbot/engine/judge/noise.py",
        "ranks_agree",
        "return True",
        ("tests/test_compare.py", "tests/test_noise.py", "tests/test_noise_app.py"),
    ),
    Mutant(
        "settings",
        "runs with different settings are compared as alike",
        "perfbot/engine/judge/compare.py",
        "_settings_difference",
        'return ""',
        ("tests/test_compare.py", "tests/test_noise.py", "tests/test_cli_baseline.py"),
    ),
    Mutant(
        "single-run",
        "a single stochastic run with no noise knowledge is judged by the floor alone",
        "perfbot/engine/judge/compare.py",
        "_noise_of",
        "return noise_model.DETERMINISTIC",
        ("tests/test_compare.py", "tests/test_noise.py"),
    ),
    Mutant(
        "tailed-single-run",
        "one run against one is called on learned noise with outlier runs, or on a counter",
        "perfbot/engine/judge/compare.py",
        "_tailed",
        "return False",
        ("tests/test_noise.py",),
    ),
    Mutant(
        "confirm-itself",
        "a confirming attempt that reports the confirmed attempt's runs again confirms them",
        "perfbot/engine/judge/judgement.py",
        "_same_runs",
        "return False",
        ("tests/test_confirm.py",),
    ),
    # An older result never replaces a newer one on the PR: one mutant per order.
    Mutant(
        "superseded-attempt",
        "an earlier attempt of the shown run replaces the later attempt's result",
        "perfbot/app/publish.py",
        "superseded",
        "",
        ("tests/test_superseded.py",),
        old="(state.reported_run_attempt or 0) > run.attempt",
        new="False",
    ),
    Mutant(
        "superseded-head",
        "a run of an earlier head replaces the later head's result proven after it",
        "perfbot/app/publish.py",
        "superseded",
        "",
        ("tests/test_superseded.py",),
        old="return state.updated_at > proved_at",
        new="return False",
    ),
    Mutant(
        "sidecar-exit",
        "a non-zero .exit sidecar does not fail its run",
        "perfbot/engine/read/sidecars.py",
        "_failure",
        "return None",
        ("tests/test_report.py",),
    ),
    Mutant(
        "annotation-escape",
        "workflow-command data is not escaped (a metric name can start a command)",
        "perfbot/cli/workflow.py",
        "escape_data",
        "return value",
        ("tests/test_cli_workflow.py",),
    ),
    Mutant(
        "fork-rows-trend",
        "a fork PR's base side is taken as the target branch's trend in the comment",
        "perfbot/store/_series.py",
        "MeasurementsSQL.branch_history",
        "",
        ("tests/store/test_pull_history.py", "tests/test_history_privacy.py"),
        old='"forks": False,',
        new='"forks": True,',
    ),
    # A PR's accepted regressions: who may accept, and how long an acceptance holds.
    Mutant(
        "accept-permission",
        "anyone may /perfbot accept a PR's regressions",
        "perfbot/app/acceptance.py",
        "accept_command",
        "",
        ("tests/test_accept.py",),
        old="if refusal is not None:",
        new="if False:",
    ),
    Mutant(
        "acceptance-forever",
        "an acceptance holds however far the metric regresses from its accepted value",
        "perfbot/engine/judge/acceptance.py",
        "_holds",
        "return True",
        ("tests/test_acceptance.py", "tests/test_accept.py"),
    ),
    Mutant(
        "history-other-repo",
        "a PR's earlier pushes are read from every repository with that PR number",
        "perfbot/store/_series.py",
        "MeasurementsSQL.pull_runs",
        "",
        ("tests/store/test_pull_history.py",),
        old="self._fetch(PULL_RUNS,",
        new='self._fetch(SQL(PULL_RUNS.text.replace("repo_id = :repo AND ", "")),',
    ),
)


# The unmutated copy: it must pass, or a "kill" could be the copy's fault.
CONTROL = Mutant("control", "nothing (the copy as it is)", "", "", "")


def apply(mutant: Mutant, tree: Path) -> None:
    """Replace ``mutant.function``'s body in the copy at ``tree``."""
    module = tree / mutant.path
    source = module.read_text()
    node = _find(ast.parse(source), mutant.function.split("."))
    if node is None:
        raise SystemExit(f"{mutant.name}: {mutant.function} not found in {mutant.path}")
    lines = source.splitlines(keepends=True)
    first, last = node.body[0].lineno - 1, node.body[-1].end_lineno or node.body[-1].lineno
    if mutant.old:
        segment = "".join(lines[first:last])
        if segment.count(mutant.old) != 1:
            raise SystemExit(
                f"{mutant.name}: the text to switch off is not once in {mutant.function}"
            )
        replaced = segment.replace(mutant.old, mutant.new)
        module.write_text("".join([*lines[:first], replaced, *lines[last:]]))
        return
    indent = " " * (node.col_offset + 4)
    body = textwrap.indent(textwrap.dedent(mutant.body).strip() + "\n", indent)
    # A one-line function (``def f(): return x``) keeps its body on the def line.
    if node.body[0].lineno == node.lineno:
        raise SystemExit(f"{mutant.name}: {mutant.function} has its body on the def line")
    module.write_text("".join([*lines[:first], body, *lines[last:]]))


def _find(
    tree: ast.Module | ast.ClassDef, names: list[str]
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and len(names) > 1 and node.name == names[0]:
            return _find(node, names[1:])
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and len(names) == 1
            and node.name == names[0]
        ):
            return node
    return None


def run(mutant: Mutant, python: str) -> tuple[bool, str, float]:
    """(killed, the first failing test or why it survived, seconds)."""
    with tempfile.TemporaryDirectory(prefix=f"perfbot-mutant-{mutant.name}-") as scratch:
        # The copy sits beside a link to ../shared, where the tests look for fixtures.
        tree = Path(scratch) / "main"
        shutil.copytree(ROOT, tree, ignore=IGNORED, symlinks=True)
        (Path(scratch) / "shared").symlink_to(ROOT.parent / "shared")
        # The lint tests run tools from the virtual environment by its relative path.
        (tree / ".venv").symlink_to(ROOT / ".venv")
        # Tests that ask git what is tracked (the deploy kit's secrets) read the index only.
        (tree / ".git").symlink_to(ROOT / ".git")
        if mutant.name != CONTROL.name:
            apply(mutant, tree)
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
        started = time.monotonic()
        try:
            result = subprocess.run(
                [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mutant.tests],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIME_LIMIT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return True, f"timed out after {TIME_LIMIT_SECONDS} s (counted as killed)", 0.0
        seconds = time.monotonic() - started
    if result.returncode == 0:
        return False, "every test passed", seconds
    if result.returncode not in (1,):
        tail = (result.stdout + result.stderr).strip().splitlines()[-3:]
        raise SystemExit(f"{mutant.name}: pytest exited {result.returncode}: {' | '.join(tail)}")
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    return True, failed[0] if failed else "a test failed", seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument(
        "--pytest",
        metavar="ARGS",
        default="",
        help="pytest arguments instead of the whole suite, e.g. --pytest \"-m 'not slow'\"",
    )
    args = parser.parse_args()
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    if args.pytest:
        chosen = [dataclasses.replace(m, tests=tuple(shlex.split(args.pytest))) for m in chosen]
    unknown = set(args.names) - {m.name for m in MUTANTS}
    if unknown:
        parser.error(f"unknown mutant(s): {', '.join(sorted(unknown))}")
    if args.list:
        for mutant in MUTANTS:
            print(f"{mutant.name:18} {mutant.what} ({mutant.path} {mutant.function})")
        return 0
    # The control runs every test any chosen mutant is judged by: each must pass unmutated.
    tests = tuple(dict.fromkeys(test for mutant in chosen for test in mutant.tests))
    control = dataclasses.replace(CONTROL, tests=tests or CONTROL.tests)
    passed, detail, seconds = run(control, sys.executable)
    print(f"{'control':18} {'passed' if not passed else 'FAILED':9} {seconds:6.1f} s  {detail}")
    if passed:
        print("the unmutated copy fails its tests: no mutant can be judged", file=sys.stderr)
        return 2
    killed = 0
    for mutant in chosen:
        dead, detail, seconds = run(mutant, sys.executable)
        killed += dead
        verdict = "killed" if dead else "SURVIVED"
        print(f"{mutant.name:18} {verdict:9} {seconds:6.1f} s  {detail}", flush=True)
    print(f"kill ratio: {killed}/{len(chosen)}")
    return 0 if killed == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
