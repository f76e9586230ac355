"""Tests of the twister.json parser against public fixtures and synthetic zperf suites."""

from __future__ import annotations

import json
from typing import Any

import pytest

from perfbot.engine.read.formats.twister import FORMAT
from perfbot.errors import ParseError
from perfbot.model import Better, FailedCase, Measurement, ParseContext, Parsed
from tests.paths import shared

NCS = "zephyr-twister/ncs-devacademy_build-only_not-run-and-error.twister.json"
UW_PASSED = "zephyr-twister/uw-assignment10_qemu_passed_v3.4.twister.json"
UW_BUILD_ERROR = "zephyr-twister/uw-assignment10_qemu_build-error_v3.4.twister.json"
CONTEXT = ParseContext(path="twister.json", platform="p", case="c")
SCENARIO = "sample.net.zperf.loopback_icount"
ZPERF_RECORDS = (
    ("udp4_mbps", "13.099"),
    ("udp4_frag_mbps", "20.249"),
    ("tcp4_mbps", "5.970"),
    ("tcp4_nodelay_mbps", "5.876"),
    ("udp6_mbps", "13.310"),
    ("udp6_frag_mbps", "20.059"),
    ("tcp6_mbps", "5.979"),
    ("tcp6_nodelay_mbps", "5.910"),
)


