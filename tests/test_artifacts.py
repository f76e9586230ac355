"""Reading hostile artifact zips: layout, unsafe names, zip bombs, broken archives, PR numbers."""

from __future__ import annotations

import contextlib
import io
import random
import stat
import struct
import unicodedata
import warnings
import zipfile
import zlib
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfbot.app.artifacts import (
    ArtifactError,
    ArtifactLimits,
    _has_invisible,
    _is_invisible,
    read_pr_number_zip,
    read_report_zip,
    zip_sha256,
)
from perfbot.engine.read.sides import ReportFile
from perfbot.engine.show.escape import DEFAULT_IGNORABLE, MAX_COMBINING_MARKS, longest_mark_run
from perfbot.errors import PerfbotError

KiB = 1024
MiB = 1024 * KiB
Member = tuple[str | zipfile.ZipInfo, bytes]

# Byte layouts of the zip records (APPNOTE 4.3.7, 4.3.12, 4.3.16) and the offsets of the
# fields the tests patch.
LOCAL = struct.Struct("<4s5H3L2H")
CENTRAL = struct.Struct("<4s6H3L5H2L")
END = struct.Struct("<4s4H2LH")
LOCAL_CRC, LOCAL_FILE_SIZE = 14, 22
CENTRAL_FLAGS, CENTRAL_CRC, CENTRAL_FILE_SIZE = 8, 16, 24
NO_RATIO = ArtifactLimits(max_ratio=10**9)


