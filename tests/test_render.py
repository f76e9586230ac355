"""The comment body: layout, wording, escaping, determinism and the size budget."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

import pytest

from perfbot.engine.judge.compare import (
    Comparison,
    MetricResult,
    PlatformResult,
    Policy,
    Verdict,
    compare,
)
from perfbot.engine.judge.notices import RepeatedAttempt
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show.render import (
    GITHUB_BODY_LIMIT,
    MARKER,
    Footer,
    RenderContext,
    format_number,
    headline,
    render,
)
from perfbot.model import Better, FailedCase
from tests.builders import side

ZPERF_BASE = {
    "udp4_mbps": 13.099,
    "udp4_frag_mbps": 20.249,
    "tcp4_mbps": 5.970,
    "tcp4_nodelay_mbps": 5.876,
}


def example_sides() -> tuple[SideReport, SideReport]:
    """The situation of comment-example.md: one platform moved, one did not, one failed."""
    base = side(ZPERF_BASE, platform="qemu_x86/atom")
    side(ZPERF_BASE, platform="qemu_x86_64/atom", into=base)
    side({"tcp_fpga_rx.receiver_mbps": [26.8, 27.09, 27.31]}, platform="fpga-vu13p", into=base)
    head_values = dict(ZPERF_BASE, tcp4_mbps=5.5975, udp4_frag_mbps=20.9719)
    head = side(head_values, platform="qemu_x86/atom")
    side(ZPERF_BASE, platform="qemu_x86_64/atom", into=head)
    side(
        {"tcp_fpga_rx.receiver_mbps": [26.95, 27.12, 27.4]},
        platform="fpga-vu13p",
        failures=[FailedCase("fpga-vu13p", "udp_fpga_rx_20M", "iperf3 reported an error: busy")],
        into=head,
    )
    return base, head


def test_layout_follows_the_example() -> None:
    body = render(compare(*example_sides()))
    lines = body.splitlines()
    assert lines[0] == MARKER
    assert lines[1] == "### Performance report: 1 regression, 1 improvement, 1 failed case"
    assert (
        "| <code>tcp4_mbps</code> (Mbps) | 5.97 | 5.5975 "
        "| 🔴 **−6.24 %** (beyond 5 % tolerance) |" in lines
    )
    assert "| <code>udp4_frag_mbps</code> (Mbps) | 20.249 | 20.972 | 🟢 +3.57 % |" in lines
    # The moved platform is open with its unchanged rows folded; so is the one with a
    # failed case, though nothing moved there; the calm one is folded.
    assert "#### <code>qemu_x86/atom</code>" in lines
    assert "#### <code>fpga-vu13p</code>" in lines
    assert "<details><summary>2 unchanged metrics</summary>" in lines
    assert any(
        line.startswith("<details><summary><code>qemu_x86_64/atom</code>: all 4 metrics")
        for line in lines
    )
    assert "27.09 (26.8–27.31, n=3)" in body
    assert "❌ <code>udp_fpga_rx_20M</code> (PR): iperf3 reported an error&#58; busy" in body
    assert lines[-1] == "<sub>Noise floor ±1 %, tolerance 5 %.</sub>"


def test_worst_platform_comes_first() -> None:
    body = render(compare(*example_sides()))
    assert (
        body.index("qemu_x86/atom")
        < body.index("fpga-vu13p")
        < body.index("qemu_x86_64/atom</code>: all")
    )


def test_same_input_same_bytes() -> None:
    first = render(compare(*example_sides()))
    second = render(compare(*example_sides()))
    assert first.encode() == second.encode()


def test_provenance_line_and_notices() -> None:
    context = RenderContext(
        head_sha="1a2b3c4d5e6f",
        base_sha="9f8e7d6c5b4a",
        base_ref="main",
        run_url="https://github.com/o/r/actions/runs/4711",
        run_label="net-perf run 4711",
        updated_at=datetime(2026, 11, 29, 18, 2, tzinfo=UTC),
        notices=(RepeatedAttempt(2),),
    )
    body = render(compare(*example_sides()), context)
    assert (
        "Compared <code>1a2b3c4</code> (this PR, rebased) with <code>9f8e7d6</code> "
        "(<code>main</code>) · [net-perf run 4711](https://github.com/o/r/actions/runs/4711)"
        " · updated 2026-11-29 18:02 UTC"
    ) in body
    said = "Attempt 2 uploaded no report of its own: the regressions are called on attempt 1 alone."
    assert f"> ℹ️ {said}" in body


def test_missing_base_says_not_available_not_zero() -> None:
    body = render(compare(SideReport(), side({"udp4_mbps": 14.3})))
    assert "comparison not available (no base measurement)" in body
    assert "| — | 14.3 |" in body
    assert not re.search(r"\|\s*0\s*\|", body)


def test_nothing_moved_headline() -> None:
    comparison = compare(side({"a": 1.0}), side({"a": 1.001}))
    assert headline(comparison) == "no change beyond the noise floor"


def test_footer_states_the_policy() -> None:
    body = render(compare(side({"a": 1.0}), side({"a": 1.0}), Policy(threshold=2, tolerance=10)))
    assert "Noise floor ±2 %, tolerance 10 %" in body


def test_hostile_names_are_escaped_everywhere() -> None:
    evil = "@octocat #1 [x](https://e.example) <img src=x> |`"
    base = side({evil: 1.0}, platform=evil, unit=evil)
    head = side({evil: 2.0}, platform=evil, unit=evil, failures=[FailedCase(evil, evil, evil)])
    body = render(compare(base, head))
    for fragment in ("](", "<img", "https://", "|`"):
        assert fragment not in body
    # Mentions and references are found in the rendered text, after entities are decoded.
    rendered = html.unescape(body)
    assert not re.search(r"@\w", rendered)
    assert not re.search(r"#\d", rendered)


def test_gh_references_are_dead_in_names_units_platforms_reasons_and_notices() -> None:
    evil = "fixes GH-12 gh-7 Gh-3"
    base = side({evil: 1.0}, platform=evil, unit=evil)
    head = side({evil: 2.0}, platform=evil, unit=evil, failures=[FailedCase(evil, evil, evil)])
    context = RenderContext(skipped=((f"head/{evil}.log", evil),), config_errors=(evil,))
    body = render(compare(base, head), context)
    assert body.count("GH-\u200b12") >= 7  # name, unit, platform, case, reason, notices
    assert not re.search(r"gh-[0-9]", html.unescape(body), re.IGNORECASE)


def skipped_notices(skipped: list[tuple[str, str]]) -> list[str]:
    body = render(compare(side({"a": 1.0}), side({"a": 1.0})), RenderContext(skipped=(*skipped,)))
    return [line[2:] for line in body.splitlines() if line.startswith("> ")]


def test_every_skipped_member_is_counted() -> None:
    skipped = [(f"head/m{i}.log", "name holds a NUL byte") for i in range(7)]
    notices = skipped_notices(skipped)
    assert notices[:3] == [
        f"⚠️ artifact member head/m{i}.log skipped: name holds a NUL byte" for i in range(3)
    ]
    assert notices[3:] == ["⚠️ … and 4 more artifact members skipped."]
    assert skipped_notices(skipped[:3]) == notices[:3]
    assert skipped_notices(skipped[:4])[3:] == ["⚠️ … and 1 more artifact member skipped."]


def test_a_platform_with_a_failed_case_stays_open() -> None:
    base = side({"rx.mbps": 10.0, "tx.mbps": 10.0}, platform="lab")
    head = side(
        {"tx.mbps": 10.0}, platform="lab", failures=[FailedCase("lab", "rx", "iperf3 exited 1")]
    )
    lines = render(compare(base, head)).splitlines()
    assert "#### <code>lab</code>" in lines
    assert not any(line.startswith("<details><summary><code>lab</code>") for line in lines)
    assert "❌ <code>rx</code> (PR): iperf3 exited 1  " in lines


def test_a_platform_with_a_missing_metric_stays_open() -> None:
    lines = render(compare(side({"a": 1.0, "b": 2.0}), side({"a": 1.0}))).splitlines()
    assert "#### <code>qemu_x86/atom</code>" in lines
    assert not any(line.startswith("<details><summary><code>") for line in lines)
    assert any("➖ missing in PR" in line for line in lines)


def test_a_calm_platform_is_still_folded() -> None:
    body = render(compare(side({"a": 1.0}, platform="calm"), side({"a": 1.0}, platform="calm")))
    assert "<details><summary><code>calm</code>: all 1 metric unchanged" in body
    assert "#### " not in body


@pytest.mark.parametrize(
    ("footer", "offers"),
    [
        (Footer.APP, ("`/perfbot rerun`", "`.github/perfbot.yml`", "Advisory")),
        (Footer.ACTIONS, ("`.github/perfbot.yml`", "Advisory")),
        (Footer.CLI, ()),
    ],
)
def test_the_footer_names_only_what_the_path_offers(
    footer: Footer, offers: tuple[str, ...]
) -> None:
    body = render(compare(side({"a": 1.0}), side({"a": 1.0})), RenderContext(footer=footer))
    last = body.splitlines()[-1]
    assert "Noise floor ±1 %, tolerance 5 %." in last
    for offer in ("`/perfbot rerun`", "`.github/perfbot.yml`", "Advisory", "check"):
        assert (offer in last) == (offer in offers), (footer, offer)


def test_only_the_apps_footer_speaks_of_failing_the_check() -> None:
    comparison = compare(side({"a": 1.0}), side({"a": 1.0}))
    app = render(comparison, RenderContext(footer=Footer.APP, advisory=False))
    actions = render(comparison, RenderContext(footer=Footer.ACTIONS, advisory=False))
    assert "fails the check on a regression beyond tolerance" in app
    assert "check" not in actions.splitlines()[-1]


def big_sides(platforms: int, metrics: int, moved_every: int) -> tuple[SideReport, SideReport]:
    base, head = SideReport(), SideReport()
    for p in range(platforms):
        names = {f"case_{i:05d}.receiver_mbps": 100.0 for i in range(metrics)}
        side(names, platform=f"board-{p}", into=base)
        moved = {n: (90.0 if i % moved_every == 0 else 100.0) for i, n in enumerate(names)}
        side(moved, platform=f"board-{p}", into=head)
    return base, head


def test_size_budget_drops_unchanged_rows_first() -> None:
    body = render(compare(*big_sides(platforms=4, metrics=1500, moved_every=50)))
    assert len(body.encode()) <= GITHUB_BODY_LIMIT
    assert "Left out to stay within GitHub's comment size limit: the unchanged rows." in body
    assert body.count("🔴 **") == 4 * 30  # every regression is still listed


def test_size_budget_always_holds_for_huge_inputs() -> None:
    body = render(compare(*big_sides(platforms=300, metrics=200, moved_every=2)))
    assert len(body.encode()) <= GITHUB_BODY_LIMIT
    assert "the per-metric tables" in body
    assert body.startswith(MARKER)


def test_number_format() -> None:
    assert format_number(7.094) == "7.094"
    assert format_number(13.037) == "13.037"
    assert format_number(27.09) == "27.09"
    assert format_number(20127.39) == "20,127"
    assert format_number(3110669760) == "3,110,669,760"
    assert format_number(0.000123456) == "0.00012346"
    assert format_number(-5.5) == "−5.5"
    assert format_number(0) == "0"


def test_absurd_magnitudes_keep_five_significant_digits() -> None:
    # Written out, 1e308 takes 309 digits and 1e-308 rounds to 0.
    assert format_number(1e308) == "1e+308"
    assert format_number(-1.234567e20) == "−1.2346e+20"
    assert format_number(1e-308) == "1e−308"
    assert format_number(1.5e-7) == "1.5e−7"
    assert format_number(123_456_789_012_345) == "123,456,789,012,345"
    assert format_number(0.0000025) == "0.0000025"
    metric = MetricResult("m", "", Better.HIGHER, None, None, 1.7e308, Verdict.IMPROVED)
    row = render(Comparison((PlatformResult("p", (metric,), ()),)))
    assert "🟢 +1.7e+308 %" in row