def suite(
    platform: str = "qemu_x86/atom",
    name: str = SCENARIO,
    status: str | None = "passed",
    recording: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """A suite shaped like the illustrative zperf suite of formats.md, section 1.3."""
    body: dict[str, Any] = {
        "name": name,
        "arch": "x86",
        "platform": platform,
        "path": "samples/net/zperf",
        "run_id": "0123456789abcdef0123456789abcdef",
        "runnable": True,
        "retries": 0,
        "toolchain": "zephyr",
        "status": status,
        "execution_time": "41.27",
        "build_time": "35.10",
        "testcases": [{"identifier": name, "execution_time": "41.27", "status": status}],
    }
    body.update(extra)
    if recording is not None:
        body["recording"] = recording
    return body


def zperf_recording() -> list[Any]:
    return [{key: value} for key, value in ZPERF_RECORDS]


def twister_json(suites: list[Any]) -> str:
    """The text twister would write: 4-space indent, no space after the colon."""
    report = {
        "environment": {
            "os": "Linux",
            "zephyr_version": "v4.1.0-1234-gabcdef",
            "toolchain": "zephyr",
            "commit_date": "2025-04-23T19:33:12+02:00",
            "run_date": "2025-05-06T06:59:00+00:00",
        },
        "testsuites": suites,
    }
    return json.dumps(report, indent=4, separators=(",", ":"))


def parse(text: str) -> Parsed:
    return FORMAT.parse(text, CONTEXT)


def parse_suites(*suites: Any) -> Parsed:
    return parse(twister_json(list(suites)))


def metrics(parsed: Parsed) -> list[tuple[str, str, float]]:
    return [(m.platform, m.metric, m.value) for m in parsed.measurements]


def read(relative: str) -> str:
    return shared(relative).read_text(encoding="utf-8")


def test_format_identity() -> None:
    assert FORMAT.name == "twister"
    assert FORMAT.reads == "Zephyr twister.json (recordings per suite and platform)"


# --- public fixtures ---------------------------------------------------------------------------


def test_ncs_fixture_six_errors_no_measurements() -> None:
    raw = json.loads(read(NCS))
    statuses = [entry["status"] for entry in raw["testsuites"]]
    assert (len(statuses), statuses.count("not run"), statuses.count("error")) == (231, 225, 6)
    parsed = parse(read(NCS))
    assert parsed.measurements == ()
    assert len(parsed.failures) == 6
    assert all(f.whole_platform for f in parsed.failures)


def test_ncs_fixture_failure_details() -> None:
    first = parse(read(NCS)).failures[0]
    assert first == FailedCase(
        platform="nrf5340dk/nrf5340/cpuapp/ns",
        case="ncs_inter.l9.e4.sol",
        reason="twister: error: RAM overflow but is one of the integration platforms",
        whole_platform=True,
    )


def test_ncs_fixture_reasons_never_carry_the_log() -> None:
    for failure in parse(read(NCS)).failures:
        assert "Loading Zephyr" not in failure.reason
        assert "\n" not in failure.reason
        assert len(failure.reason) <= 200


def test_uw_passed_fixture_has_nothing_to_report() -> None:
    assert parse(read(UW_PASSED)) == Parsed()


def test_uw_build_error_fixture_two_build_failures() -> None:
    parsed = parse(read(UW_BUILD_ERROR))
    assert parsed.measurements == ()
    assert [(f.platform, f.case, f.reason) for f in parsed.failures] == [
        ("qemu_cortex_m0", "lib.custom_lib", "twister: error: Build failure"),
        ("qemu_cortex_m0", "lib.custom_lib.non_default", "twister: error: Build failure"),
    ]


@pytest.mark.parametrize("relative", [NCS, UW_PASSED, UW_BUILD_ERROR])
def test_fixtures_are_sniffed(relative: str) -> None:
    assert FORMAT.sniff(read(relative)[:65536], relative) == 1.0


# --- sniffing ----------------------------------------------------------------------------------


def test_synthetic_report_is_sniffed() -> None:
    text = twister_json([suite(recording=zperf_recording())])
    assert '"status":"passed"' in text
    assert FORMAT.sniff(text, "whatever.json") == 1.0


def test_sniff_does_not_depend_on_spacing() -> None:
    text = '{ "environment" : {}, "testsuites" : [] }'
    assert FORMAT.sniff(text, "t.json") == 1.0


@pytest.mark.parametrize(
    "head",
    [
        "",
        '{"start":{"connected":[]},"intervals":[],"end":{}}',
        '{"testsuites":[]}',
        '{"environment":{}}',
        'log: "testsuites" "environment"',
        '[{"testsuites":[], "environment":{}}]',
        "ZPERF-RESULT udp4_mbps=13.099\nZPERF-DONE\n",
    ],
)
def test_sniff_refuses_other_text(head: str) -> None:
    assert FORMAT.sniff(head, "twister.json") == 0.0


# --- recordings --------------------------------------------------------------------------------


def test_two_platforms_give_sixteen_measurements() -> None:
    parsed = parse_suites(
        suite("qemu_x86/atom", recording=zperf_recording()),
        suite("qemu_x86_64/atom", recording=zperf_recording()),
    )
    expected = [
        (platform, key, float(value))
        for platform in ("qemu_x86/atom", "qemu_x86_64/atom")
        for key, value in ZPERF_RECORDS
    ]
    assert metrics(parsed) == expected
    assert parsed.failures == ()
    assert {m.unit for m in parsed.measurements} == {"Mbps"}
    assert {m.better for m in parsed.measurements} == {Better.HIGHER}


def test_first_measurement_in_full() -> None:
    parsed = parse_suites(suite("qemu_x86/atom", recording=zperf_recording()))
    assert parsed.measurements[0] == Measurement(
        platform="qemu_x86/atom",
        metric="udp4_mbps",
        value=13.099,
        unit="Mbps",
        better=Better.HIGHER,
    )


def test_missing_platform_falls_back_to_context() -> None:
    entry = suite(recording=[{"udp4_mbps": "1.5"}])
    del entry["platform"]
    blank = suite(platform="", recording=[{"tcp4_mbps": "2.5"}])
    assert metrics(parse_suites(entry, blank)) == [("p", "udp4_mbps", 1.5), ("p", "tcp4_mbps", 2.5)]


def test_merge_lists_and_as_json_dicts_are_skipped() -> None:
    recording = [
        {"udp4_mbps": ["13.099", "13.2"], "tcp4_mbps": "5.970"},
        {"stats": {"ERROR": {"msg": "bad", "doc": "{"}}},
        {"empty": "", "flag": True, "nothing": None, "word": "fast"},
        {"count": 7, "ratio": 0.5, "spaced": " 2.5 "},
    ]
    assert metrics(parse_suites(suite(recording=recording))) == [
        ("qemu_x86/atom", "tcp4_mbps", 5.970),
        ("qemu_x86/atom", "count", 7.0),
        ("qemu_x86/atom", "ratio", 0.5),
        ("qemu_x86/atom", "spaced", 2.5),
    ]


def test_junk_recordings_are_ignored() -> None:
    parsed = parse_suites(
        suite(recording=["udp4_mbps=1", 3, None, [{"udp4_mbps": "1"}], {"ok_mbps": "1"}]),
        suite(platform="other", recording={"udp4_mbps": "1"}),
    )
    assert metrics(parsed) == [("qemu_x86/atom", "ok_mbps", 1.0)]


def test_duplicate_key_gives_two_samples() -> None:
    recording = [{"udp4_mbps": "13.099"}, {"udp4_mbps": "13.250"}]
    assert metrics(parse_suites(suite(recording=recording))) == [
        ("qemu_x86/atom", "udp4_mbps", 13.099),
        ("qemu_x86/atom", "udp4_mbps", 13.250),
    ]


def test_same_suite_name_on_one_platform_is_one_suite() -> None:
    parsed = parse_suites(
        suite(recording=[{"udp4_mbps": "1"}]), suite(recording=[{"udp4_mbps": "2"}])
    )
    assert metrics(parsed) == [
        ("qemu_x86/atom", "udp4_mbps", 1.0),
        ("qemu_x86/atom", "udp4_mbps", 2.0),
    ]


def test_colliding_suites_get_prefixed_names() -> None:
    parsed = parse_suites(
        suite(name="samples/net/zperf/sample.a", recording=[{"mbps": "1"}, {"only_a": "3"}]),
        suite(name="samples\\net\\other\\sample.b", recording=[{"mbps": "2"}]),
        suite(platform="elsewhere", name="sample.c", recording=[{"mbps": "4"}]),
    )
    assert metrics(parsed) == [
        ("qemu_x86/atom", "sample.a.mbps", 1.0),
        ("qemu_x86/atom", "only_a", 3.0),
        ("qemu_x86/atom", "sample.b.mbps", 2.0),
        ("elsewhere", "mbps", 4.0),
    ]


def test_collision_names_do_not_depend_on_order() -> None:
    first = suite(name="x/sample.a", recording=[{"tcp4_mbps": "1"}])
    second = suite(name="y/sample.b", recording=[{"tcp4_mbps": "2"}])
    forward = {(m.metric, m.value) for m in parse_suites(first, second).measurements}
    backward = {(m.metric, m.value) for m in parse_suites(second, first).measurements}
    assert forward == backward == {("sample.a.tcp4_mbps", 1.0), ("sample.b.tcp4_mbps", 2.0)}


def test_colliding_suites_with_the_same_short_name_keep_full_names() -> None:
    parsed = parse_suites(
        suite(name="a/sample.x", recording=[{"tcp4_mbps": "1"}]),
        suite(name="b/sample.x", recording=[{"tcp4_mbps": "2"}]),
    )
    assert [m.metric for m in parsed.measurements] == [
        "a/sample.x.tcp4_mbps",
        "b/sample.x.tcp4_mbps",
    ]


def test_direction_comes_from_the_key_not_the_suite_name() -> None:
    parsed = parse_suites(
        suite(name="t/timeout_check", recording=[{"tcp4_mbps": "1"}]),
        suite(name="t/other", recording=[{"tcp4_mbps": "2"}]),
    )
    assert [m.metric for m in parsed.measurements] == [
        "timeout_check.tcp4_mbps",
        "other.tcp4_mbps",
    ]
    assert {m.better for m in parsed.measurements} == {Better.HIGHER}


# --- statuses ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["skipped", "filtered", "not run"])
def test_not_run_statuses_are_ignored(status: str) -> None:
    assert parse_suites(suite(status=status, reason="filtered out")) == Parsed()


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        ("failed", "Testsuite failed", "twister: failed: Testsuite failed"),
        ("error", "Build failure", "twister: error: Build failure"),
        ("timeout", "Timeout", "twister: timeout: Timeout"),
        ("blocked", "dependency", "twister: blocked: dependency"),
        (None, "Unknown Instance status", "twister: no status: Unknown Instance status"),
        ("weird", None, "twister: weird: no reason given"),
    ],
)
def test_other_statuses_fail_the_platform(
    status: str | None, reason: str | None, expected: str
) -> None:
    parsed = parse_suites(
        suite(name="samples/net/zperf/" + SCENARIO, status=status, reason=reason),
        suite(platform="qemu_x86_64/atom", recording=zperf_recording()),
    )
    assert parsed.failures == (
        FailedCase(platform="qemu_x86/atom", case=SCENARIO, reason=expected, whole_platform=True),
    )
    assert {m.platform for m in parsed.measurements} == {"qemu_x86_64/atom"}


