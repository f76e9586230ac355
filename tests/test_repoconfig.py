"""resolve_config(): parsing, validation, org/repo merge, opt-outs and hostile YAML."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot.app.configfile import MAX_ERROR_CHARS, resolve_config
from perfbot.app.repoconfig import ConfigResult, RepoConfig, WatchConfig
from perfbot.engine.judge.compare import MetricRule, Policy
from perfbot.model import Better

REPO = ".github/perfbot.yml"
ORG = "<org>/.github: .github/perfbot.yml"
DEFAULTS = RepoConfig()


def repo_only(text: str, name: str = "net-stack") -> ConfigResult:
    return resolve_config(text, None, name)


def assert_well_formed(errors: tuple[str, ...]) -> None:
    for error in errors:
        assert "\n" not in error
        assert "\r" not in error
        assert len(error) <= MAX_ERROR_CHARS
        assert error.isprintable()
        assert "Traceback" not in error


# --- defaults and every key ------------------------------------------------------------------


def test_defaults_without_any_file() -> None:
    result = resolve_config(None, None, "net-stack")
    assert result == ConfigResult(RepoConfig(), (), False)
    config = result.repo_config
    assert config.enabled is True
    assert config.workflows == ()
    assert (config.report_artifact, config.pr_number_artifact) == ("perf-report", "pr-number")
    assert (config.threshold, config.tolerance) == (1.0, 5.0)
    assert config.metrics == ()
    assert config.rerun_permission == "write"
    assert config.mute_label == "perfbot: mute"
    assert config.check_run is True
    assert config.fail_on_regression is False
    assert config.confirm is True
    assert config.policy() == Policy(1.0, 5.0, ())


@pytest.mark.parametrize("text", ["", "\n\n", "# just a comment\n", "null", "~", "---\n"])
def test_empty_file_sets_nothing(text: str) -> None:
    assert repo_only(text) == ConfigResult(RepoConfig(), (), False)


def test_every_key_is_read() -> None:
    text = """
enabled: false
workflows: [net-perf, .github/workflows/bench.yml]
artifacts:
  report: bench-results
  pr_number: the-pr
threshold: 2.5
tolerance: 10
metrics:
  "*_mbps": {better: higher, threshold: 3}
  "latency_*": {better: lower, tolerance: 20, ignore: false}
  "debug_*": {ignore: true}
rerun:
  permission: maintain
mute_label: "no perf"
check_run: false
fail_on_regression: true
"""
    result = repo_only(text)
    assert result.errors == ()
    assert result.repo_config == RepoConfig(
        enabled=False,
        workflows=("net-perf", ".github/workflows/bench.yml"),
        report_artifact="bench-results",
        pr_number_artifact="the-pr",
        threshold=2.5,
        tolerance=10.0,
        metrics=(
            MetricRule("*_mbps", better=Better.HIGHER, threshold=3.0),
            MetricRule("latency_*", better=Better.LOWER, tolerance=20.0),
            MetricRule("debug_*", ignore=True),
        ),
        rerun_permission="maintain",
        mute_label="no perf",
        check_run=False,
        fail_on_regression=True,
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("workflows: net-perf.yml", {"workflows": ("net-perf.yml",)}, id="one-wf"),
        pytest.param("workflows: []", {"workflows": ()}, id="no-wf-means-all"),
        pytest.param("threshold: 0", {"threshold": 0.0}, id="zero"),
        pytest.param("threshold: 2%", {"threshold": 2.0}, id="percent-sign"),
        pytest.param("tolerance: '7.5 %'", {"tolerance": 7.5}, id="percent-sign-space"),
        pytest.param("rerun: {permission: Admin}", {"rerun_permission": "admin"}, id="case"),
        pytest.param("rerun: {permission: triage}", {"rerun_permission": "triage"}, id="triage"),
        pytest.param("check_run: no", {"check_run": False}, id="yaml-1.1-bool"),
        pytest.param("confirm: false", {"confirm": False}, id="confirm-off"),
        pytest.param("artifacts: {report: r}", {"report_artifact": "r"}, id="one-artifact"),
        pytest.param("threshold:\nmute_label: ~", {}, id="null-values-are-unset"),
    ],
)
def test_single_key(text: str, expected: dict[str, Any]) -> None:
    result = repo_only(text)
    assert result.errors == ()
    assert result.repo_config == dataclasses.replace(DEFAULTS, **expected)


# --- workflows ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "name", "path", "matches"),
    [
        ("Network perf", "Network perf", ".github/workflows/net-perf.yml", True),
        ("network perf", "Network perf", ".github/workflows/net-perf.yml", False),
        (".github/workflows/net-perf.yml", "Network perf", ".github/workflows/net-perf.yml", True),
        ("net-perf.yml", "Network perf", ".github/workflows/net-perf.yml", True),
        ("net-perf", "Network perf", ".github/workflows/net-perf.yml", False),
        ("perf.yml", "Network perf", ".github/workflows/net-perf.yml", False),
        ("workflows/net-perf.yml", "Network perf", ".github/workflows/net-perf.yml", False),
        ("ci.yml", "CI", ".github/workflows/net-perf.yml", False),
    ],
)
def test_workflow_matching(entry: str, name: str, path: str, matches: bool) -> None:
    config = RepoConfig(workflows=(entry, "unrelated.yml"))
    assert config.matches_workflow(name, path) is matches


def test_no_workflows_listed_matches_every_workflow() -> None:
    assert RepoConfig().matches_workflow("anything", ".github/workflows/anything.yml")


def test_an_empty_path_does_not_match_by_file_name() -> None:
    config = RepoConfig(workflows=("net-perf.yml",))
    assert not config.matches_workflow("", "")


# --- metric rules ------------------------------------------------------------------------


def test_metric_rules_compile_into_a_policy() -> None:
    text = """
