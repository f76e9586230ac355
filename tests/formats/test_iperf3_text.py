"""iperf3's human-readable output, as the real iperf 3.12 prints it on loopback.

The inputs are our own runs (tests/data/iperf3/, commands in its commands.log) and the
shared fixture tcp_text.txt; the expected numbers are read off each file by hand.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot.engine.read import formats
from perfbot.engine.read.formats import iperf3, iperf3_text
from perfbot.engine.read.formats.iperf3_text import FORMAT, MAX_REASON, NO_DATA, NO_SUMMARY
from perfbot.errors import ParseError
from perfbot.model import Better, Measurement, ParseContext, Parsed, Scale
from tests.iperf3 import HOST, IPERF3, free_port
from tests.paths import REPO, shared

OWN = REPO / "tests" / "data" / "iperf3"
H, L = Better.HIGHER, Better.LOWER
UDP_LOSS = ("lost_percent", "lost_packets", "packets", "jitter_ms")


def own(name: str) -> str:
    return (OWN / name).read_text(encoding="utf-8")


def parse(text: str) -> Parsed:
    return FORMAT.parse(text, ParseContext(path="run.txt", platform="p", case="c"))


def values(parsed: Parsed) -> dict[str, float]:
    metrics = [m.metric for m in parsed.measurements]
    assert len(metrics) == len(set(metrics))
    return {m.metric: m.value for m in parsed.measurements}


def quoted(text: str, prefix: str) -> str:
    """``text`` as a mail reply quotes it: ``prefix`` before every line."""
    return "".join(prefix + line for line in text.splitlines(keepends=True))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # [  5]   0.00-2.00   sec  3.69 GBytes  15.8 Gbits/sec   30   sender / ... receiver
        ("tcp.txt", {"c.receiver_mbps": 15800, "c.retransmits": 30}),
        # -R: the client receives; its sender line gives the server's retransmits.
        ("tcp_reverse.txt", {"c.receiver_mbps": 15700, "c.retransmits": 14}),
        # -P 2: the [SUM] lines, not a stream's.
        ("tcp_P2.txt", {"c.receiver_mbps": 19300, "c.retransmits": 11}),
        ("tcp_P2_reverse.txt", {"c.receiver_mbps": 21800, "c.retransmits": 14}),
        # --bidir: [TX-C] receiver 8.36 Gbit/s, [RX-C] receiver 7.29 Gbit/s.
        (
            "tcp_bidir.txt",
            {
                "c.forward_mbps": 8360,
                "c.reverse_mbps": 7290,
                "c.total_mbps": 8360 + 7290,
                "c.retransmits": 7,
            },
        ),
        # --bidir -P 2: [SUM][TX-C] receiver 7.63 (its sender says 7.64), [SUM][RX-C] 13.5.
        (
            "tcp_P2_bidir.txt",
            {
                "c.forward_mbps": 7630,
                "c.reverse_mbps": 13500,
                "c.total_mbps": 7630 + 13500,
                "c.retransmits": 7,
            },
        ),
        # -V adds the CPU line.
        (
            "tcp_verbose.txt",
            {
                "c.receiver_mbps": 21500,
                "c.retransmits": 16,
                "c.cpu_host_percent": 41.1,
                "c.cpu_remote_percent": 49.2,
            },
        ),
        # UDP: the receiver's 827 Mbit/s, not the sender's 1.60 Gbit/s; 131715/272227 lost.
        (
            "udp_2G_loss.txt",
            {
                "c.receiver_mbps": 827,
                "c.lost_percent": 100 * 131715 / 272227,
                "c.lost_packets": 131715,
                "c.packets": 272227,
                "c.jitter_ms": 0.003,
            },
        ),
        (
            "udp_10M_reverse.txt",
            {
                "c.receiver_mbps": 10,
                "c.lost_percent": 0,
                "c.lost_packets": 0,
                "c.packets": 1698,
                "c.jitter_ms": 0.012,
            },
        ),
        (
            "udp_P2_5M.txt",
            {
                "c.receiver_mbps": 10,
                "c.lost_percent": 0,
                "c.lost_packets": 0,
                "c.packets": 1698,
                "c.jitter_ms": 0.009,
            },
        ),
        (
            "udp_P2_bidir_5M.txt",
            {
                "c.forward_mbps": 10,
                "c.lost_percent": 0,
                "c.lost_packets": 0,
                "c.packets": 1698,
                "c.jitter_ms": 0.039,
                "c.reverse_mbps": 10,
                "c.reverse_lost_percent": 0,
                "c.reverse_lost_packets": 0,
                "c.reverse_packets": 1700,
                "c.reverse_jitter_ms": 0.019,
                "c.total_mbps": 20,
            },
        ),
        # The server's own log: it prints only the receiver line.
        ("server_tcp.txt", {"c.receiver_mbps": 4720}),
    ],
)
def test_real_output(name: str, expected: dict[str, float]) -> None:
    parsed = parse(own(name))
    assert parsed.failures == ()
    assert values(parsed) == pytest.approx(expected, rel=1e-12)


def test_the_shared_fixture() -> None:
    text = shared("generated/iperf3/tcp_text.txt").read_text(encoding="utf-8")
    assert formats.detect(text, "tcp_text.txt") is FORMAT
    assert values(parse(text)) == pytest.approx({"c.receiver_mbps": 17600, "c.retransmits": 11})


@pytest.mark.parametrize("prefix", ["> ", ">", "> >> ", ">> > ", "  > "])
@pytest.mark.parametrize("name", ["tcp_P2_bidir.txt", "udp_2G_loss.txt", "tcp_verbose.txt"])
def test_mail_quoted_output_reads_like_the_plain_one(name: str, prefix: str) -> None:
    text = own(name)
    assert formats.detect(quoted(text, prefix), name) is FORMAT
    assert parse(quoted(text, prefix)) == parse(text)


def test_quoted_output_inside_a_mail_with_prose_around_it() -> None:
    mail = (
        "On Tue, someone wrote:\n> With the patch:\n"
        + quoted(own("tcp.txt"), "> >> ")
        + "\nThanks, that is 15.8 Gbit/s here too.\n"
    )
    assert values(parse(mail)) == pytest.approx({"c.receiver_mbps": 15800, "c.retransmits": 30})


def test_units_directions_and_scales() -> None:
    udp = {m.metric: m for m in parse(own("udp_2G_loss.txt")).measurements}
    tcp = {m.metric: m for m in parse(own("tcp_verbose.txt")).measurements}

    def shape(m: Measurement) -> tuple[str, Better, Scale]:
        return (m.unit, m.better, m.scale)

    assert shape(udp["c.receiver_mbps"]) == ("Mbps", H, Scale.RATIO)
    assert shape(udp["c.lost_percent"]) == ("%", L, Scale.POINTS)
    assert shape(udp["c.lost_packets"]) == ("packets", L, Scale.COUNT)
    assert shape(udp["c.packets"]) == ("packets", H, Scale.RATIO)
    assert shape(udp["c.jitter_ms"]) == ("ms", L, Scale.RATIO)
    assert shape(tcp["c.retransmits"]) == ("", L, Scale.COUNT)
    assert shape(tcp["c.cpu_host_percent"]) == ("%", L, Scale.RATIO)


def test_metric_names_match_the_json_parser() -> None:
    """A text run and a -J run of the same command measure the same metrics."""
    pairs = [
        ("tcp_P2_bidir.txt", "generated/iperf3/tcp_bidir.json"),
        ("udp_2G_loss.txt", "generated/iperf3/udp_2G_loss.json"),
        ("tcp_verbose.txt", "generated/iperf3/tcp.json"),
    ]
    for text_name, json_name in pairs:
        json_text = shared(json_name).read_text(encoding="utf-8")
        from_json = iperf3.FORMAT.parse(json_text, ParseContext("r.json", "p", "c"))
        # Only -V prints the CPU utilisation that -J always has.
        cpu = set() if "verbose" in text_name else {"c.cpu_host_percent", "c.cpu_remote_percent"}
        assert set(values(parse(own(text_name)))) == set(values(from_json)) - cpu, text_name
        # ... each with the same unit, direction and scale.
        shapes = {(m.metric, m.unit, m.better, m.scale) for m in from_json.measurements}
        for m in parse(own(text_name)).measurements:
            assert (m.metric, m.unit, m.better, m.scale) in shapes


def settings_of_run(name: str) -> dict[str, str]:
    (fingerprint,) = {m.settings for m in parse(own(name)).measurements}
    return dict(fingerprint)


def test_fingerprint_from_what_the_output_states() -> None:
    plain = {"protocol": "TCP", "streams": "1", "reverse": "no", "bidir": "no"}
    assert settings_of_run("tcp.txt") == plain
    assert settings_of_run("tcp_P2.txt") == {**plain, "streams": "2"}
    assert settings_of_run("tcp_reverse.txt") == {**plain, "reverse": "yes"}
    assert settings_of_run("tcp_P2_bidir.txt") == {**plain, "streams": "2", "bidir": "yes"}
    assert settings_of_run("udp_bidir_10M.txt") == {**plain, "protocol": "UDP", "bidir": "yes"}
    # -V states the test: `Starting Test: protocol: UDP, 1 streams, 1472 byte blocks,
    # omitting 0 seconds, 2 second test, tos 0` and `Target Bitrate: 10000000`.
    assert settings_of_run("udp_10M_verbose.txt") == {
        **plain,
        "protocol": "UDP",
        "blksize": "1472",
        "omit": "0",
        "duration": "2",
        "target_bitrate": "10000000",
    }
    assert settings_of_run("tcp_P2_verbose_omit1.txt")["omit"] == "1"


def test_the_same_command_gives_the_same_fingerprint() -> None:
    # tcp.txt and the shared tcp_text.txt: `iperf3 -c 127.0.0.1 -p <port> -t <2 or 3>`,
    # on other days, ports and numbers: the stated settings are equal.
    shared_text = shared("generated/iperf3/tcp_text.txt").read_text(encoding="utf-8")
    (fingerprint,) = {m.settings for m in parse(shared_text).measurements}
    assert dict(fingerprint) == settings_of_run("tcp.txt")


def test_no_port_host_or_time_in_a_fingerprint() -> None:
    stated = set(settings_of_run("tcp_verbose.txt").values())
    text = own("tcp_verbose.txt")
    for word in ("127.0.0.1", "48189", "40158", "12:42:10", "32768", "bbr"):
        assert word in text
        assert word not in stated


def test_several_runs_in_one_log_are_samples() -> None:
    parsed = parse(own("tcp.txt") + own("tcp_reverse.txt") + own("tcp_P2.txt"))
    rates = [m.value for m in parsed.measurements if m.metric == "c.receiver_mbps"]
    assert rates == pytest.approx([15800, 15700, 19300])
    assert parsed.failures == ()


def test_connection_refused_is_a_failed_case() -> None:
    parsed = parse(own("error_conn_refused.txt"))
    assert parsed.measurements == ()
    (failure,) = parsed.failures
    assert failure.reason == (
        "iperf3 reported an error: unable to connect to server: Connection refused"
    )
    assert formats.detect(own("error_conn_refused.txt"), "x.txt") is FORMAT


def test_a_run_cut_short_has_no_summary() -> None:
    text = own("tcp.txt")
    cut = text[: text.index("- - - -")]
    (failure,) = parse(cut).failures
    assert failure.reason == NO_SUMMARY


def test_an_interrupted_run_is_a_failed_case_even_with_a_summary() -> None:
    text = own("tcp.txt").replace("iperf Done.", "iperf3: interrupt - the client has terminated")
    (failure,) = parse(text).failures
    assert failure.reason == "iperf3 reported an error: the client has terminated"


def test_zero_received_is_a_failed_case_not_zero() -> None:
    text = own("tcp.txt").replace(
        "3.69 GBytes  15.8 Gbits/sec                  receiver",
        "0.00 Bytes  0.00 bits/sec                  receiver",
    )
    parsed = parse(text)
    assert parsed.measurements == ()
    assert [f.reason for f in parsed.failures] == [NO_DATA]


def test_bytes_per_second_units() -> None:
    # -f M prints rates in MBytes/sec (powers of 1024).
    text = own("tcp.txt").replace(
        "3.69 GBytes  15.8 Gbits/sec                  receiver",
        "3.69 GBytes  1884 MBytes/sec                  receiver",
    )
    assert values(parse(text))["c.receiver_mbps"] == pytest.approx(1884 * 1024**2 * 8 / 1e6)


def test_a_long_error_is_one_short_line() -> None:
    (failure,) = parse("iperf3: error - " + "x\x07 " * 400 + "\n").failures
    assert len(failure.reason) <= MAX_REASON
    assert failure.reason.isprintable()


@pytest.mark.parametrize(
    "text", ["hello\n", "Connecting to nothing\n", "[  5] not an interval\n", "{}", "\n\n"]
)
def test_not_iperf3_text_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse(text)


def test_json_reports_are_not_claimed() -> None:
    for name in ("tcp.json", "udp_18M.json", "error_conn_refused.json"):
        head = shared(f"generated/iperf3/{name}").read_text(encoding="utf-8")
        assert iperf3_text.sniff(head, name) == 0.0
        assert formats.detect(head, name) is iperf3.FORMAT


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(own("udp_P2_bidir_5M.txt").splitlines(keepends=True))
        | st.sampled_from(["> ", "iperf3: error - x\n", "[SUM] 1-2 sec\n", "\n"])
        | st.text(max_size=30),
        max_size=25,
    )
)
def test_any_mix_of_lines_parses_or_raises_parse_error(lines: list[str]) -> None:
    try:
        parsed = parse("".join(lines))
    except ParseError:
        return
    assert parsed.measurements or parsed.failures
    assert all(len(f.reason) <= MAX_REASON for f in parsed.failures)


@pytest.fixture
def quiet_iperf3_server(tmp_path: Path) -> Iterator[int]:
    """An ``iperf3 -s`` known to listen from its own log, never probed by a connection.

    A probing connect counts as a client for iperf3 3.12, and the real client that comes
    while the server gets over it is reset ("unable to receive control message").
    """
    assert IPERF3
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [IPERF3, "-s", "-B", HOST, "-p", str(port), "--forceflush"],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 10
        while f"Server listening on {port}" not in log.read_text(errors="replace"):
            assert server.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, "iperf3 -s did not listen within 10 s"
            time.sleep(0.02)
        yield port
    finally:
        server.terminate()  # only the process this fixture started, by its PID
        server.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "metrics", "stated"),
    [
        (
            ["-P", "2", "-V"],
            {"c.receiver_mbps", "c.retransmits", "c.cpu_host_percent", "c.cpu_remote_percent"},
            {"protocol": "TCP", "streams": "2", "duration": "1", "bidir": "no"},
        ),
        (
            ["-u", "-b", "5M", "-l", "1200", "--bidir"],
            {
                "c.forward_mbps",
                "c.reverse_mbps",
                "c.total_mbps",
                *(f"c.{p}{m}" for p in ("", "reverse_") for m in UDP_LOSS),
            },
            {"protocol": "UDP", "streams": "1", "bidir": "yes"},
        ),
    ],
    ids=["tcp-P2-verbose", "udp-bidir"],
)
def test_live_iperf3_text_output(
    quiet_iperf3_server: int, args: list[str], metrics: set[str], stated: dict[str, str]
) -> None:
    assert IPERF3
    run = subprocess.run(
        [IPERF3, "-c", HOST, "-p", str(quiet_iperf3_server), "-t", "1", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert formats.detect(run.stdout, "live.txt") is FORMAT
    parsed = parse(quoted(run.stdout, "> >> "))
    assert parsed.failures == ()
    assert set(values(parsed)) == metrics
    assert all(m.value > 0 for m in parsed.measurements if m.metric.endswith("_mbps"))
    (fingerprint,) = {m.settings for m in parsed.measurements}
    assert stated.items() <= dict(fingerprint).items()


def test_a_refused_run_after_a_whole_one_leaves_the_whole_one_its_sample() -> None:
    # A lab loop appending each run to one log: run 1 measured, run 2 refused (iperf3
    # prints only the error), run 3 measured. Run 1 was read as failed with run 2's error.
    parsed = parse(own("tcp.txt") + own("error_conn_refused.txt") + own("tcp_reverse.txt"))
    rates = [m.value for m in parsed.measurements if m.metric == "c.receiver_mbps"]
    assert rates == pytest.approx([15800, 15700])
    (failure,) = parsed.failures
    assert "Connection refused" in failure.reason


def test_a_run_cut_short_between_whole_ones_is_a_failed_case() -> None:
    # The log shows the middle run start ("Connecting to host") and stop before its
    # summary: a lost repetition, not a quoted fragment, so it is said.
    text = own("tcp.txt")
    cut = text[: text.index("- - - -")]
    parsed = parse(own("tcp.txt") + cut + own("tcp_reverse.txt"))
    rates = [m.value for m in parsed.measurements if m.metric == "c.receiver_mbps"]
    assert rates == pytest.approx([15800, 15700])
    (failure,) = parsed.failures
    assert failure.reason == NO_SUMMARY