def make_zip(members: Sequence[Member], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # zipfile warns about duplicate names, which some tests want on purpose.
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(buffer, "w", method) as archive:
            for name, data in members:
                archive.writestr(name, data)
    return buffer.getvalue()


def central_entries(data: bytes) -> list[int]:
    """Offsets of the central-directory records, found through the end record."""
    end = END.unpack_from(data, data.rindex(b"PK\x05\x06"))
    offset, offsets = end[6], []
    for _ in range(end[4]):
        offsets.append(offset)
        record = CENTRAL.unpack_from(data, offset)
        offset += CENTRAL.size + record[10] + record[11] + record[12]
    return offsets


def patch_u32(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + struct.pack("<L", value) + data[offset + 4 :]


def break_crc(data: bytes, entry: int) -> bytes:
    """Make member ``entry`` fail its CRC check if anything ever decompresses it."""
    offset = central_entries(data)[entry] + CENTRAL_CRC
    (crc,) = struct.unpack_from("<L", data, offset)
    return patch_u32(data, offset, crc ^ 0xFFFFFFFF)


def link(name: str, target: bytes) -> Member:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target


def noise(size: int) -> bytes:
    return random.Random(size).randbytes(size)


def stored_block(payload: bytes) -> bytes:
    """A non-final stored deflate block: it makes the inflater copy ``payload`` verbatim."""
    return b"\x00" + struct.pack("<HH", len(payload), len(payload) ^ 0xFFFF)


def overlapping_bomb(members: int, kernel_bytes: int) -> bytes:
    """Members whose data overlap (Fifield's construction): each one's deflate stream quotes
    the next local header in a stored block, then runs on into the next member's data, so all
    of them share one compressed kernel."""
    kernel = zlib.compressobj(9, zlib.DEFLATED, -15)
    kernel_data = kernel.compress(bytes(kernel_bytes)) + kernel.flush()
    names = [f"head/m{i:03}.bin".encode() for i in range(members)]
    headers = [b""] * members
    central = [b""] * members
    # Built from the last member back: a member's output is the next header plus its output.
    output, compressed = bytes(kernel_bytes), len(kernel_data)
    for i in reversed(range(members)):
        sizes = (zlib.crc32(output), compressed, len(output), len(names[i]))
        headers[i] = LOCAL.pack(b"PK\x03\x04", 20, 0, 8, 0, 0x21, *sizes, 0) + names[i]
        central[i] = CENTRAL.pack(b"PK\x01\x02", 20, 20, 0, 8, 0, 0x21, *sizes, 0, 0, 0, 0, 0, 0)
        output = headers[i] + output
        compressed += len(stored_block(headers[i])) + len(headers[i])
    body = b""
    for i in range(members):
        # The central record's last field is the local header's offset.
        central[i] = central[i][:-4] + struct.pack("<L", len(body)) + names[i]
        body += headers[i] + (stored_block(headers[i + 1]) if i + 1 < members else b"")
    directory = b"".join(central)
    end = END.pack(
        b"PK\x05\x06", 0, 0, members, members, len(directory), len(body + kernel_data), 0
    )
    return body + kernel_data + directory + end


# --- the report artifact -------------------------------------------------------------------


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_base_and_head_files_come_back_sorted_with_their_bytes(method: int) -> None:
    members: list[Member] = [
        ("head/fpga/tcp_rx_1.json", b'{"head": 1}'),
        ("base/fpga/tcp_rx_1.json", b'{"base": 1}'),
        ("base/zperf.log", b"ZPERF-DONE\n"),
    ]
    contents = read_report_zip(make_zip(members, method))
    assert contents.files == [
        ReportFile("base/fpga/tcp_rx_1.json", b'{"base": 1}'),
        ReportFile("base/zperf.log", b"ZPERF-DONE\n"),
        ReportFile("head/fpga/tcp_rx_1.json", b'{"head": 1}'),
    ]
    assert contents.skipped == []


def test_directories_are_left_out_silently() -> None:
    data = make_zip([("base/", b""), ("base/fpga/", b""), ("base/fpga/a.json", b"{}")])
    contents = read_report_zip(data)
    assert [file.path for file in contents.files] == ["base/fpga/a.json"]
    assert contents.skipped == []


def test_a_symlink_is_skipped_without_reading_its_data() -> None:
    data = make_zip([("head/a.json", b"{}"), link("head/passwd", b"/etc/passwd")])
    # If the link's data were decompressed, the broken CRC would make the read fail.
    contents = read_report_zip(break_crc(data, 1))
    assert contents.files == [ReportFile("head/a.json", b"{}")]
    assert contents.skipped == [("head/passwd", "symbolic link (not followed)")]


def test_a_special_file_is_skipped() -> None:
    fifo = zipfile.ZipInfo("head/fifo")
    fifo.external_attr = (stat.S_IFIFO | 0o644) << 16
    contents = read_report_zip(make_zip([(fifo, b"x"), ("head/a.json", b"{}")]))
    assert [file.path for file in contents.files] == ["head/a.json"]
    assert contents.skipped == [("head/fifo", "special file (not a regular file)")]


@pytest.mark.parametrize(
    ("name", "shown", "reason"),
    [
        ("../x", "../x", "'..'"),
        ("/etc/passwd", "/etc/passwd", "absolute"),
        ("C:\\x", "C:/x", "drive letter"),
        ("c:x", "c:x", "drive letter"),
        ("a/../../b", "a/../../b", "'..'"),
        ("a\\..\\b", "a/../b", "'..'"),
        ("\\\\server\\share\\x", "//server/share/x", "absolute"),
        ("base//x", "base//x", "empty component"),
        ("base/./x", "base/./x", "'.'"),
        ("base/a\x01b", "base/a?b", "control"),
        ("base/a\x7fb", "base/a?b", "control"),
        ("base/a\u202eb", "base/a?b", "invisible"),
    ],
)
def test_unsafe_names_are_skipped_with_a_reason_and_the_rest_is_read(
    name: str, shown: str, reason: str
) -> None:
    data = make_zip([("base/a.json", b"{}"), (name, b"evil"), ("head/a.json", b"{}")])
    contents = read_report_zip(data)
    assert [file.path for file in contents.files] == ["base/a.json", "head/a.json"]
    ((skipped_name, skipped_reason),) = contents.skipped
    assert skipped_name == shown
    assert reason in skipped_reason


def test_the_ascii_fast_path_refuses_exactly_the_characters_the_full_rule_refuses() -> None:
    # _has_invisible answers an ASCII name in one C pass; it must agree with the
    # per-character rule on every ASCII character, alone and inside a name.
    for code in range(128):
        char = chr(code)
        assert _has_invisible(f"base/{char}.json") == _is_invisible(char), repr(char)


def test_a_long_skipped_name_is_shortened_for_display() -> None:
    contents = read_report_zip(make_zip([("../" + "x" * 500, b"")]))
    ((shown, _),) = contents.skipped
    assert len(shown) == 120
    assert shown.endswith("…")


def test_a_duplicate_path_is_a_collision_and_no_copy_is_read() -> None:
    members: list[Member] = [
        ("head/a.json", b"first"),
        ("head/a.json", b"second"),
        ("head\\a.json", b"third"),
        ("head/b.json", b"{}"),
    ]
    # If any copy were decompressed, its broken CRC would make the read fail.
    data = break_crc(break_crc(break_crc(make_zip(members), 0), 1), 2)
    contents = read_report_zip(data)
    assert contents.files == [ReportFile("head/b.json", b"{}")]
    assert contents.collisions == [("head/a.json", "head/a.json", "head/a.json")]
    assert contents.skipped == []


@pytest.mark.parametrize(
    ("names", "collision"),
    [
        (["head/x.log", "HEAD/x.log"], ("head/", "HEAD/")),
        (["Base/x.log", "base/y.log"], ("Base/", "base/")),
        (["head/p/x.log", "head/P/y.log"], ("head/p/", "head/P/")),
        (["head/X.log", "head/x.LOG"], ("head/X.log", "head/x.LOG")),
        # The same name in composed and decomposed form (macOS writes the latter).
        (
            ["head/caf\u00e9.log", "head/cafe\u0301.log"],
            ("head/caf\u00e9.log", "head/cafe\u0301.log"),
        ),
        (["head/x", "head/x/y.log"], ("head/x", "head/x/")),
    ],
    ids=[
        "side-case",
        "side-case-other-files",
        "platform-case",
        "file-case",
        "nfc-nfd",
        "file-and-directory",
    ],
)
def test_names_alike_up_to_case_or_form_collide_and_none_is_read(
    names: list[str], collision: tuple[str, ...]
) -> None:
    members: list[Member] = [(name, b"data") for name in [*names, "base/keep.log"]]
    contents = read_report_zip(make_zip(members))
    assert contents.collisions == [collision]
    assert all(file.path not in names for file in contents.files)


def with_mode(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = mode << 16
    return info


LINK = stat.S_IFLNK | 0o777
DIRECTORY = stat.S_IFDIR | 0o755


@pytest.mark.parametrize(
    ("members", "collision"),
    [
        ([("head/x.log/", b""), ("head/x.log", b"data")], ("head/x.log", "head/x.log/")),
        (
            [(with_mode("head/x.log", DIRECTORY), b""), ("head/x.log", b"data")],
            ("head/x.log", "head/x.log/"),
        ),
        (
            [(with_mode("head/x.log", LINK), b"/etc/passwd"), ("head/x.log", b"data")],
            ("head/x.log", "head/x.log"),
        ),
        (
            [("head/x.log", b"data"), (with_mode("head/X.log", LINK), b"../../secret")],
            ("head/x.log", "head/X.log"),
        ),
    ],
    ids=["directory-entry", "directory-mode", "link-first", "link-after-case"],
)
def test_a_file_sharing_its_path_with_a_member_not_read_is_a_collision(
    members: list[Member], collision: tuple[str, ...]
) -> None:
    # unzip makes the directory or the link as well, and keeps one of the two (or fails):
    # the file's numbers must not be shown as if it were the only member of that path.
    contents = read_report_zip(make_zip([*members, ("base/keep.log", b"data")]))
    assert contents.collisions == [collision]
    assert [file.path for file in contents.files] == ["base/keep.log"]


def test_directory_entries_of_the_files_own_directories_are_no_collision() -> None:
    members: list[Member] = [
        ("head/", b""),
        ("head/p/", b""),
        ("head/p/", b""),
        ("Head/", b""),  # no file under it: no second spelling of a file's directory
        ("head/p/x.log", b"data"),
    ]
    contents = read_report_zip(make_zip(members))
    assert contents.collisions == []
    assert [file.path for file in contents.files] == ["head/p/x.log"]


def raw_zip(members: Sequence[tuple[bytes, bytes]]) -> bytes:
    """A stored zip written byte by byte, so that a name can hold what zipfile would not write."""
    body = directory = b""
    for name, data in members:
        sizes = (zlib.crc32(data), len(data), len(data), len(name))
        local = LOCAL.pack(b"PK\x03\x04", 20, 0, 0, 0, 0, *sizes, 0) + name
        directory += (
            CENTRAL.pack(b"PK\x01\x02", 20, 20, 0, 0, 0, 0, *sizes, 0, 0, 0, 0, 0, len(body)) + name
        )
        body += local + data
    count = len(members)
    return (
        body + directory + END.pack(b"PK\x05\x06", 0, 0, count, count, len(directory), len(body), 0)
    )


def test_a_name_with_a_nul_is_refused_never_read_as_the_part_before_it() -> None:
    data = raw_zip([(b"head/a.log\x00/../evil", b"hidden"), (b"head/b.log", b"ok")])
    # zipfile itself shows the name cut at the NUL: the refusal must look further.
    assert zipfile.ZipFile(io.BytesIO(data)).namelist()[0] == "head/a.log"
    contents = read_report_zip(data)
    assert contents.files == [ReportFile("head/b.log", b"ok")]
    assert contents.skipped == [("head/a.log?/../evil", "name holds a NUL byte")]


def test_a_directory_entry_holding_data_is_said() -> None:
    as_mode = zipfile.ZipInfo("head/p/zperf.log")
    as_mode.external_attr = (stat.S_IFDIR | 0o755) << 16
    members: list[Member] = [("head/p/", b"hidden"), (as_mode, b"more"), ("head/", b"")]
    contents = read_report_zip(make_zip(members))
    assert contents.files == []
    assert contents.skipped == [
        ("head/p/", "directory entry holding 6 bytes"),
        ("head/p/zperf.log", "directory entry holding 4 bytes"),
    ]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("head/\u3164/zperf.log", "U+3164"),
        ("head/qemu\u115f/zperf.log", "U+115F"),
        ("head/qemu\uffa0/zperf.log", "U+FFA0"),
        ("head/qemu\u034f/zperf.log", "U+034F"),
        ("head/qemu\ufe0f/zperf.log", "U+FE0F"),
        ("head/qemu\U000e0100/zperf.log", "U+E0100"),
        ("head/q" + "\u0301" * 4 + "/zperf.log", "combining marks"),
        ("head/qemu\u2800/zperf.log", "U+2800"),
    ],
    ids=[
        "hangul-filler",
        "choseong-filler",
        "halfwidth-filler",
        "grapheme-joiner",
        "variation-selector",
        "variation-selector-supplement",
        "combining-stack",
        "braille-blank",
    ],
)
def test_look_alike_names_are_refused(name: str, reason: str) -> None:
    contents = read_report_zip(make_zip([(name, b"x"), ("head/a.json", b"{}")]))
    assert [file.path for file in contents.files] == ["head/a.json"]
    ((shown, why),) = contents.skipped
    assert reason in why
    assert "\u3164" not in shown


def test_accented_names_within_the_mark_cap_are_read() -> None:
    contents = read_report_zip(make_zip([("head/vi\u1ec7t/zperf.log", b"x")]))
    assert [file.path for file in contents.files] == ["head/vi\u1ec7t/zperf.log"]


def test_a_nested_archive_is_returned_as_an_ordinary_file() -> None:
    inner = make_zip([("head/hidden.json", b"{}")])
    contents = read_report_zip(make_zip([("head/inner.zip", inner)]))
    assert contents.files == [ReportFile("head/inner.zip", inner)]


def test_too_many_members_are_refused_before_anything_is_decompressed() -> None:
    limits = ArtifactLimits(max_members=5, max_member_bytes=1 * MiB)
    # The first member is a bomb for these limits: reading it would fail with another reason.
    members: list[Member] = [("head/bomb", bytes(5 * MiB))]
    members += [(f"head/{i}", b"") for i in range(5)]
    with pytest.raises(ArtifactError, match="more than 5 entries"):
        read_report_zip(make_zip(members), limits=limits)


def test_exactly_max_members_is_accepted() -> None:
    members = [(f"head/{i}", b"") for i in range(4)] + [("head/d/", b"")]
    contents = read_report_zip(make_zip(members), limits=ArtifactLimits(max_members=5))
    assert len(contents.files) == 4


def test_a_zip_larger_than_the_limit_is_refused() -> None:
    data = make_zip([("head/a.bin", noise(2 * KiB))])
    with pytest.raises(ArtifactError, match="larger than 1 KiB"):
        read_report_zip(data, limits=ArtifactLimits(max_zip_bytes=1 * KiB))


def test_a_member_over_the_size_limit_is_refused() -> None:
    limits = ArtifactLimits(max_member_bytes=1 * MiB, max_ratio=10**9)
    with pytest.raises(ArtifactError, match="decompresses to more than 1 MiB") as caught:
        read_report_zip(make_zip([("head/bomb.bin", bytes(5 * MiB))]), limits=limits)
    assert caught.value.artifact == "perf-report"
    assert str(caught.value).startswith("artifact perf-report: member 'head/bomb.bin'")


def test_a_member_at_the_size_limit_is_read() -> None:
    limits = ArtifactLimits(max_member_bytes=1 * MiB, max_ratio=10**9)
    contents = read_report_zip(make_zip([("head/big.bin", bytes(1 * MiB))]), limits=limits)
    assert len(contents.files[0].data) == 1 * MiB


@pytest.mark.parametrize(
    ("patched", "reason"),
    [
        # zipfile ignores the local header's sizes; only the streaming count can stop this one.
        pytest.param((LOCAL_FILE_SIZE,), "decompresses to more than 1 MiB", id="local-header"),
        # zipfile stops at the claimed size, and the CRC of the whole data then fails.
        pytest.param((LOCAL_FILE_SIZE, CENTRAL_FILE_SIZE), "corrupt", id="both-headers"),
    ],
)
def test_a_header_claiming_a_tiny_size_does_not_let_a_bomb_through(
    patched: tuple[int, ...], reason: str
) -> None:
    data = make_zip([("head/bomb.bin", bytes(5 * MiB))])
    for field in patched:
        base = 0 if field == LOCAL_FILE_SIZE else central_entries(data)[0]
        data = patch_u32(data, base + field, 100)
    limits = ArtifactLimits(max_member_bytes=1 * MiB, max_ratio=10**9)
    with pytest.raises(ArtifactError, match=reason):
        read_report_zip(data, limits=limits)


def test_a_member_that_expands_too_much_is_refused() -> None:
    with pytest.raises(ArtifactError, match="expands more than 200-fold"):
        read_report_zip(make_zip([("head/zeros.bin", bytes(1 * MiB))]))


def test_a_small_member_that_compresses_well_is_read() -> None:
    contents = read_report_zip(make_zip([("head/zeros.txt", bytes(60 * KiB))]))
    assert contents.files == [ReportFile("head/zeros.txt", bytes(60 * KiB))]


def test_a_large_member_that_does_not_compress_is_read() -> None:
    contents = read_report_zip(make_zip([("head/noise.bin", noise(1 * MiB))]))
    assert len(contents.files[0].data) == 1 * MiB


def test_many_small_members_that_expand_too_much_together_are_refused() -> None:
    members: list[Member] = [(f"head/{i}.txt", bytes(60 * KiB)) for i in range(20)]
    with pytest.raises(ArtifactError, match="200-fold overall"):
        read_report_zip(make_zip(members))


@pytest.mark.parametrize(("count", "refused"), [(2, False), (3, True)])
def test_the_total_limit_counts_across_members(count: int, refused: bool) -> None:
    members: list[Member] = [(f"head/{i}.bin", noise(40 * KiB + i)) for i in range(count)]
    limits = ArtifactLimits(max_total_bytes=100 * KiB)
    if refused:
        with pytest.raises(ArtifactError, match="decompress to more than 100 KiB"):
            read_report_zip(make_zip(members), limits=limits)
    else:
        assert len(read_report_zip(make_zip(members), limits=limits).files) == count


@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        pytest.param(ArtifactLimits(), "expands more than 200-fold", id="ratio"),
        pytest.param(ArtifactLimits(max_total_bytes=4 * MiB, max_ratio=10**9), "4 MiB", id="total"),
    ],
)
def test_overlapping_members_are_caught(limits: ArtifactLimits, reason: str) -> None:
    data = overlapping_bomb(members=20, kernel_bytes=1 * MiB)
    assert len(data) < 8 * KiB
    with pytest.raises(ArtifactError, match=reason):
        read_report_zip(data, limits=limits)