threshold: 2
tolerance: 8
metrics:
  "*": {threshold: 3}
  "*_ms": {better: lower, tolerance: 15}
  "p99_ms": {threshold: 10}
  "debug.*": {ignore: true}
"""
    policy = repo_only(text).repo_config.policy()
    assert policy.resolve("tcp4_mbps") == (None, 3.0, 8.0, False)
    assert policy.resolve("p50_ms") == (Better.LOWER, 3.0, 15.0, False)
    # A later rule overrides what it sets and keeps what earlier ones set.
    assert policy.resolve("p99_ms") == (Better.LOWER, 10.0, 15.0, False)
    assert policy.resolve("debug.alloc") == (None, 3.0, 8.0, True)


def test_metric_rule_with_nothing_under_it_sets_nothing() -> None:
    result = repo_only('metrics:\n  "*_ms":\n  "x": {better: lower}')
    assert result.errors == ()
    assert result.repo_config.metrics == (MetricRule("x", better=Better.LOWER),)


# --- org and repo ------------------------------------------------------------------------


def test_repo_values_override_org_values_key_by_key() -> None:
    org = "threshold: 2\ntolerance: 8\nmute_label: org-mute\nartifacts: {report: org-report}"
    repo = "threshold: 3\nartifacts: {pr_number: repo-pr}"
    result = resolve_config(repo, org, "net-stack")
    assert result.errors == ()
    assert result.repo_config == dataclasses.replace(
        DEFAULTS,
        threshold=3.0,
        tolerance=8.0,
        mute_label="org-mute",
        report_artifact="org-report",
        pr_number_artifact="repo-pr",
    )


def test_repo_metric_rules_come_after_org_rules_so_they_win() -> None:
    org = 'metrics:\n  "*_ms": {better: lower, threshold: 4}\n  "*": {tolerance: 9}'
    repo = 'metrics:\n  "rtt_ms": {threshold: 1}'
    result = resolve_config(repo, org, "net-stack")
    assert [rule.pattern for rule in result.repo_config.metrics] == ["*_ms", "*", "rtt_ms"]
    policy = result.repo_config.policy()
    assert policy.resolve("rtt_ms") == (Better.LOWER, 1.0, 9.0, False)
    assert policy.resolve("jitter_ms") == (Better.LOWER, 4.0, 9.0, False)


def test_bad_repo_value_falls_back_to_the_org_value() -> None:
    result = resolve_config("threshold: lots\ntolerance: 6", "threshold: 2.5", "net-stack")
    assert result.repo_config.threshold == 2.5
    assert result.repo_config.tolerance == 6.0
    assert result.errors == (f"{REPO}: `threshold` must be a number ≥ 0, got 'lots'; using 2.5",)


def test_bad_repo_metrics_keep_the_org_rules() -> None:
    result = resolve_config("metrics: [a, b]", 'metrics: {"*": {ignore: true}}', "net-stack")
    assert result.repo_config.metrics == (MetricRule("*", ignore=True),)
    assert len(result.errors) == 1


def test_errors_of_both_files_name_their_file() -> None:
    result = resolve_config("tolerance: -1", "threshold: high", "net-stack")
    assert result.errors == (
        f"{ORG}: `threshold` must be a number ≥ 0, got 'high'; using 1",
        f"{REPO}: `tolerance` must be a number ≥ 0, got -1; using 5",
    )
    assert result.repo_config == DEFAULTS


def test_org_disabled_is_off_unless_the_repo_turns_itself_on() -> None:
    assert resolve_config(None, "enabled: false", "r").repo_config.enabled is False
    assert resolve_config("threshold: 2", "enabled: false", "r").repo_config.enabled is False
    on = resolve_config("enabled: true", "enabled: false", "r")
    assert on.repo_config.enabled is True
    assert on.excluded_by_org is False


def test_repo_can_disable_itself() -> None:
    result = resolve_config("enabled: false", "enabled: true", "r")
    assert result.repo_config.enabled is False
    assert result.excluded_by_org is False


@pytest.mark.parametrize(
    ("exclude", "repo_name", "excluded"),
    [
        ('["legacy-*"]', "legacy-net", True),
        ('["legacy-*"]', "net-legacy", False),
        ('["legacy-*"]', "Legacy-Net", True),
        ('["legacy-*"]', "acme/legacy-net", True),
        ('["acme/legacy-net"]', "legacy-net", True),
        ('["docs", "www"]', "www", True),
        ('["docs", "www"]', "www2", False),
        ("sandbox", "sandbox", True),
        ("[]", "sandbox", False),
    ],
)
def test_org_exclude(exclude: str, repo_name: str, excluded: bool) -> None:
    result = resolve_config(None, f"exclude: {exclude}", repo_name)
    assert result.errors == ()
    assert result.excluded_by_org is excluded
    assert result.repo_config.enabled is not excluded


def test_org_exclude_wins_over_repo_enabled_true() -> None:
    result = resolve_config("enabled: true\nthreshold: 3", 'exclude: ["legacy-*"]', "legacy-x")
    assert result.excluded_by_org is True
    assert result.repo_config.enabled is False
    assert result.repo_config.threshold == 3.0  # the rest of the file is still read
    assert result.errors == ()


def test_exclude_in_a_repo_file_is_an_error() -> None:
    result = repo_only("exclude: [net-stack]\nthreshold: 4")
    assert result.excluded_by_org is False
    assert result.repo_config.enabled is True
    assert result.repo_config.threshold == 4.0
    assert result.errors == (f"{REPO}: `exclude` only works in the organisation's file; ignored",)


# --- invalid values ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("enabled: 'yes please'", "enabled"),
        ("enabled: 1", "enabled"),
        ("workflows: {a: 1}", "workflows"),
        ("workflows: [ci.yml, 3]", "workflows"),
        ("workflows: ['']", "workflows"),
        ("workflows: [ci.yml, null]", "workflows"),
        ("artifacts: perf", "artifacts"),
        ("artifacts: {report: ''}", "artifacts.report"),
        ("artifacts: {pr_number: [1]}", "artifacts.pr_number"),
        ('artifacts: {report: "a\\nb"}', "artifacts.report"),
        ("threshold: high", "threshold"),
        ("threshold: -1", "threshold"),
        ("threshold: .nan", "threshold"),
        ("threshold: .inf", "threshold"),
        ("threshold: true", "threshold"),
        ("threshold: '%'", "threshold"),
        ("threshold: 0x" + "f" * 400, "threshold"),
        ("tolerance: '-3%'", "tolerance"),
        ("tolerance: [5]", "tolerance"),
        ("metrics: [a, b]", "metrics"),
        ("metrics: {'*': 5}", "metrics.*"),
        ("metrics: {'*': {better: sideways}}", "metrics.*.better"),
        ("metrics: {'*': {threshold: -1}}", "metrics.*.threshold"),
        ("metrics: {'*': {tolerance: x}}", "metrics.*.tolerance"),
        ("metrics: {'*': {ignore: maybe}}", "metrics.*.ignore"),
        ("metrics: {'': {ignore: true}}", "metrics"),
        ("metrics: {7: {ignore: true}}", "metrics"),
        ("rerun: {permission: owner}", "rerun.permission"),
        ("rerun: {permission: 3}", "rerun.permission"),
        ("rerun: write", "rerun"),
        ("mute_label: ''", "mute_label"),
        ("mute_label: " + "x" * 51, "mute_label"),
        ("mute_label: 5", "mute_label"),
        ("check_run: 'no'", "check_run"),
        ("fail_on_regression: 1", "fail_on_regression"),
        ("confirm: sometimes", "confirm"),
    ],
)
def test_invalid_value_is_one_error_and_the_rest_applies(text: str, key: str) -> None:
    if key == "fail_on_regression":
        other, expected = "check_run: false", dataclasses.replace(DEFAULTS, check_run=False)
    else:
        other = "fail_on_regression: true"
        expected = dataclasses.replace(DEFAULTS, fail_on_regression=True)
    result = repo_only(f"{text}\n{other}\n")
    (error,) = result.errors
    assert error.startswith(f"{REPO}: `{key}` must be ")
    assert_well_formed(result.errors)
    config = result.repo_config
    # The bad value left its setting as it was; a rule that lost its only setting is inert.
    assert dataclasses.replace(config, metrics=()) == expected
    assert config.policy().resolve("anything") == (None, 1.0, 5.0, False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("treshold: 2", "unknown key `treshold` ignored (did you mean `threshold`?)"),
        ("colour: blue", "unknown key `colour` ignored"),
        ("1: a", "unknown key `1` ignored"),
        ("null: a", "unknown key `null` ignored"),
        (
            "artifacts: {reprot: x}",
            "unknown key `artifacts.reprot` ignored (did you mean `report`?)",
        ),
        ("rerun: {who: admin}", "unknown key `rerun.who` ignored"),
        ("metrics: {'*': {beter: lower}}", "unknown key `metrics.*.beter` ignored"),
    ],
)
def test_unknown_key_is_named_and_the_rest_applies(text: str, message: str) -> None:
    result = repo_only(f"{text}\ntolerance: 9")
    assert result.errors[0].startswith(f"{REPO}: {message}")
    assert len(result.errors) == 1
    assert result.repo_config.tolerance == 9.0


@pytest.mark.parametrize(
    ("text", "got"),
    [("- a\n- b", "a list"), ("just some words", "'just some words'"), ("42", "42")],
)
def test_top_level_must_be_a_mapping(text: str, got: str) -> None:
    result = repo_only(text)
    assert result.errors == (
        f"{REPO}: the file must be a mapping of settings, got {got}; file ignored",
    )
    assert result.repo_config == DEFAULTS


def test_org_file_that_is_not_a_mapping_is_ignored_and_repo_still_applies() -> None:
    result = resolve_config("threshold: 3", "- exclude\n- net-stack", "net-stack")
    assert result.repo_config == dataclasses.replace(DEFAULTS, threshold=3.0)
    assert result.excluded_by_org is False
    assert result.errors == (
        f"{ORG}: the file must be a mapping of settings, got a list; file ignored",
    )


def test_yaml_syntax_error_names_the_line() -> None:
    result = repo_only("enabled: true\nthreshold: 2\n  tolerance: 3\n")
    assert result.errors == (
        f"{REPO}: not valid YAML (line 3: mapping values are not allowed here); file ignored",
    )
    assert result.repo_config == DEFAULTS  # nothing from a broken file applies, not even line 1


def test_unquoted_glob_gets_a_hint() -> None:
    result = repo_only("metrics:\n  *_ms: {better: lower}\n")
    assert result.errors == (
        f"{REPO}: not valid YAML (line 2: a glob starting with `*` needs quotes); file ignored",
    )


def test_several_documents_are_refused() -> None:
    result = repo_only("threshold: 2\n---\nthreshold: 3\n")
    assert result.repo_config == DEFAULTS
    (error,) = result.errors
    assert "not valid YAML (line 2" in error


def test_value_echo_is_short_and_inert() -> None:
    result = repo_only('threshold: "' + "a" * 100 + '\\a\\e[31m\\u202e"')
    (error,) = result.errors
    assert "a" * 30 not in error
    assert "a" * 29 + "…" in error
    assert_well_formed(result.errors)


def test_errors_per_file_are_capped() -> None:
    result = repo_only("\n".join(f"unknown_{n}: 1" for n in range(25)))
    assert len(result.errors) == 11
    assert result.errors[-1] == f"{REPO}: 15 more problems not shown"


@pytest.mark.parametrize(
    ("key", "count", "limit"),
    [("workflows", 51, 50), ("exclude", 1001, 1000)],
)
def test_list_lengths_are_capped(key: str, count: int, limit: int) -> None:
    text = f"{key}: [" + ", ".join(f"n{n}" for n in range(count)) + "]"
    result = resolve_config(None, text, "n1")
    assert result.errors == (f"{ORG}: `{key}` lists {count} entries, more than {limit}; ignored",)
    assert result.repo_config.workflows == ()
    assert result.excluded_by_org is False


def test_list_at_the_cap_is_accepted() -> None:
    text = "workflows: [" + ", ".join(f"w{n}" for n in range(50)) + "]"
    assert len(repo_only(text).repo_config.workflows) == 50


def test_metric_rules_are_capped() -> None:
    rules = ", ".join(f"m{n}: {{ignore: true}}" for n in range(201))
    result = repo_only(f"metrics: {{{rules}}}\ntolerance: 6")
    assert result.errors == (f"{REPO}: `metrics` has 201 rules, more than 200; ignored",)
    assert result.repo_config.metrics == ()
    assert result.repo_config.tolerance == 6.0


# --- hostile YAML ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        '!!python/object/apply:os.system ["{command}"]',
        'threshold: !!python/object/apply:os.system ["{command}"]',
        'metrics: {{"*": !!python/object/apply:subprocess.call [["sh", "-c", "{command}"]]}}',
        'x: !!python/object/new:os.system ["{command}"]',
        "x: !!python/name:os.system",
    ],
)
def test_python_tags_are_refused_and_nothing_runs(
    template: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "pwned"
    result = repo_only(template.format(command=f"echo pwned; touch {marker}"))
    (error,) = result.errors
    assert error.startswith(f"{REPO}: not valid YAML (line 1: the YAML tag `!!python/")
    assert error.endswith("is not allowed); file ignored")
    assert result.repo_config == DEFAULTS
    assert not marker.exists()
    assert "pwned" not in capfd.readouterr().out


def billion_laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    lines.append(f"workflows: *a{levels - 1}")
    return "\n".join(lines)


@pytest.fixture
def nothing_constructed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails the test if PyYAML starts building Python objects from a document.

    An alias bomb is refused by sizing the composed node graph; the proof that it is refused
    *cheaply* is that the expansion (the construction) never starts, not a stopwatch.
    """

    def refuse(*_args: object) -> object:
        raise AssertionError("the document was constructed")

    monkeypatch.setattr(yaml.SafeLoader, "construct_document", refuse)


