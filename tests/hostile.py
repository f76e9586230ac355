"""Builders and checks for the hostile-input tests (tests/test_hostile.py).

Every artifact here is what a fork's workflow could upload: broken or booby-trapped zips,
hostile JSON, names written to become mentions, links or HTML, wrong files, forged PR
numbers. The checks say what must hold of anything perfbot writes, whatever it was fed.
"""

from __future__ import annotations

import html
import io
import json
import random
import re
import stat
import struct
import tarfile
import warnings
import zipfile
import zlib
from collections.abc import Mapping, Sequence

from perfbot.engine.show.escape import ZWSP
from perfbot.engine.show.render import MARKER
from perfbot.sandbox.fakegithub import FakeGitHub
from tests.harness import ZPERF_BASE, zip_of, zperf_log

KiB = 1024
MiB = 1024 * KiB

PLATFORM = "qemu_x86"
# The central-directory record (APPNOTE 4.3.12) and the offsets of the fields patched here.
_LOCAL = struct.Struct("<4s5H3L2H")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_CENTRAL_FLAGS, _CENTRAL_FILE_SIZE = 8, 24
_END = struct.Struct("<4s4H2LH")
# Tags perfbot itself writes; a tag from a report must never get through.
OUR_TAGS = frozenset({"code", "details", "summary", "sub"})
LEAKS = ("Traceback", 'File "', "ghs_", "/blobs/", "storage.fakegithub")


# --- zips -------------------------------------------------------------------------------------


def normal_files(side_values: Mapping[str, float] = ZPERF_BASE) -> dict[str, str | bytes]:
    """A plain zperf measurement on both sides, so a hostile file rides along a real report."""
    return {
        f"base/{PLATFORM}/zperf.log": zperf_log(ZPERF_BASE),
        f"head/{PLATFORM}/zperf.log": zperf_log(side_values),
    }


def with_normal(extra: Mapping[str, str | bytes]) -> bytes:
    """The normal report plus ``extra`` members (path → content), deflated."""
    return zip_of({**normal_files(), **extra})


def zip_members(
    members: Sequence[tuple[str | zipfile.ZipInfo, bytes | str]],
    method: int = zipfile.ZIP_DEFLATED,
) -> bytes:
    """A zip of exactly these members, duplicates allowed, with ``method``."""
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about duplicate names
        with zipfile.ZipFile(buffer, "w", method) as archive:
            for name, data in members:
                archive.writestr(name, data)
    return buffer.getvalue()


def stored(files: Mapping[str, str | bytes]) -> bytes:
    """Members stored, not compressed: the ratio limit then never stops a big JSON early."""
    return zip_members(list(files.items()), zipfile.ZIP_STORED)