def test_an_encrypted_member_is_refused() -> None:
    data = make_zip([("head/a.json", b"{}")])
    offset = central_entries(data)[0] + CENTRAL_FLAGS
    data = data[:offset] + b"\x01" + data[offset + 1 :]
    with pytest.raises(ArtifactError, match=r"'head/a\.json' is encrypted"):
        read_report_zip(data)


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_compression_without_an_output_bound_is_refused(method: int) -> None:
    with pytest.raises(ArtifactError, match=f"compression method {method}"):
        read_report_zip(make_zip([("head/a.json", b"{}")], method))


@pytest.mark.parametrize(
    ("mangle", "reason"),
    [
        pytest.param(lambda zip_: b"", "not a readable zip", id="empty"),
        pytest.param(lambda zip_: b"hello, world\n" * 10, "not a readable zip", id="text"),
        pytest.param(lambda zip_: zip_[: len(zip_) - 30], "not a readable zip", id="truncated"),
        pytest.param(lambda zip_: zip_[:60] + zip_[70:], "corrupt", id="cut-middle"),
        pytest.param(lambda zip_: zip_[:45] + b"\xff" * 8 + zip_[53:], "corrupt", id="bad-data"),
        pytest.param(lambda zip_: b"PK\x03\x04" + zip_[4:][::-1], "not a readable zip", id="junk"),
        # The name is flagged as UTF-8 but is not: zipfile fails with UnicodeDecodeError.
        pytest.param(
            lambda zip_: zip_.replace("ä".encode(), b"\xff\xff"),
            "not a readable zip",
            id="bad-name",
        ),
    ],
)
def test_a_broken_zip_is_refused_with_a_reason(
    mangle: Callable[[bytes], bytes], reason: str
) -> None:
    data = make_zip([("head/ä.json", b'{"metrics": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}' * 4)])
    with pytest.raises(ArtifactError, match=reason):
        read_report_zip(mangle(data))