@pytest.mark.usefixtures("nothing_constructed")
def test_billion_laughs_is_refused_before_it_is_expanded() -> None:
    result = repo_only(billion_laughs(10) + "\nthreshold: 3")  # 9**10 strings if expanded
    assert result.errors == (
        f"{REPO}: more than 10000 values once YAML aliases are expanded; file ignored",
    )
    assert result.repo_config == DEFAULTS


@pytest.mark.usefixtures("nothing_constructed")
def test_merge_key_bomb_is_refused_before_it_is_expanded() -> None:
    lines = ["m0: &m0 {a: 1, b: 2}"]
    for level in range(1, 10):
        refs = ", ".join([f"*m{level - 1}"] * 9)
        lines.append(f"m{level}: &m{level} {{<<: [{refs}], k{level}: 1}}")
    result = repo_only("\n".join(lines))
    assert "aliases are expanded" in result.errors[0]


def test_modest_aliases_are_fine() -> None:
    text = 'common: &c {better: lower, threshold: 3}\nmetrics: {"*_ms": *c, "*_us": *c}'
    result = repo_only(text)
    assert result.errors == (
        f"{REPO}: unknown key `common` ignored (did you mean `comment`?)",
    )  # the anchor's holder is not a setting
    assert result.repo_config.policy().resolve("rtt_us") == (Better.LOWER, 3.0, 5.0, False)