def symlink(name: str, target: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def _central_offsets(data: bytes) -> list[int]:
    end = _END.unpack_from(data, data.rindex(b"PK\x05\x06"))
    offset, offsets = end[6], []
    for _ in range(end[4]):
        offsets.append(offset)
        record = _CENTRAL.unpack_from(data, offset)
        offset += _CENTRAL.size + record[10] + record[11] + record[12]
    return offsets


def patch_central(data: bytes, entry: int, field_offset: int, value: int, fmt: str = "<L") -> bytes:
    """``data`` with one field of central-directory record ``entry`` overwritten."""
    at = _central_offsets(data)[entry] + field_offset
    packed = struct.pack(fmt, value)
    return data[:at] + packed + data[at + len(packed) :]


def encrypted(data: bytes, entry: int = 0) -> bytes:
    """The member's "encrypted" flag set (the bytes stay plain: perfbot must not try)."""
    at = _central_offsets(data)[entry] + _CENTRAL_FLAGS
    (flags,) = struct.unpack_from("<H", data, at)
    return patch_central(data, entry, _CENTRAL_FLAGS, flags | 0x1, "<H")


def lying_size(data: bytes, entry: int, claimed: int) -> bytes:
    """The member's uncompressed size in the central directory replaced by ``claimed``."""
    return patch_central(data, entry, _CENTRAL_FILE_SIZE, claimed)


def nul_in_name(real: str, shown: str, values: Mapping[str, float] = ZPERF_BASE) -> bytes:
    """A normal report plus a zperf log of ``values`` named ``real`` + NUL + ``shown``."""
    placeholder = "X" * (len(real) + 1 + len(shown))
    data = zip_of({**normal_files(), placeholder: zperf_log(values)})
    return data.replace(placeholder.encode(), f"{real}\x00{shown}".encode())


def bomb(size: int) -> bytes:
    """One member of ``size`` zero bytes, deflated about a thousand-fold."""
    return zip_of({f"head/{PLATFORM}/zperf.log": bytes(size)})


def big_member(size: int) -> bytes:
    """One member of about ``size`` bytes that deflates only ~90-fold: under the ratio limit."""
    rng = random.Random(size)
    block_bytes = 64 * KiB
    # A block repeats only 8 blocks later, beyond deflate's 32 KiB window: its noise stays.
    blocks = [rng.randbytes(700) + bytes(block_bytes - 700) for _ in range(8)]
    data = b"".join(blocks[i % 8] for i in range(size // block_bytes + 1))
    compressor = zlib.compressobj(1, zlib.DEFLATED, -15)
    raw = compressor.compress(data) + compressor.flush()
    name = f"head/{PLATFORM}/zperf.log".encode()
    sizes = (zlib.crc32(data), len(raw), len(data), len(name))
    # zipfile cannot store pre-compressed data, so the one-member zip is assembled by hand.
    local = _LOCAL.pack(b"PK\x03\x04", 20, 0, 8, 0, 0, *sizes, 0) + name
    central = _CENTRAL.pack(b"PK\x01\x02", 20, 20, 0, 8, 0, 0, *sizes, 0, 0, 0, 0, 0, 0) + name
    end = _END.pack(b"PK\x05\x06", 0, 0, 1, 1, len(central), len(local) + len(raw), 0)
    return local + raw + central + end


def many_members(count: int) -> bytes:
    return zip_of({**normal_files(), **{f"head/{PLATFORM}/m{i}.log": "" for i in range(count)}})


def nested_zip() -> bytes:
    inner = zip_of(normal_files())
    return with_normal({f"head/{PLATFORM}/inner.zip": inner})


def nested_targz() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        payload = zperf_log(ZPERF_BASE).encode()
        info = tarfile.TarInfo("zperf.log")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    return with_normal({f"head/{PLATFORM}/results.tar.gz": buffer.getvalue()})


def zip64() -> bytes:
    """A normal report written with zip64 extra fields (legal, if unusual for artifacts)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in normal_files().items():
            with archive.open(name, "w", force_zip64=True) as member:
                member.write(content.encode() if isinstance(content, str) else content)
    return buffer.getvalue()


def zip64_absurd_count() -> bytes:
    """A zip64 end record that claims 2**62 entries in a central directory of a few bytes."""
    data = zip64()
    end_at = data.rindex(b"PK\x05\x06")
    end = list(_END.unpack_from(data, end_at))
    record64 = struct.pack(
        "<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 2**62, 2**62, end[5], end[6]
    )
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, end_at, 1)
    end[3] = end[4] = 0xFFFF
    return data[:end_at] + record64 + locator + _END.pack(*end)


# --- report files ------------------------------------------------------------------------------


def perfbot_json(metrics: object, **extra: object) -> str:
    return json.dumps({"perfbot": 1, "platform": "json", "metrics": metrics, **extra})


def metric(name: str = "tcp.throughput", value: object = 1.0, **extra: object) -> dict[str, object]:
    """A perfbot JSON metric; ``values=[...]`` in ``extra`` replaces ``value``."""
    return {"name": name, **({} if "values" in extra else {"value": value}), **extra}


def json_pair(base: str, head: str, name: str = "j.json") -> bytes:
    """The normal report plus a perfbot JSON file on each side."""
    return with_normal({f"base/json/{name}": base, f"head/json/{name}": head})


def head_file(content: str | bytes, name: str = "hostile.json", *, store: bool = False) -> bytes:
    """The normal report plus one hostile file on the head side."""
    files = {**normal_files(), f"head/{PLATFORM}/{name}": content}
    return stored(files) if store else zip_of(files)


def named_metric(name: str) -> bytes:
    """A perfbot JSON metric called ``name`` that regresses, so its row is shown."""
    return json_pair(
        perfbot_json([metric(name, 100.0, unit="Mbps")]),
        perfbot_json([metric(name, 50.0, unit="Mbps")]),
    )


def named_unit(unit: str) -> bytes:
    return json_pair(
        perfbot_json([metric("rx", 100.0, unit=unit)]),
        perfbot_json([metric("rx", 50.0, unit=unit)]),
    )


def named_platform(platform: str) -> bytes:
    """zperf logs under a platform directory called ``platform``, regressed on head."""
    return zip_of(
        {
            f"base/{platform}/zperf.log": zperf_log(ZPERF_BASE),
            f"head/{platform}/zperf.log": zperf_log({**ZPERF_BASE, "tcp4_mbps": 1.0}),
        }
    )


def named_reason(reason: str) -> bytes:
    failure = {"case": "udp", "reason": reason}
    return json_pair(
        perfbot_json([metric("rx", 100.0)]),
        perfbot_json([metric("rx", 100.0)], failures=[failure]),
    )


def runs_disagree(case: str, setting: str) -> bytes:
    """Two head runs of case ``case`` (perfbot JSON version 2) whose settings disagree: the
    second ran with ``mode`` set to ``setting``, so its file is left out and said so."""

    def run(mode: str) -> str:
        entry = metric("rx", 100.0, unit="Mbps", settings={"mode": mode})
        return json.dumps({"perfbot": 2, "metrics": [entry]})

    return with_normal(
        {
            f"head/{PLATFORM}/{case}_1.json": run("plain"),
            f"head/{PLATFORM}/{case}_2.json": run(setting),
        }
    )


def iperf3_error_case(case: str) -> bytes:
    """An iperf3 error file whose file name (so its case name) is ``case``."""
    error = json.dumps(
        {
            "start": {"connected": [], "version": "iperf 3.16"},
            "intervals": [],
            "end": {},
            "error": "the server is busy running a test. try again later",
        }
    )
    return with_normal({f"head/{PLATFORM}/{case}.json": error})


def many_metrics(count: int) -> bytes:
    """``count`` zperf metrics on each side of one platform, every other one regressed."""
    base = "".join(f"ZPERF-RESULT m{i}_mbps=100.5\n" for i in range(count))
    head = "".join(f"ZPERF-RESULT m{i}_mbps={50.5 if i % 2 else 100.5}\n" for i in range(count))
    return zip_of(
        {"base/big/zperf.log": base + "ZPERF-DONE\n", "head/big/zperf.log": head + "ZPERF-DONE\n"}
    )


# --- checks -------------------------------------------------------------------------------------


def visible(body: str) -> str:
    """Roughly what a reader sees: perfbot's tags gone, character references decoded (so a
    tag from a report shows as the text it was), zero-width spaces gone."""
    untagged = re.sub(r"</?(?:code|sub)>", "", body)
    return html.unescape(untagged).replace(ZWSP, "")


_CHART = re.compile(r"^```mermaid\n(.*?)\n```$", re.MULTILINE | re.DOTALL)


def without_charts(body: str) -> str:
    """``body`` without perfbot's mermaid blocks (code to GitHub, where ``-->``, ``@`` and
    ``#`` are inert), once each is checked to be inert on its own: no backtick (nothing
    closes its fence early), no ``%%`` (no directive), no tag, balanced quotes on every
    line. What GitHub makes of the whole is checked by tests/test_markdown_render.py."""
    for chart in _CHART.findall(body):
        assert "`" not in chart
        assert "%%" not in chart
        assert "<" not in chart
        assert all(line.count('"') % 2 == 0 for line in chart.split("\n")), chart
    return _CHART.sub("", body)


def assert_inert(body: str, run_link: str) -> None:
    """Nothing in ``body`` is markup, a mention, a reference or a link, except perfbot's own."""
    assert body.startswith(MARKER + "\n")
    body = without_charts(body)
    rest = body[len(MARKER) :]
    assert "<!--" not in rest
    assert "-->" not in rest
    tags = {tag.lower().lstrip("/") for tag in re.findall(r"<(/?[A-Za-z][A-Za-z0-9-]*)", body)}
    assert tags <= OUR_TAGS, tags - OUR_TAGS
    assert body.count("<details>") == body.count("</details>")
    assert "![" not in body
    for match in re.finditer(r"\]\(", body):
        assert body.startswith(f"]({run_link}", match.start()), body[
            match.start() : match.start() + 80
        ]
    assert body.count("://") == body.count(f"]({run_link}")
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]", body)
    # A table row keeps perfbot's cell count (its delimiter row's, which no name writes):
    # no pipe from a report splits a cell, in the header or below it.
    for table in re.split(r"\n(?!\|)", body):
        rows = [line for line in table.split("\n") if line.startswith("|")]
        if rows:
            assert len(rows) >= 2, rows
            assert re.fullmatch(r"\|(?:-+:?\|)+", rows[1]), rows[1]
            width = rows[1].count("|")
            for line in rows:
                assert line.count("|") == width, line
    # GitHub finds mentions and references in the rendered text, where references are decoded.
    shown = html.unescape(body.replace(f"]({run_link}", "]("))
    assert not re.search(r"@[A-Za-z0-9]", shown)
    assert not re.search(r"#[0-9]", shown)
    assert not re.search(r"gh-[0-9]", shown, re.IGNORECASE)
    # A commit SHA (bare, or after owner/repo@) links; perfbot's own short SHAs are the
    # only seven-hex-digit runs, each alone in a <code> element.
    assert not re.search(r"[0-9A-Fa-f]{7,}", re.sub(r"<code>[0-9a-f]{7}</code>", "", shown))
    assert not re.search(r"www\.", shown, re.IGNORECASE)


def assert_no_leak(text: str, fake: FakeGitHub) -> None:
    for leak in (*LEAKS, *fake.tokens):
        assert leak not in text, leak
