"""``perfbot compare --plot``: the SVG charts, read back with an XML parser (and, in the slow
tests, drawn by headless Chromium)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import unicodedata
import xml.etree.ElementTree as ET
import zlib
from collections import Counter
from pathlib import Path

import pytest

from perfbot.cli import main
from perfbot.cli.compare import _local_side
from perfbot.engine.judge.compare import Comparison, Stats, Verdict, compare
from perfbot.engine.read.sides import SideReport
from perfbot.engine.show.barchart import MAX_LABEL, fit
from perfbot.engine.show.escape import clean
from perfbot.engine.show.plot import (
    BASE_COLOUR,
    HIGHLIGHT_COLOUR,
    HISTORY_COLOUR,
    OTHER_COLOUR,
    VERDICT_COLOURS,
    HistoryPoint,
    history_svg,
    platform_svg,
    plot_files,
    safe_name,
)
from perfbot.model import Better, FailedCase, Scale
from tests.builders import side
from tests.paths import REPO

SVG = "{http://www.w3.org/2000/svg}"
RED, GREEN, BLUE = (
    VERDICT_COLOURS[v] for v in (Verdict.REGRESSED, Verdict.IMPROVED, Verdict.UNCHANGED)
)
# What a fork's workflow could name a metric, a unit or a platform.
HOSTILE = [
    "</text><script>alert(1)</script>",
    '"><svg onload="alert(1)">',
    "' onmouseover='alert(1)",
    "<foreignObject><iframe src='https://evil.example/'/></foreignObject>",
    '<a xlink:href="javascript:alert(1)">x</a>',
    "<image href='http://evil.example/x.png'/>",
    "&amp; &lt; &#x3c; ]]> <![CDATA[ x ]]>",
    "bell\x07tab\tnul\x00esc\x1b[31mdel\x7f",
    "line\nbreak\r\nend",
    "\u202eevil\u202c txt.exe \u2066iso\u2069 \u200bzw\u200d",
    "surrogate-free \ufffe\uffff noncharacters",
    "x" * 5000,
    "名前" * 300,
]


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg.encode("utf-8"))
    assert root.tag == f"{SVG}svg"
    return root


def assert_inert(svg: str) -> ET.Element:
    """Parsed, and nothing in it can run or fetch: no script, no foreign content, no
    reference of any kind, no event handler, no style sheet; only our own elements."""
    root = parse(svg)
    allowed = {"svg", "title", "rect", "line", "path", "text"}
    for element in root.iter():
        assert element.tag.startswith(SVG), element.tag
        assert element.tag.removeprefix(SVG) in allowed, element.tag
        for name in element.attrib:
            local = name.rpartition("}")[2].lower()
            assert not local.startswith("on"), name
            assert local not in {"href", "src", "style"}, name
            value = element.attrib[name].lower()
            assert "url(" not in value, name
            assert ":" not in value or name == "viewBox", name
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]", svg)
    return root


def texts(root: ET.Element) -> list[str]:
    return [element.text or "" for element in root.iter(f"{SVG}text")]


def bars(root: ET.Element, colour: str) -> list[ET.Element]:
    """The bars drawn in ``colour`` (a legend swatch is 12 wide; a bar's width has a decimal)."""
    return [
        r
        for r in root.iter(f"{SVG}rect")
        if r.get("fill") == colour and r.get("height") == "12" and r.get("width") != "12"
    ]


def width(rect: ET.Element) -> float:
    return float(rect.get("width", "nan"))


def demo() -> Comparison:
    base = side({"tcp": 100.0, "udp": 50.0, "latency": [900.0, 950.0, 1000.0]}, platform="p")
    head = side({"tcp": 90.0, "udp": 55.0, "latency": [900.0, 940.0, 1010.0]}, platform="p")
    return compare(base, head)


def test_a_group_per_metric_with_base_and_pr_bars_in_verdict_colours() -> None:
    root = assert_inert(platform_svg(demo().platforms[0]))
    assert len(bars(root, BASE_COLOUR)) == 3
    assert len(bars(root, RED)) == 1  # tcp −10 %
    assert len(bars(root, GREEN)) == 1  # udp +10 %
    assert len(bars(root, BLUE)) == 1  # latency, ranges overlap
    shown = texts(root)
    assert {"tcp", "udp", "latency"} <= set(shown)
    assert "\u221210.0 %" in shown
    assert "+10.0 %" in shown
    assert "regressed, beyond tolerance" in shown
    assert "100 Mbps" in shown
    assert "90 Mbps" in shown
    assert "950 Mbps (n=3)" in shown


def test_the_change_is_said_in_the_metric_own_terms() -> None:
    base = side({"loss": 0.5}, platform="p", unit="%", better=Better.LOWER, scale=Scale.POINTS)
    side(
        {"lost": 10.0},
        platform="p",
        unit="packets",
        better=Better.LOWER,
        scale=Scale.COUNT,
        into=base,
    )
    head = side({"loss": 5.7}, platform="p", unit="%", better=Better.LOWER, scale=Scale.POINTS)
    side(
        {"lost": 57.0},
        platform="p",
        unit="packets",
        better=Better.LOWER,
        scale=Scale.COUNT,
        into=head,
    )
    shown = texts(assert_inert(platform_svg(compare(base, head).platforms[0])))
    assert "+5.20 pp" in shown
    assert "+47 packets" in shown
    assert not any(t.endswith(" %") and t.startswith("+") for t in shown)


def test_bars_are_scaled_to_the_base_so_every_scale_reads_on_one_axis() -> None:
    base = side({"small": 0.002, "big": 9.0e6}, platform="p")
    head = side({"small": 0.001, "big": 9.9e6}, platform="p")
    root = assert_inert(platform_svg(compare(base, head).platforms[0]))
    base_widths = [width(rect) for rect in bars(root, BASE_COLOUR)]
    assert len(base_widths) == 2
    assert base_widths[0] == base_widths[1] > 100  # both bases at 100 %, both visible
    (regressed,) = bars(root, RED)  # small halved
    (improved,) = bars(root, GREEN)  # big +10 %
    assert width(regressed) == pytest.approx(base_widths[0] * 0.5, abs=0.2)
    assert width(improved) == pytest.approx(base_widths[0] * 1.1, abs=0.2)
    assert {"0.002 Mbps", "0.001 Mbps", "9e+06 Mbps", "9.9e+06 Mbps"} <= set(texts(root))


def test_whiskers_only_for_sides_with_several_samples() -> None:
    root = assert_inert(platform_svg(demo().platforms[0]))
    whiskers = list(root.iter(f"{SVG}path"))
    assert len(whiskers) == 2  # latency, base and PR; tcp and udp have one sample each
    assert all(w.get("d", "").startswith("M") for w in whiskers)


def test_a_bar_far_past_the_axis_is_cut_and_marked_with_its_true_value() -> None:
    base, head = side({"errors": 1.0}, platform="p"), side({"errors": 40.0}, platform="p")
    svg = platform_svg(compare(base, head).platforms[0])
    root = assert_inert(svg)
    assert "300 %" in texts(root)  # the axis stops at 300 %
    assert "40 Mbps" in texts(root)
    assert "+3900.0 %" not in texts(root)
    assert "+3.9e+03 %" in texts(root)
    assert len([e for e in root.iter(f"{SVG}line") if e.get("stroke") == "#ffffff"]) == 2


@pytest.mark.parametrize(
    ("base", "head"),
    [
        ([1e-300], [1e300]),
        ([1e300], [1e-300]),
        ([1.7e308, 1.0], [1.7e308]),
        ([0.0], [5.0]),
        ([-3.0], [-1.0]),
    ],
)
def test_absurd_values_still_draw(base: list[float], head: list[float]) -> None:
    comparison = compare(side({"m": base}, platform="p"), side({"m": head}, platform="p"))
    root = assert_inert(platform_svg(comparison.platforms[0]))
    assert len([r for r in root.iter(f"{SVG}rect") if r.get("height") == "12"]) >= 2
    for rect in root.iter(f"{SVG}rect"):
        assert 0 <= width(rect) < 5000  # finite, never negative
    single = compare(SideReport(), side({"m": base + head}, platform="p"))
    for rect in assert_inert(platform_svg(single.platforms[0])).iter(f"{SVG}rect"):
        assert 0 <= width(rect) < 5000


def test_two_units_draw_no_bars_but_keep_both_values() -> None:
    base = side({"rx": 900.0, "tx": 5.0}, platform="p", unit="Mbps")
    head = side({"tx": 5.0}, platform="p", unit="Mbps")
    side({"rx": 0.9}, platform="p", unit="Gbps", into=head)
    root = assert_inert(platform_svg(compare(base, head).platforms[0]))
    assert len(bars(root, BASE_COLOUR)) == 1  # tx only
    shown = texts(root)
    assert "base 900 (its own unit)" in shown
    assert "PR 0.9 Gbps" in shown


def test_the_legend_names_only_the_colours_drawn() -> None:
    base = side({"rx": 1.0, "tx": 1.0}, platform="p")
    head = side({"rx": 1.0, "tx": 0.5, "new": 2.0}, platform="p")
    shown = texts(parse(platform_svg(compare(base, head).platforms[0])))
    assert [t for t in shown if t in LEGEND] == ["base", "PR, unchanged", "PR, regressed"]
    assert "new" in shown  # the new metric's verdict, in words, without a bar


LEGEND = {"base", "PR, unchanged", "PR, regressed", "PR, improved", "PR, new", "this run"}


def test_a_value_with_nothing_to_compare_it_to_is_a_number_not_a_bar() -> None:
    base = side({"rx": 10.0, "tx": 5.0}, platform="p")
    head = side({"rx": 11.0, "new": 3.0}, platform="p", failures=[FailedCase("p", "tx", "crashed")])
    root = assert_inert(platform_svg(compare(base, head).platforms[0]))
    shown = texts(root)
    assert "no PR value" in shown
    assert "base 5 Mbps" in shown
    assert "no base value" in shown
    assert "PR 3 Mbps" in shown
    assert "failed on PR" in shown
    assert "failed on PR: tx: crashed" in shown  # the failed case, at the foot
    assert len(bars(root, BASE_COLOUR)) == 1  # rx alone is compared
    assert bars(root, OTHER_COLOUR) == []


def test_a_platform_only_the_base_measured_draws_the_base_values() -> None:
    base = side({"rx": 10.0, "tx": 5.0}, platform="p")
    head = side({"rx": 10.0}, platform="q")
    platform = next(p for p in compare(base, head).platforms if p.name == "p")
    root = assert_inert(platform_svg(platform))
    drawn = bars(root, BASE_COLOUR)
    assert len(drawn) == 2
    assert width(drawn[0]) == pytest.approx(2 * width(drawn[1]), abs=0.2)
    shown = texts(root)
    assert "comparison not available: no PR measurement" in shown
    assert any(t.startswith("values of the base alone") for t in shown)


def test_a_single_run_draws_plain_bars_one_panel_per_unit() -> None:
    head = side({"rx": 10.0, "tx": 5.0}, platform="p", failures=[FailedCase("p", "u", "why")])
    side({"lat": [20.0, 30.0]}, platform="p", unit="us", into=head)
    comparison = compare(SideReport(), head)
    root = assert_inert(platform_svg(comparison.platforms[0]))
    assert bars(root, BASE_COLOUR) == []
    drawn = bars(root, BLUE)
    assert len(drawn) == 3
    shown = texts(root)
    assert "Mbps" in shown  # the panels' headings
    assert "us" in shown
    assert "%" not in " ".join(shown)
    assert "failed: u: why" in shown  # a single run has no sides to name
    assert not any("not available" in line for line in shown)
    # One axis per unit: within Mbps, rx is twice tx.
    by_label = dict(zip(["rx", "tx", "lat"], drawn, strict=True))  # Mbps, then us
    assert width(by_label["rx"]) == pytest.approx(2 * width(by_label["tx"]), abs=0.2)
    assert len(list(root.iter(f"{SVG}path"))) == 1  # lat has two samples


def test_history_draws_one_bar_per_commit_with_the_same_code() -> None:
    points = [
        HistoryPoint("1a2b3c4", Stats.of([10.0])),
        HistoryPoint("5d6e7f8", Stats.of([11.0, 12.0])),
        HistoryPoint("9a0b1c2", Stats.of([8.0]), highlight=True),
    ]
    root = assert_inert(history_svg("tcp4_mbps", "Mbps", points))
    assert len(bars(root, HISTORY_COLOUR)) == 2
    assert len(bars(root, HIGHLIGHT_COLOUR)) == 1
    shown = texts(root)
    assert shown.index("1a2b3c4") < shown.index("5d6e7f8") < shown.index("9a0b1c2")
    assert "tcp4_mbps (Mbps)" in shown
    assert "11.5 Mbps (n=2)" in shown
    assert len(list(root.iter(f"{SVG}path"))) == 1
    # This PR against the median of the branch's commits (10.0 and 11.5: 10.75).
    assert "\u221225.6 %" in shown  # (8 - 10.75) / 10.75
    dashed = [line for line in root.iter(f"{SVG}line") if line.get("stroke-dasharray")]
    assert len(dashed) == 1
    assert_inert(history_svg("m", "", []))
    plain = parse(history_svg("m", "", points[:2]))
    assert [line for line in plain.iter(f"{SVG}line") if line.get("stroke-dasharray")] == []


@pytest.mark.parametrize("hostile", HOSTILE, ids=lambda h: repr(h[:24]))
def test_hostile_names_units_platforms_and_reasons_stay_text(hostile: str) -> None:
    base = side({hostile: 100.0, "plain": 1.0}, platform=hostile, unit=hostile)
    head = side(
        {hostile: 50.0},
        platform=hostile,
        unit=hostile,
        failures=[FailedCase(hostile, "plain", hostile)],
    )
    comparison = compare(base, head)
    svg = platform_svg(comparison.platforms[0])
    root = assert_inert(svg)
    shown = texts(root)
    label = fit(hostile)
    assert label in shown  # the name is there, as text, cleaned and cut
    whole = clean(hostile, 10_000)
    assert len(label) <= MAX_LABEL
    assert label == whole or (label.endswith("…") and whole.startswith(label[:-1]))
    if len(whole) < MAX_LABEL:
        assert label == whole  # short names are whole
    if len(whole) > 500:
        assert label.endswith("…")  # long ones are cut, wide scripts sooner
    assert not any(unicodedata.category(c) in ("Cc", "Cf") for t in shown for c in t)
    assert int(root.get("width", "0")) <= 1400  # no name makes the chart absurdly wide
    history = history_svg(hostile, hostile, [HistoryPoint(hostile, Stats.of([1.0]))], hostile)
    assert label in texts(assert_inert(history))


def test_one_platform_one_file_several_platforms_one_file_each() -> None:
    (single,) = plot_files(demo(), "out/chart.svg")
    assert (single.name, single.platform) == ("out/chart.svg", "p")
    base = side({"rx": 1.0}, platform="qemu_x86/atom")
    for name in ("qemu_x86_atom", "../../etc/passwd", "..", "a\\b", "ok"):
        side({"rx": 1.0}, platform=name, into=base)
    files = plot_files(compare(base, base), "out/chart.svg")
    names = sorted(f.name for f in files)
    assert names == sorted(
        [
            "out/chart-qemu_x86_atom.svg",
            "out/chart-qemu_x86_atom-2.svg",
            "out/chart-etc_passwd.svg",
            "out/chart-platform.svg",
            "out/chart-a_b.svg",
            "out/chart-ok.svg",
        ]
    )
    for file in files:
        assert_inert(file.svg)
        assert file.name.startswith("out/chart-")
        assert ".." not in file.name
        assert "/" not in file.name.removeprefix("out/")


@pytest.mark.parametrize(
    ("platform", "expected"),
    [
        ("qemu_x86/atom", "qemu_x86_atom"),
        ("../..", "platform"),
        (".hidden", "hidden"),
        ("a..b", "a.b"),
        ("x" * 500, "x" * 80),
        ("名前", "platform"),
        ("nul\x00byte", "nul_byte"),
    ],
)
def test_safe_name(platform: str, expected: str) -> None:
    assert safe_name(platform) == expected


def test_no_platform_still_gives_a_chart_saying_so() -> None:
    (only,) = plot_files(Comparison(()), "c.svg")
    assert "no measurements" in texts(assert_inert(only.svg))


def test_the_same_input_gives_the_same_bytes() -> None:
    assert platform_svg(demo().platforms[0]) == platform_svg(demo().platforms[0])


def test_a_hundred_metrics() -> None:
    values = {f"metric_{i:03d}": float(10 ** (i % 7) + i) for i in range(100)}
    moved = {
        name: value * (0.9 if i % 3 == 0 else 1.0) for i, (name, value) in enumerate(values.items())
    }
    comparison = compare(side(values, platform="p"), side(moved, platform="p"))
    root = assert_inert(platform_svg(comparison.platforms[0]))
    assert len(bars(root, BASE_COLOUR)) == 100
    assert len(bars(root, RED)) == 34
    assert int(root.get("height", "0")) > 100 * 30


# --- the command line -----------------------------------------------------------------------


def demo_dir() -> Path:
    return REPO / "examples" / "demo"


def test_compare_plot_writes_one_file_per_platform(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "perf.svg"
    assert main(["compare", str(demo_dir()), "--exit-zero", "--plot", str(target)]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["perf-fpga-vu13p.svg", "perf-qemu_x86.svg", "perf-qemu_x86_64.svg"]
    for path in tmp_path.iterdir():
        assert_inert(path.read_text(encoding="utf-8"))
    assert capsys.readouterr().out.startswith("<!-- perfbot:report -->")  # still printed


def test_compare_plot_never_writes_through_a_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    single = tmp_path / "one"
    (single / "base" / "p").mkdir(parents=True)
    (single / "head" / "p").mkdir(parents=True)
    log = (REPO / "examples/demo/base/qemu_x86/zperf.log").read_text()
    (single / "base" / "p" / "zperf.log").write_text(log)
    (single / "head" / "p" / "zperf.log").write_text(log)
    link = tmp_path / "chart.svg"
    link.symlink_to(victim)
    assert main(["compare", str(single), "--plot", str(link)]) == 2
    assert "is a symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "keep"


def test_compare_plot_is_confined_by_base_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "elsewhere.svg"
    code = main(["compare", str(demo_dir()), "--base-dir", str(REPO), "--plot", str(outside)])
    assert code == 2
    assert "--plot" in capsys.readouterr().err
    assert not outside.exists()


def test_the_readme_example_is_what_the_demo_draws() -> None:
    """After an intended change to the look, regenerate with:
    .venv/bin/perfbot compare examples/demo --exit-zero --plot examples/plot/demo.svg
    """
    for chart in plot_files(demo_comparison(), "demo.svg"):
        example = REPO / "examples" / "plot" / chart.name
        assert chart.svg == example.read_text(encoding="utf-8"), chart.name


def test_compare_plot_of_a_single_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run" / "qemu_x86"
    run.mkdir(parents=True)
    (run / "zperf.log").write_bytes((REPO / "examples/demo/head/qemu_x86/zperf.log").read_bytes())
    target = tmp_path / "run.svg"
    assert main(["compare", str(tmp_path / "run"), "--plot", str(target)]) == 0
    assert "tcp4_mbps" in capsys.readouterr().out  # the values are still printed
    root = assert_inert(target.read_text(encoding="utf-8"))
    assert bars(root, BASE_COLOUR) == []
    assert len(bars(root, BLUE)) == 8
    assert (
        "values of one run (no base), one panel per unit; whiskers: range of the samples"
        in texts(root)
    )


# --- judged as a picture: headless Chromium ---------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
RAN = 'document.documentElement.setAttribute("data-ran", "yes")'
# A name that would run RAN if any of it became markup: as a script, as an event handler.
SCRIPTED = f"</text><script>{RAN}</script><text onclick='{RAN}'>"


def chromium(tmp_path: Path, *args: str) -> str:
    """Headless Chromium's standard output for ``args``, bounded in time."""
    assert CHROMIUM, "chromium is not installed: run scripts/bootstrap"
    result = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",  # tests run as root in CI, where the sandbox refuses to start
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def intrinsic_size(tmp_path: Path, svg: Path) -> tuple[int, int]:
    """The size Chromium gives ``svg`` as an image, read from a page that shows it."""
    page = tmp_path / "page.html"
    page.write_text(
        f'<!doctype html><img src="{svg.name}" onload="document.body.setAttribute('
        "'data-size', this.naturalWidth + 'x' + this.naturalHeight)\">",
        encoding="utf-8",
    )
    match = re.search(r'data-size="(\d+)x(\d+)"', chromium(tmp_path, "--dump-dom", page.as_uri()))
    assert match, "the chart did not load as an image"
    return int(match[1]), int(match[2])


def screenshot(tmp_path: Path, svg: Path, size: tuple[int, int]) -> list[list[tuple[int, ...]]]:
    png = tmp_path / f"{svg.stem}.png"
    chromium(tmp_path, f"--screenshot={png}", f"--window-size={size[0]},{size[1]}", svg.as_uri())
    return decode_png(png.read_bytes())


def decode_png(data: bytes) -> list[list[tuple[int, ...]]]:
    """Rows of RGB pixels of an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, idat = 8, b""
    chunks: dict[bytes, bytes] = {}
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        if kind == b"IDAT":
            idat += body
        chunks.setdefault(kind, body)
        offset += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, interlace) == (8, 0), (depth, interlace)
    assert colour in (2, 6), colour
    channels = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    rows: list[list[tuple[int, ...]]] = []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[x : x + 3]) for x in range(0, stride, channels)])
        previous = line
    return rows


def rgb(colour: str) -> tuple[int, ...]:
    return tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))


def drawn_areas(root: ET.Element) -> dict[str, float]:
    """The area the SVG asks to be painted in each bar colour (legend swatches included)."""
    areas: dict[str, float] = dict.fromkeys((BASE_COLOUR, RED, GREEN, BLUE, OTHER_COLOUR), 0.0)
    for rect in root.iter(f"{SVG}rect"):
        fill = rect.get("fill", "")
        if fill in areas:
            areas[fill] += float(rect.get("width", "0")) * float(rect.get("height", "0"))
    return areas


def assert_drawn_as_written(tmp_path: Path, svg_text: str, name: str) -> None:
    """Chromium draws the chart at its declared size, every bar where the SVG puts it, and
    about as many pixels of each bar colour as the bars and swatches cover."""
    root = parse(svg_text)
    path = tmp_path / name
    path.write_text(svg_text, encoding="utf-8")
    declared = (int(root.get("width", "0")), int(root.get("height", "0")))
    assert intrinsic_size(tmp_path, path) == declared
    pixels = screenshot(tmp_path, path, declared)
    assert (len(pixels[0]), len(pixels)) == declared
    counts = Counter(pixel for row in pixels for pixel in row)
    for colour, area in drawn_areas(root).items():
        # Edges on half pixels blend with the background; the inside is the exact colour.
        assert 0.8 * area <= counts[rgb(colour)] <= 1.1 * area + 50, (colour, area)
    for colour in (BASE_COLOUR, RED, GREEN, BLUE):
        for rect in bars(root, colour):
            x, y = float(rect.get("x", "0")), float(rect.get("y", "0"))
            if width(rect) >= 8:  # a point near the bar's start, clear of any whisker
                assert pixels[int(y) + 6][int(x) + 4] == rgb(colour), (colour, x, y)
    # The last row and the footer are inside the picture, not cut off.
    assert any(pixel != (255, 255, 255) for row in pixels[-40:] for pixel in row)


@pytest.mark.slow
def test_chromium_draws_the_demo_chart_at_its_size_with_its_bars(tmp_path: Path) -> None:
    files = {f.platform: f.svg for f in plot_files(demo_comparison(), "demo.svg")}
    chart = files["qemu_x86"]
    areas = drawn_areas(parse(chart))
    assert min(areas[RED], areas[GREEN], areas[BLUE]) > 0  # the demo moves both ways
    assert_drawn_as_written(tmp_path, chart, "qemu_x86.svg")
    assert_drawn_as_written(tmp_path, files["fpga-vu13p"], "fpga.svg")  # whiskers, a failure


@pytest.mark.slow
def test_chromium_runs_nothing_from_a_hostile_chart(tmp_path: Path) -> None:
    control = tmp_path / "control.svg"
    control.write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>{RAN}'
        "</script></svg>",
        encoding="utf-8",
    )
    assert 'data-ran="yes"' in chromium(tmp_path, "--dump-dom", control.as_uri())  # it would
    base = side({SCRIPTED: 100.0, "rx": 5.0}, platform=SCRIPTED, unit=SCRIPTED)
    head = side({SCRIPTED: 50.0, "rx": 6.0}, platform=SCRIPTED, unit=SCRIPTED)
    chart = platform_svg(compare(base, head).platforms[0])
    path = tmp_path / "hostile.svg"
    path.write_text(chart, encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", path.as_uri())
    assert 'data-ran="yes"' not in dom
    assert "&lt;/text&gt;&lt;script&gt;" in dom  # the name is there, as text
    assert_drawn_as_written(tmp_path, chart, "hostile-drawn.svg")


def demo_comparison() -> Comparison:
    demo = REPO / "examples" / "demo"
    return compare(_local_side(demo / "base"), _local_side(demo / "head"))