def test_alias_inside_its_own_anchor_is_refused() -> None:
    result = repo_only("workflows: &w [ci, *w]")
    assert result.errors == (f"{REPO}: a YAML alias refers to itself; file ignored",)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 5000 + "]" * 5000,
        "metrics: " + "{a: " * 3000 + "1" + "}" * 3000,
        "[" * 20000,
    ],
    ids=["list", "mapping", "unclosed"],
)
def test_deep_nesting_is_an_error_not_a_crash(text: str) -> None:
    result = repo_only(text)
    assert result.errors == (f"{REPO}: YAML nested too deeply; file ignored",)
    assert result.repo_config == DEFAULTS


@pytest.mark.parametrize(
    "text",
    [
        "!!timestamp not-a-date",
        "threshold: !!int abc",
        "threshold: " + "9" * 5000,
        "threshold: !!binary 'é'",
        "? [1, 2]\n: c",
        "\x00",
        "threshold: 2\ud800",
    ],
)
def test_yaml_that_breaks_the_loader_is_an_error(text: str) -> None:
    result = repo_only(text)
    assert len(result.errors) == 1
    assert result.errors[0].endswith("file ignored")
    assert_well_formed(result.errors)
    assert result.repo_config == DEFAULTS


def test_size_cap() -> None:
    padding = "# " + "x" * 100 + "\n"
    at_cap = "threshold: 3\n" + padding * ((64 * 1024 - 13) // len(padding))
    at_cap += "#" * (64 * 1024 - len(at_cap.encode()))
    assert len(at_cap.encode()) == 64 * 1024
    assert repo_only(at_cap) == ConfigResult(dataclasses.replace(DEFAULTS, threshold=3.0))
    for over in (at_cap + "#", at_cap[:-1] + "é"):  # bytes count, not characters
        result = repo_only(over)
        assert result.errors == (f"{REPO}: file larger than 64 KiB; ignored",)
        assert result.repo_config == DEFAULTS


def test_oversized_text_is_refused_without_reading_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object) -> None:
        raise AssertionError("the oversized text reached the YAML reader")

    monkeypatch.setattr(yaml.SafeLoader, "__init__", refuse)
    result = repo_only("threshold: 3\n" + "#" * 50_000_000)
    assert result.errors == (f"{REPO}: file larger than 64 KiB; ignored",)


