"""github-action-benchmark's custom format: both shapes, direction by path, broken files."""

from __future__ import annotations

import json
from typing import Any

import pytest

from perfbot.engine.read.formats.action_benchmark import FORMAT, direction_from_path
from perfbot.engine.read.formats.perfbot_json import FORMAT as PERFBOT_JSON
from perfbot.errors import ParseError
from perfbot.model import Better, Measurement, ParseContext, Parsed
from tests.paths import shared


def parse(document: Any, path: str = "bench/output.json", platform: str = "ctx") -> Parsed:
    text = document if isinstance(document, str) else json.dumps(document)
    return FORMAT.parse(text, ParseContext(path=path, platform=platform))


def parse_error(document: Any, path: str = "bench/output.json") -> ParseError:
    with pytest.raises(ParseError) as caught:
        parse(document, path)
    assert caught.value.format == "github-action-benchmark"
    assert caught.value.path == path
    return caught.value


def entry(name: str = "My Bench", value: Any = 1.5, unit: str = "ms") -> dict[str, Any]:
    return {"name": name, "unit": unit, "value": value}


# --- the bare array ------------------------------------------------------------------------


def test_bare_array_is_read_with_range_and_extra_ignored() -> None:
    document = [
        {"name": "throughput", "unit": "Mbps", "value": 941.2, "range": "± 3", "extra": "n=5"},
        {"name": "throughput", "unit": "Mbps", "value": 940},
        {"name": "My Custom Bench (x86)", "unit": "", "value": 0},
    ]
    assert parse(document).measurements == (
        Measurement("ctx", "throughput", 941.2, "Mbps", Better.HIGHER),
        Measurement("ctx", "throughput", 940.0, "Mbps", Better.HIGHER),
        Measurement("ctx", "My Custom Bench (x86)", 0.0, "", Better.HIGHER),
    )
    assert parse(document).failures == ()


@pytest.mark.parametrize(
    ("path", "better"),
    [
        ("smaller-is-better.json", Better.LOWER),
        ("out/customSmallerIsBetter.json", Better.LOWER),
        ("SMALLER/output.json", Better.LOWER),
        ("bigger-is-better.json", Better.HIGHER),
        ("customBiggerIsBetter.json", Better.HIGHER),
        ("output.json", Better.HIGHER),
        ("small.json", Better.HIGHER),
    ],
)
def test_bare_array_direction_comes_from_the_path(path: str, better: Better) -> None:
    assert direction_from_path(path) is better
    assert {m.better for m in parse([entry(), entry()], path=path).measurements} == {better}


def test_numbers_written_as_strings_are_accepted() -> None:
    parsed = parse([entry(value="13.099"), entry(value=" 3,001,058 ")])
    assert [m.value for m in parsed.measurements] == [13.099, 3001058.0]


# --- the two-direction object --------------------------------------------------------------


def test_object_gives_each_array_its_own_direction_whatever_the_path() -> None:
    document = {
        "customBiggerIsBetter": [entry("rx", 941.0, "Mbps")],
        "customSmallerIsBetter": [entry("rtt", 120.0, "µs"), entry("rtt", 118.0, "µs")],
    }
    parsed = parse(document, path="smaller-is-better.json", platform="qemu_x86")
    assert parsed.measurements == (
        Measurement("qemu_x86", "rx", 941.0, "Mbps", Better.HIGHER),
        Measurement("qemu_x86", "rtt", 120.0, "µs", Better.LOWER),
        Measurement("qemu_x86", "rtt", 118.0, "µs", Better.LOWER),
    )


@pytest.mark.parametrize(
    ("key", "better"),
    [("customBiggerIsBetter", Better.HIGHER), ("customSmallerIsBetter", Better.LOWER)],
)
def test_object_with_one_key_is_enough(key: str, better: Better) -> None:
    parsed = parse({key: [entry()], "note": "ignored"}, path="output.json")
    assert [m.better for m in parsed.measurements] == [better]


# --- broken files and broken entries ------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "the file has no benchmark entries"),
        ({"customBiggerIsBetter": []}, "the file has no benchmark entries"),
        ({"customBiggerIsBetter": [], "customSmallerIsBetter": []}, "no benchmark entries"),
        ({"customBiggerIsBetter": {"a": 1}}, "customBiggerIsBetter must be an array, got an obj"),
        ({"benchmarks": []}, "got an object without either key"),
        ('"hello"', "expected a JSON array of entries, or an object with customBiggerIsBetter"),
        ("42", "got a number"),
        ("null", "got null"),
    ],
)
def test_broken_file_says_why(document: Any, message: str) -> None:
    assert message in parse_error(document).reason


# (the broken entry, the message naming it); each is the file's second entry, or the
# third of customSmallerIsBetter.
BROKEN_ENTRIES: list[tuple[Any, str]] = [
    (3, "[1] must be an object with name, unit and value, got a number"),
    (entry(value="fast"), '[1].value must be a finite number, got "fast"'),
    (entry(value=None), "[1].value must be a finite number, got null"),
    (entry(value=True), "[1].value must be a finite number, got true"),
    (entry(value=[1]), "[1].value must be a finite number, got [1]"),
    (entry(value="nan"), '[1].value must be a finite number, got "nan"'),
    (entry(value="1e999"), '[1].value must be a finite number, got "1e999"'),
    ({"name": "a", "unit": "ms"}, "[1].value is missing"),
    ({"name": "a", "value": 1}, "[1].unit is missing"),
    ({"unit": "ms", "value": 1}, "[1].name is missing"),
    (entry(name=""), "[1].name must be a non-empty string"),
    (entry(name="  "), "[1].name must be a non-empty string"),
    (entry(name="n" * 201), "[1].name must be at most 200 characters long, got 201"),
    (entry(name="a\nb"), "[1].name must not contain control characters"),
    ({"name": 7, "unit": "", "value": 1}, "[1].name must be a non-empty string, got 7"),
    ({"name": "a", "unit": None, "value": 1}, "[1].unit must be a string, got null"),
    (entry(unit="m\ns"), "[1].unit must not contain control characters"),
]