def test_failed_suite_recordings_are_not_measurements() -> None:
    parsed = parse_suites(suite(status="failed", reason="Timeout", recording=zperf_recording()))
    assert parsed.measurements == ()
    assert len(parsed.failures) == 1


def test_missing_status_key_is_a_failure() -> None:
    entry = suite()
    del entry["status"]
    (failure,) = parse_suites(entry).failures
    assert failure.reason == "twister: no status: no reason given"


def test_failed_suite_with_megabyte_log_gets_a_short_reason() -> None:
    log = "ZPERF-RESULT udp4_mbps=1.0\n" + "x" * 1_000_000
    parsed = parse_suites(suite(status="failed", reason="Timeout", log=log))
    (failure,) = parsed.failures
    assert failure.reason == "twister: failed: Timeout"


def test_long_multiline_reason_is_cut_to_one_line() -> None:
    reason = "first line\nsecond\tline\x1b[0m " + "y" * 1_000_000
    (failure,) = parse_suites(suite(status="error", reason=reason)).failures
    assert failure.reason.startswith("twister: error: first line second line [0m yyy")
    assert "\n" not in failure.reason
    assert "\x1b" not in failure.reason
    assert len(failure.reason) == 200
    assert failure.reason.endswith("…")


def test_junk_suites_are_ignored() -> None:
    parsed = parse_suites(None, 3, "suite", [], suite(recording=[{"udp4_mbps": "1"}]))
    assert metrics(parsed) == [("qemu_x86/atom", "udp4_mbps", 1.0)]