# --- properties --------------------------------------------------------------------------


def assert_sane(result: ConfigResult) -> None:
    assert_well_formed(result.errors)
    config = result.repo_config
    for value in (config.threshold, config.tolerance):
        assert isinstance(value, float)
        assert math.isfinite(value)
        assert value >= 0
    assert config.rerun_permission in ("triage", "write", "maintain", "admin")
    assert all(isinstance(name, str) and name.strip() for name in config.workflows)
    assert 0 < len(config.mute_label) <= 50
    assert isinstance(config.policy(), Policy)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_never_raises(text: str) -> None:
    assert_sane(resolve_config(text, text, "net-stack"))


KEYS = st.sampled_from(
    [
        "enabled",
        "workflows",
        "artifacts",
        "report",
        "pr_number",
        "threshold",
        "tolerance",
        "metrics",
        "better",
        "ignore",
        "rerun",
        "permission",
        "mute_label",
        "check_run",
        "fail_on_regression",
        "exclude",
        "*_ms",
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=60)
    | st.sampled_from(["higher", "lower", "admin", "2%", "net-perf.yml", "-1"])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=8), st.dictionaries(KEYS, VALUES, max_size=8))
def test_any_shaped_settings_never_raise(repo: dict[str, object], org: dict[str, object]) -> None:
    result = resolve_config(yaml.safe_dump(repo), yaml.safe_dump(org), "net-stack")
    assert_sane(result)