def test_the_error_is_a_perfbot_error_with_a_sentence() -> None:
    error = ArtifactError("perf-report", "holds more than 5 entries")
    assert isinstance(error, PerfbotError)
    assert (error.artifact, error.reason) == ("perf-report", "holds more than 5 entries")
    assert str(error) == "artifact perf-report: holds more than 5 entries"


def test_zip_sha256_has_the_digest_field_format() -> None:
    assert zip_sha256(b"") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


# --- the PR-number artifact ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "number"),
    [(b"7\n", 7), (b" 42 ", 42), (b"\r\n1234\r\n", 1234), (b"2147483647", 2_147_483_647)],
)
def test_a_pr_number_is_read(content: bytes, number: int) -> None:
    assert read_pr_number_zip(make_zip([("pr_number", content)])) == number


def test_directories_beside_the_pr_number_are_ignored() -> None:
    assert read_pr_number_zip(make_zip([("pr/", b""), ("pr/number", b"5\n")])) == 5


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"0", "number out of range"),
        (b"2147483648", "number out of range"),
        (b"12345678901", "number out of range"),
        (b"00000000042", "number out of range"),
        (b"-1", "is not a decimal number"),
        (b"+5", "is not a decimal number"),
        (b"1e3", "is not a decimal number"),
        (b"abc", "is not a decimal number"),
        (b"4 2", "is not a decimal number"),
        ("٣".encode(), "is not a decimal number"),
        (b"", "file is empty"),
        (b"\n", "file is empty"),
        (b"1" * 64 + b"\n", "file larger than 64 bytes"),
        (b"1" * 100, "file larger than 64 bytes"),
    ],
)
def test_a_bad_pr_number_is_refused(content: bytes, reason: str) -> None:
    with pytest.raises(ArtifactError, match=reason):
        read_pr_number_zip(make_zip([("pr_number", content)]))