def test_empty_testsuites() -> None:
    assert parse_suites() == Parsed()


# --- hostile input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        '"testsuites"',
        "null",
        "{}",
        '{"testsuites":{}}',
        '{"testsuites":null}',
        '{"testsuites":"[]"}',
        '{"environment":{},"testsuites":[{"status":"passed","recording":[{"a":NaN}]}]}',
        '{"environment":{},"testsuites":[{"status":"passed","recording":[{"a":Infinity}]}]}',
        '{"testsuites":[' + "[" * 100_000 + "]" * 100_000 + "]}",
        '{"testsuites":[{"recording":[{"a":' + "9" * 5000 + "}]}]}",
        '{"testsuites":[]',
    ],
)
def test_hostile_input_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse(text)
    assert caught.value.format == "twister"
    assert caught.value.path == "twister.json"


def test_overflowing_numbers_are_skipped() -> None:
    text = twister_json([suite(recording=[{"ok": "1"}])]).replace('"1"', '1e999, "b":"1e999"')
    assert '"ok":1e999' in text
    assert parse(text) == Parsed()


def test_big_integer_within_limits_is_skipped_when_not_finite() -> None:
    big = "9" * 400
    text = twister_json([suite(recording=[{"big": 0, "ok": 2}])]).replace('"big":0', f'"big":{big}')
    assert metrics(parse(text)) == [("qemu_x86/atom", "ok", 2.0)]


def test_moderately_nested_junk_suites_are_ignored() -> None:
    text = '{"testsuites":[' + "[" * 100 + "]" * 100 + "]}"
    parsed = FORMAT.parse(text, ParseContext(path="t.json", platform="p", case="c"))
    assert parsed.measurements == ()
    assert parsed.failures == ()