@pytest.mark.parametrize(("broken", "message"), BROKEN_ENTRIES)
def test_a_broken_entry_is_a_failed_case_and_the_others_are_read(broken: Any, message: str) -> None:
    parsed = parse([entry("rx", 941.0), broken, entry("rtt", 120.0)], path="lab/bench.json")
    assert [m.metric for m in parsed.measurements] == ["rx", "rtt"]
    (failure,) = parsed.failures
    assert failure.platform == "ctx"
    assert failure.case == "lab/bench.json"  # the file; the reason names the entry
    assert message in failure.reason


def test_a_broken_entry_of_the_object_names_its_array() -> None:
    document = {"customSmallerIsBetter": [entry(), entry(), entry(value="x")]}
    parsed = parse(document)
    assert len(parsed.measurements) == 2
    (failure,) = parsed.failures
    assert "customSmallerIsBetter[2].value must be a finite number" in failure.reason


def test_a_file_of_broken_entries_only_is_read_as_failed_cases() -> None:
    parsed = parse([entry(value="fast"), 3])
    assert parsed.measurements == ()
    assert [f.reason for f in parsed.failures] == [
        '[0].value must be a finite number, got "fast"',
        "[1] must be an object with name, unit and value, got a number",
    ]


def test_longest_name_is_accepted() -> None:
    assert parse([entry(name="n" * 200)]).measurements[0].metric == "n" * 200


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_constants_are_refused(constant: str) -> None:
    error = parse_error(f'[{{"name": "a", "unit": "ms", "value": {constant}}}]')
    assert constant in error.reason


def test_overflowing_literal_is_refused() -> None:
    (failure,) = parse('[{"name": "a", "unit": "ms", "value": 1e999}]').failures
    assert "[0].value must be a finite number" in failure.reason


def test_deep_nesting_is_a_parse_error() -> None:
    error = parse_error("[" * 100_000 + "]" * 100_000)
    assert "nested" in error.reason


def test_moderate_nesting_is_judged_by_shape() -> None:
    (failure,) = parse("[" * 70 + "]" * 70).failures
    assert "must be an object" in failure.reason


def test_integer_literal_too_long_for_python_is_a_parse_error() -> None:
    error = parse_error('[{"name": "a", "unit": "", "value": ' + "9" * 5000 + "}]")
    assert "long number" in error.reason


def test_truncated_file_is_a_parse_error() -> None:
    error = parse_error('[{"name": "a", "unit": "ms", "value": 1}, {"name": "b", "un')
    assert "invalid JSON" in error.reason


def test_hostile_values_are_shortened_in_messages() -> None:
    (failure,) = parse([entry(value="9" * 100_000 + "x")]).failures
    assert len(failure.reason) < 200


# --- detection -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "score"),
    [
        ('[{"name": "a", "unit": "ms", "value": 1}]', 0.9),
        ('\n  [\n {"value": 1, "unit": "ms", "name": "a", "range": "3"}', 0.9),
        ('{"customBiggerIsBetter": [{"name": "a", "unit": "x", "value": 1}]}', 1.0),
        ('{\n  "customSmallerIsBetter": []\n}', 1.0),
        ('{"customSmallerIsBetter" : [], "customBiggerIsBetter": []}', 1.0),
    ],
)
def test_sniff_claims_both_shapes(head: str, score: float) -> None:
    assert FORMAT.sniff(head, "whatever.txt") == score


@pytest.mark.parametrize(
    "head",
    [
        '[{"name": "a", "value": 1}]',
        '[{"name": "a", "unit": "ms"}]',
        '{"name": "a", "unit": "ms", "value": 1}',
        '{"notes": "converted from customBiggerIsBetter"}',
        '{"perfbot": 1, "customBiggerIsBetter": [], "metrics": []}',
        "customBiggerIsBetter: []",
        "[1, 2, 3]",
        "",
    ],
)
def test_sniff_ignores_other_text(head: str) -> None:
    assert FORMAT.sniff(head, "customBiggerIsBetter.json") == 0.0


def test_sniff_leaves_perfbot_json_to_its_own_format() -> None:
    head = json.dumps(
        {"perfbot": 1, "metrics": [{"name": "a", "unit": "ms", "value": 1}]}, indent=2
    )
    assert FORMAT.sniff(head, "smaller.json") == 0.0
    assert PERFBOT_JSON.sniff(head, "smaller.json") == 1.0


@pytest.mark.parametrize(
    "fixture",
    [
        "generated/iperf3/tcp.json",
        "generated/iperf3/udp_18M.json",
        "iperf3-third-party/iperf-3.9_truncated_no-error-key.json",
        "zephyr-twister/uw-assignment10_qemu_passed_v3.4.twister.json",
        "zephyr-twister/ncs-devacademy_build-only_not-run-and-error.twister.json",
    ],
)
def test_sniff_ignores_real_reports_of_other_formats(fixture: str) -> None:
    assert FORMAT.sniff(shared(fixture).read_text(encoding="utf-8")[:65536], fixture) == 0.0
