"""perfbot's own JSON format: reading, refusing broken documents, and agreeing with its schema."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from perfbot.engine.read.formats.perfbot_json import FORMAT, MAX_LABEL, MAX_SAMPLES, SCHEMA
from perfbot.errors import ParseError
from perfbot.model import Better, FailedCase, Measurement, ParseContext, Parsed
from tests.paths import REPO, shared


def parse(document: Any, path: str = "perf/report.json", platform: str = "ctx") -> Parsed:
    text = document if isinstance(document, str) else json.dumps(document)
    return FORMAT.parse(text, ParseContext(path=path, platform=platform))


def parse_error(document: Any) -> ParseError:
    with pytest.raises(ParseError) as caught:
        parse(document)
    assert caught.value.format == "perfbot-json"
    return caught.value


def metric(**fields: Any) -> dict[str, Any]:
    return {"name": "tcp.throughput", "value": 1.0, **fields}


def report(*metrics: Any, **top: Any) -> dict[str, Any]:
    return {"perfbot": 1, "metrics": list(metrics), **top}


# --- reading -----------------------------------------------------------------------------


def test_reads_every_field_and_expands_values_into_samples() -> None:
    parsed = parse(
        {
            "perfbot": 1,
            "platform": "qemu_x86",
            "notes": {"producer": "my-script 1.2"},
            "metrics": [
                {"name": "tcp_rx.throughput", "values": [941.2, 940.8], "unit": "Mbps"},
                {"name": "tcp_rx.rtt", "value": 12, "unit": "µs", "better": "lower"},
                {"name": "udp.loss", "value": 0.5, "platform": "native_sim"},
            ],
            "failures": [{"case": "udp_20M", "reason": "timed out", "platform": "frdm_k64f"}],
        }
    )
    assert parsed.measurements == (
        Measurement("qemu_x86", "tcp_rx.throughput", 941.2, "Mbps", Better.HIGHER),
        Measurement("qemu_x86", "tcp_rx.throughput", 940.8, "Mbps", Better.HIGHER),
        Measurement("qemu_x86", "tcp_rx.rtt", 12.0, "µs", Better.LOWER),
        Measurement("native_sim", "udp.loss", 0.5, "", Better.HIGHER),
    )
    assert parsed.failures == (FailedCase("frdm_k64f", "udp_20M", "timed out"),)


def test_platform_falls_back_from_item_to_file_to_context() -> None:
    with_file = parse(report(metric(), failures=[{"case": "c", "reason": "r"}], platform="file"))
    without_file = parse(report(metric(), failures=[{"case": "c", "reason": "r"}]))
    assert {m.platform for m in with_file.measurements} == {"file"}
    assert {f.platform for f in with_file.failures} == {"file"}
    assert {m.platform for m in without_file.measurements} == {"ctx"}
    assert {f.platform for f in without_file.failures} == {"ctx"}


def test_a_report_of_failures_only_is_valid() -> None:
    parsed = parse(report(failures=[{"case": "udp_20M", "reason": "iperf3 exited 1"}]))
    assert parsed.measurements == ()
    assert parsed.failures == (FailedCase("ctx", "udp_20M", "iperf3 exited 1"),)


def test_failure_reason_is_one_line_and_at_most_200_characters() -> None:
    long_reason = "first line\nsecond\r\n\tthird " + "x" * 500
    parsed = parse(report(failures=[{"case": "c", "reason": long_reason}]))
    reason = parsed.failures[0].reason
    assert reason.startswith("first line second third xxx")
    assert "\n" not in reason
    assert "\t" not in reason
    assert len(reason) == 200


def test_short_reason_is_kept_as_written() -> None:
    parsed = parse(report(failures=[{"case": "c", "reason": "x" * 200}]))
    assert parsed.failures[0].reason == "x" * 200


def test_version_may_be_written_as_a_float() -> None:
    assert len(parse('{"perfbot": 1.0, "metrics": [{"name": "a", "value": 1}]}').measurements) == 1


def test_unsupported_version_says_which_versions_are_supported() -> None:
    error = parse_error({"perfbot": 3, "metrics": [metric()]})
    assert '"perfbot": 3 is not a supported format version' in error.reason
    assert "supported versions: 1, 2" in error.reason


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_constants_are_refused(constant: str) -> None:
    error = parse_error(f'{{"perfbot": 1, "metrics": [{{"name": "a", "value": {constant}}}]}}')
    assert constant in error.reason


@pytest.mark.parametrize("literal", ["1e999", "-1e999", "1" + "0" * 400])
def test_numbers_beyond_a_double_are_refused(literal: str) -> None:
    text = f'{{"perfbot": 1, "metrics": [{{"name": "a", "values": [1, {literal}]}}]}}'
    (failure,) = parse(text).failures
    assert "metrics[0].values[1] must be a finite number" in failure.reason


def test_hostile_nesting_is_a_parse_error() -> None:
    error = parse_error('{"perfbot": 1, "metrics": [], "notes": ' + "[" * 100_000 + "]" * 100_000)
    assert "nested" in error.reason


def test_hostile_values_are_shortened_in_messages() -> None:
    (failure,) = parse(report(metric(better="u" * 10_000))).failures
    assert len(failure.reason) < 200


def test_integer_literal_too_long_for_python_is_a_parse_error() -> None:
    error = parse_error('{"perfbot": 1, "metrics": [{"name": "a", "value": ' + "9" * 5000 + "}]}")
    assert "long number" in error.reason


# --- invalid documents and invalid items: each names the offending field ------------------

# (document, the part of the message that names the field). The schema must refuse each one
# too: see test_schema_and_parser_agree_on_invalid_documents. A broken item of metrics or
# failures costs that item only (BROKEN_ITEMS); anything else, the whole file (INVALID).
_ITEMS = ("metrics[", "failures[")
REFUSED: list[tuple[Any, str]] = [
    ([], "the document must be a JSON object, got an array"),
    ("null", "the document must be a JSON object, got null"),
    ({"metrics": [metric()]}, '"perfbot" (the format version) is missing'),
    ({"perfbot": "1", "metrics": [metric()]}, '"perfbot": "1" is not a supported'),
    ({"perfbot": True, "metrics": [metric()]}, '"perfbot": true is not a supported'),
    ({"perfbot": 0, "metrics": [metric()]}, '"perfbot": 0 is not a supported'),
    ({"perfbot": 1}, "metrics is missing"),
    ({"perfbot": 1, "metrics": {"a": 1}}, "metrics must be an array, got an object"),
    (report(), "the report has no metrics and no failures"),
    (report(failures=[]), "the report has no metrics and no failures"),
    (report(metric(), platform=""), "platform must be 1 to 200 characters long"),
    (report(metric(), platform=7), "platform must be a string, got a number"),
    (report(metric(), failures={}), "failures must be an array, got an object"),
    (report("tcp"), "metrics[0] must be an object, got a string"),
    (report(metric(), metric(valeus=[1])), 'metrics[1] has an unknown key "valeus"'),
    (report({"value": 1}), "metrics[0].name is missing"),
    (report(metric(name="")), "metrics[0].name must be 1 to 200 characters long, got 0"),
    (report(metric(name="n" * 201)), "metrics[0].name must be 1 to 200 characters long, got 201"),
    (report(metric(name="a\nb")), "metrics[0].name must not contain control characters"),
    (report(metric(name=["a"])), "metrics[0].name must be a string, got an array"),
    (report({"name": "a"}), "metrics[0] must have exactly one of value or values"),
    (report(metric(values=[1])), "metrics[0] must have exactly one of value or values (not both)"),
    (report(metric(value="12.5")), 'metrics[0].value must be a finite number, got "12.5"'),
    (report(metric(value=True)), "metrics[0].value must be a finite number, got true"),
    (report(metric(value=None)), "metrics[0].value must be a finite number, got null"),
    (report({"name": "a", "values": []}), "metrics[0].values must hold 1 to 10000 numbers, got 0"),
    (report({"name": "a", "values": 3}), "metrics[0].values must be an array of numbers"),
    (report({"name": "a", "values": [1, "2"]}), "metrics[0].values[1] must be a finite number"),
    (
        report({"name": "a", "values": [1.0] * (MAX_SAMPLES + 1)}),
        "metrics[0].values must hold 1 to 10000 numbers, got 10001",
    ),
    (report(metric(), metric(), metric(), metric(better="up")), "metrics[3].better must be"),
    (report(metric(better="Higher")), 'metrics[0].better must be "higher" or "lower"'),
    (report(metric(better=None)), 'metrics[0].better must be "higher" or "lower", got null'),
    (report(metric(unit=1)), "metrics[0].unit must be a string, got a number"),
    (report(metric(unit="M" * 51)), "metrics[0].unit must be 0 to 50 characters long"),
    (report(metric(unit="Mb\tps")), "metrics[0].unit must not contain control characters"),
    (report(metric(platform="")), "metrics[0].platform must be 1 to 200 characters long"),
    (report(failures=["udp"]), "failures[0] must be an object, got a string"),
    (report(failures=[{"reason": "r"}]), "failures[0].case is missing"),
    (report(failures=[{"case": "c"}]), "failures[0].reason is missing"),
    (report(failures=[{"case": "c", "reason": ""}]), "failures[0].reason must be a non-empty"),
    (report(failures=[{"case": "c", "reason": 3}]), "failures[0].reason must be a non-empty"),
    (report(failures=[{"case": "", "reason": "r"}]), "failures[0].case must be 1 to 200"),
    (
        report(failures=[{"case": "c", "reason": "r", "why": 1}]),
        'failures[0] has an unknown key "why"',
    ),
    (
        report(failures=[{"case": "c", "reason": "r", "platform": None}]),
        "failures[0].platform must be a string, got null",
    ),
]

INVALID = [(doc, message) for doc, message in REFUSED if not message.startswith(_ITEMS)]
BROKEN_ITEMS = [(doc, message) for doc, message in REFUSED if message.startswith(_ITEMS)]

# Valid documents, including every boundary of the limits above.
VALID: list[Any] = [
    report(metric()),
    report(metric(value=0), metric(value=-3.5e-9), metric(value=10**15)),
    report({"name": "a", "values": [1.0]}),
    report({"name": "a", "values": [1.0] * MAX_SAMPLES}),
    report(metric(name="n" * MAX_LABEL, platform="p" * MAX_LABEL)),
    report(metric(unit="", better="lower"), metric(unit="M" * 50, better="higher")),
    report(metric(name="tcp rx · µs | 😀")),
    report(metric(), platform="qemu_x86/atom", notes="any top-level extra is allowed"),
    report(failures=[{"case": "c", "reason": "line one\nline two"}]),
    report(failures=[{"case": "c", "reason": " "}]),
    report(metric(), failures=[]),
    {"perfbot": 1.0, "metrics": [metric()]},
    {"metrics": [metric(value=1.7976931348623157e308)], "perfbot": 1},
]


@pytest.mark.parametrize(("document", "message"), INVALID)
def test_invalid_document_names_the_field(document: Any, message: str) -> None:
    assert message in parse_error(document).reason


@pytest.mark.parametrize(("document", "message"), BROKEN_ITEMS)
def test_a_broken_item_is_a_failed_case_naming_it(document: Any, message: str) -> None:
    parsed = parse(document, path="lab/report.json")
    broken = [f for f in parsed.failures if f.case == "lab/report.json"]
    (failure,) = broken
    assert failure.platform == "ctx"
    assert message in failure.reason


def test_the_other_items_of_a_file_with_a_broken_one_are_read() -> None:
    document = report(
        metric(name="tcp.rx", value=941.0),
        metric(name="a\nb"),
        metric(name="tcp.rtt", value=12.0, better="lower"),
        failures=[{"case": "udp", "reason": "iperf3 exited 1"}, {"case": "udp"}],
        platform="lab",
    )
    parsed = parse(document, path="lab/report.json")
    assert [(m.metric, m.value) for m in parsed.measurements] == [
        ("tcp.rx", 941.0),
        ("tcp.rtt", 12.0),
    ]
    assert parsed.failures == (
        FailedCase(
            "lab",
            "lab/report.json",
            "metrics[1].name must not contain control characters (newlines, tabs)",
        ),
        FailedCase("lab", "udp", "iperf3 exited 1"),
        FailedCase("lab", "lab/report.json", "failures[1].reason is missing"),
    )


@pytest.mark.parametrize("document", VALID)
def test_valid_document_is_read(document: Any) -> None:
    parsed = parse(document)
    assert parsed.measurements or parsed.failures


def test_values_of_the_maximum_size_all_become_samples() -> None:
    parsed = parse(report({"name": "a", "values": list(range(MAX_SAMPLES))}))
    assert [m.value for m in parsed.measurements] == list(range(MAX_SAMPLES))


# --- the schema ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def validator() -> Any:
    schema = json.loads((REPO / SCHEMA).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    assert cls is jsonschema.Draft202012Validator
    cls.check_schema(schema)
    return cls(schema)


def test_format_description_points_at_the_schema_file() -> None:
    assert SCHEMA in FORMAT.reads
    assert (REPO / SCHEMA).is_file()


def as_json_value(document: Any) -> Any:
    # The schema sees what a JSON reader sees, so strings are decoded the same way.
    return json.loads(document) if isinstance(document, str) else json.loads(json.dumps(document))


@pytest.mark.parametrize("document", VALID)
def test_schema_accepts_what_the_parser_accepts(validator: Any, document: Any) -> None:
    errors = [e.message for e in validator.iter_errors(as_json_value(document))]
    assert errors == []


@pytest.mark.parametrize(("document", "message"), INVALID)
def test_schema_and_parser_agree_on_invalid_documents(
    validator: Any, document: Any, message: str
) -> None:
    assert not validator.is_valid(as_json_value(document))
    parse_error(document)


@pytest.mark.parametrize(("document", "message"), BROKEN_ITEMS)
def test_schema_refuses_what_the_parser_reads_as_a_failed_case(
    validator: Any, document: Any, message: str
) -> None:
    assert not validator.is_valid(as_json_value(document))
    assert any(message in failure.reason for failure in parse(document).failures)


@pytest.mark.parametrize("literal", ["1e999", "1" + "0" * 400])
def test_schema_refuses_numbers_beyond_a_double(validator: Any, literal: str) -> None:
    document = json.loads(f'{{"perfbot": 1, "metrics": [{{"name": "a", "value": {literal}}}]}}')
    assert not validator.is_valid(document)


# --- detection -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head",
    [
        '{"perfbot": 1, "metrics": []}',
        '{\n  "perfbot": 2\n}',
        '  {"platform": "x", "metrics": [], "perfbot": 1}',
        '{"perfbot":"1"}',
    ],
)
def test_sniff_claims_objects_with_a_perfbot_key(head: str) -> None:
    assert FORMAT.sniff(head, "anything.txt") == 1.0


@pytest.mark.parametrize(
    "head",
    [
        '[{"perfbot": 1}]',
        '{"metrics": [{"name": "a", "value": 1}]}',
        '{"name": "perfbot", "value": 1}',
        '{"customBiggerIsBetter": [{"name": "a", "unit": "x", "value": 1}]}',
        "perfbot: 1",
        "",
    ],
)
def test_sniff_ignores_other_text(head: str) -> None:
    assert FORMAT.sniff(head, "perfbot.json") == 0.0


@pytest.mark.parametrize(
    "fixture",
    [
        "generated/iperf3/tcp.json",
        "generated/iperf3/error_conn_refused.json",
        "zephyr-twister/uw-assignment10_qemu_passed_v3.4.twister.json",
    ],
)
def test_sniff_ignores_real_reports_of_other_formats(fixture: str) -> None:
    assert FORMAT.sniff(shared(fixture).read_text(encoding="utf-8")[:65536], fixture) == 0.0