def test_a_pr_number_of_64_bytes_is_still_read() -> None:
    assert read_pr_number_zip(make_zip([("pr_number", b" " * 62 + b"9\n")])) == 9


def test_hostile_pr_content_is_echoed_short_and_without_control_characters() -> None:
    with pytest.raises(ArtifactError) as caught:
        read_pr_number_zip(make_zip([("pr", b"x\x1b[31m" + b"y" * 50)]))
    assert "\x1b" not in caught.value.reason
    assert "y" * 41 not in caught.value.reason
    assert caught.value.reason.startswith("is not a decimal number: 'x?[31m")


@pytest.mark.parametrize(
    ("members", "reason"),
    [
        ([("a", b"1"), ("b", b"2")], "holds 2 files, expected one"),
        ([], "holds 0 files, expected one"),
        ([("d/", b"")], "holds 0 files, expected one"),
        ([link("pr", b"/etc/passwd")], "symbolic link"),
    ],
)
def test_a_pr_number_zip_must_hold_one_regular_file(members: list[Member], reason: str) -> None:
    with pytest.raises(ArtifactError, match=reason) as caught:
        read_pr_number_zip(make_zip(members))
    assert str(caught.value).startswith("artifact pr-number: ")


def test_a_pr_number_zip_with_many_entries_is_refused() -> None:
    members = [(f"d{i}/", b"") for i in range(20)] + [("pr", b"1")]
    with pytest.raises(ArtifactError, match="more than 16 entries"):
        read_pr_number_zip(make_zip(members))