def test_errors_stay_one_short_line_whatever_the_file_name() -> None:
    result = resolve_config("threshold: x", None, "r", repo_path="deep/\n" * 60 + "perfbot.yml")
    (error,) = result.errors
    assert_well_formed(result.errors)
    assert error.startswith("deep/ deep/")
    assert error.endswith("…")


def test_overlong_names_are_refused() -> None:
    result = repo_only(f"workflows: [{'w' * 201}]\nmute_label: quiet")
    (error,) = result.errors
    assert error.startswith(f"{REPO}: `workflows` must be a list of non-empty strings, got 'www")
    assert result.repo_config == dataclasses.replace(DEFAULTS, mute_label="quiet")


# --- platforms ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("platforms: [qemu_x86, qemu_x86_64/atom]", ("qemu_x86", "qemu_x86_64/atom")),
        ("platforms: qemu_x86", ("qemu_x86",)),
        ("platforms: []", ()),
    ],
)
def test_platforms_lists_the_platforms_to_report(text: str, expected: tuple[str, ...]) -> None:
    result = repo_only(text)
    assert result.errors == ()
    assert result.repo_config.platforms == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "platforms: {qemu_x86: true}",
            "`platforms` must be a list of non-empty strings, got a mapping",
        ),
        ("platforms: [qemu_x86, 3]", "`platforms` must be a list of non-empty strings, got 3"),
        ("platforms: ['']", "`platforms` must be a list of non-empty strings, got ''"),
        ("platform: [qemu_x86]", "unknown key `platform` ignored (did you mean `platforms`?)"),
    ],
)
def test_bad_platforms_are_named_and_ignored(text: str, message: str) -> None:
    result = resolve_config("platforms: [org_board]\n", None, "r")
    assert result.repo_config.platforms == ("org_board",)
    result = resolve_config(text, "platforms: [org_board]", "net-stack")
    (error,) = result.errors
    assert message in error
    assert_well_formed(result.errors)
    assert result.repo_config.platforms == ("org_board",)  # the org's value, as for every key


# --- the default branch's watch ----------------------------------------------------------------


def test_the_watch_follows_the_operator_unless_the_repository_says() -> None:
    default = repo_only("").repo_config.watch
    assert default == WatchConfig()
    assert (default.on(operator_default=True), default.on(operator_default=False)) == (True, False)
    off = repo_only("watch: false").repo_config.watch
    assert not off.on(operator_default=True)
    on = repo_only("watch: true").repo_config.watch
    assert on.on(operator_default=False)


def test_watch_settings_are_read_and_a_mapping_turns_it_on() -> None:
    text = "watch:\n  metrics: ['udp*', '*receiver_mbps']\n  min_change: 3\n  issues: false\n"
    result = repo_only(text)
    assert result.errors == ()
    watch = result.repo_config.watch
    assert watch == WatchConfig(True, ("udp*", "*receiver_mbps"), 3.0, False)
    assert watch.on(operator_default=False)
    assert watch.watched("udp_500M.lost_percent")
    assert watch.watched("tcp_rx.receiver_mbps")
    assert not watch.watched("tcp_rx.retransmits")


def test_a_bad_watch_setting_falls_back_alone() -> None:
    result = repo_only("watch:\n  min_change: -1\n  issues: maybe\n  metrics: [x]\n  when: now\n")
    assert_well_formed(result.errors)
    assert len(result.errors) == 3
    assert any("watch.min_change" in error for error in result.errors)
    assert any("watch.issues" in error for error in result.errors)
    assert any("`watch.when`" in error for error in result.errors)
    assert result.repo_config.watch == WatchConfig(True, ("x",), None, True)


def test_the_org_turns_the_watch_off_and_a_repository_back_on() -> None:
    assert not resolve_config(None, "watch: false", "r").repo_config.watch.on(True)
    assert resolve_config("watch: true", "watch: false", "r").repo_config.watch.on(False)
    kept = resolve_config("threshold: 2", "watch: {metrics: [tcp*]}", "r").repo_config.watch
    assert kept.metrics == ("tcp*",)