def test_a_broken_pr_number_zip_is_refused() -> None:
    with pytest.raises(ArtifactError, match="not a readable zip"):
        read_pr_number_zip(b"7\n")
    with pytest.raises(ArtifactError, match="corrupt"):
        read_pr_number_zip(break_crc(make_zip([("pr", b"7\n")]), 0))


# --- properties ----------------------------------------------------------------------------

VALID = make_zip([("base/a.json", b'{"a": 1}' * 20), ("head/b/c.log", b"ZPERF-DONE\n" * 20)])
PIECES = st.sampled_from(
    [
        *["..", ".", "", "a", "A", "b.json", "B.JSON", "C:", "/", "\\", "..\\", "\x00", "\x7f"],
        *["head/", "HEAD/", "\u3164", "\ufe0f", "\u0301", "\u0301\u0302\u0303", "e\u0301"],
        "\u00e9",
    ]
)
NAMES = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=24),
    st.lists(PIECES, min_size=1, max_size=6).map("".join),
).filter(lambda name: name.split("\x00")[0] != "")  # zipfile cuts names at NUL


def assert_safe(paths: list[str]) -> None:
    for path in paths:
        assert not path.startswith("/")
        assert "\\" not in path
        assert ".." not in path.split("/")
        assert "" not in path.split("/")
        assert "\x00" not in path
        assert not set(path) & DEFAULT_IGNORABLE
        assert longest_mark_run(path) <= MAX_COMBINING_MARKS
    # No two files are one path to a file system that ignores case or Unicode form, and
    # no file is also a directory of another.
    folded = [unicodedata.normalize("NFKC", path).casefold() for path in paths]
    assert len(set(folded)) == len(folded)
    assert not {f"{path}/" for path in folded} & {
        path[: i + 1] for path in folded for i, char in enumerate(path) if char == "/"
    }


def read_or_refuse(data: bytes) -> list[str]:
    try:
        return [file.path for file in read_report_zip(data).files]
    except ArtifactError:
        return []


@given(st.binary(max_size=2048))
def test_arbitrary_bytes_only_ever_raise_artifact_error(data: bytes) -> None:
    assert_safe(read_or_refuse(data))
    with contextlib.suppress(ArtifactError):
        read_pr_number_zip(data)


@given(st.integers(0, len(VALID) - 1), st.binary(min_size=1, max_size=8))
def test_a_damaged_zip_only_ever_raises_artifact_error(offset: int, junk: bytes) -> None:
    assert_safe(read_or_refuse(VALID[:offset] + junk + VALID[offset + len(junk) :]))


@settings(max_examples=400)
@given(st.lists(NAMES, max_size=6))
def test_no_member_name_yields_an_unsafe_path(names: list[str]) -> None:
    data = make_zip([(name, b"x") for name in names])
    contents = read_report_zip(data)
    assert_safe([file.path for file in contents.files])
    assert len(contents.files) + len(contents.skipped) <= len(names)
