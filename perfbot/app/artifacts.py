"""Reading artifact zips made by untrusted workflows, in memory and within limits."""

from __future__ import annotations

import hashlib
import io
import re
import stat
import unicodedata
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from typing import NoReturn

from perfbot.engine.read.sides import ReportFile
from perfbot.engine.show.escape import DEFAULT_IGNORABLE, MAX_COMBINING_MARKS, longest_mark_run
from perfbot.errors import PerfbotError

KiB = 1024
MiB = 1024 * KiB

# Members that decompress to less than this are not held to the ratio limit: a short text
# report can shrink 500-fold, and a bomb needs size to do harm.
RATIO_EXEMPT_BYTES = 64 * KiB
# How much is decompressed per read: a limit is overshot by at most this much.
_CHUNK_BYTES = 64 * KiB
# Every central-directory entry starts with this signature, so its count in the raw bytes is an
# upper bound on the entries zipfile would parse; checking it first keeps a zip of a million
# empty entries from costing a million ZipInfo objects.
_CENTRAL_DIR_SIGNATURE = b"PK\x01\x02"
# upload-artifact writes deflate. zipfile decompresses bzip2 and lzma without an output bound,
# so a single read of them could expand past every limit before it is counted.
_READABLE_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
_ENCRYPTED_FLAGS = 0x1 | 0x40  # traditional and strong encryption
_DRIVE = re.compile(r"[A-Za-z]:")
_DIGITS = re.compile(rb"[0-9]+")
_ECHO_CHARS = 40
_DISPLAY_CHARS = 120
_PR_FILE_MAX_BYTES = 64
_PR_MAX_DIGITS = 10
_PR_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ArtifactLimits:
    """How much an artifact may hold; beyond any limit it is refused, never truncated."""

    max_zip_bytes: int = 50 * MiB
    max_members: int = 2_000
    max_member_bytes: int = 64 * MiB
    max_total_bytes: int = 256 * MiB
    max_ratio: int = 200


DEFAULT_LIMITS = ArtifactLimits()
# A PR-number zip holds one tiny file; anything much bigger is not one.
_PR_LIMITS = ArtifactLimits(max_zip_bytes=64 * KiB, max_members=16)


@dataclass(frozen=True, slots=True)
class ArtifactContents:
    """The files of a report artifact, sorted by path, and the members left out with why.

    ``collisions`` lists groups of names that are the same path up to case or Unicode
    form, or the same path twice, or a file that is also a directory: ``unzip`` would
    keep one of them (which one depends on the tool and the file system), so none of
    their members is in ``files``. Each group holds the colliding names as shown, with
    a trailing ``/`` on a directory.
    """

    files: list[ReportFile]
    skipped: list[tuple[str, str]]
    collisions: list[tuple[str, ...]] = field(default_factory=list)


class ArtifactError(PerfbotError):
    """An artifact could not be used at all (not a zip, corrupt, or over a limit)."""

    def __init__(self, artifact: str, reason: str) -> None:
        self.artifact = artifact
        self.reason = reason
        super().__init__(f"artifact {_display(artifact)}: {reason}")


def zip_sha256(data: bytes) -> str:
    """The zip's digest in the form of the artifact's ``digest`` field (``sha256:<hex>``)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def read_report_zip(
    data: bytes, name: str = "perf-report", limits: ArtifactLimits = DEFAULT_LIMITS
) -> ArtifactContents:
    """The report files in an artifact zip; members with unusable names are skipped, not fatal."""
    with _open_zip(data, name, limits) as archive:
        members = archive.infolist()
        _check_members(members, name)
        budget = _Budget(name, limits, len(data))
        accepted: list[tuple[str, zipfile.ZipInfo]] = []
        skipped: list[tuple[str, str]] = []
        # Members not read that unzip would still create (links, special files, directory
        # entries, ending in "/"): a read file that shares their path is ambiguous too.
        unread: list[str] = []
        for info in members:
            # zipfile cuts a name at its first NUL (info.filename); the name as stored is
            # kept in orig_filename. Such a name is refused whole: read as the part before
            # the NUL it would pass for a file the zip does not name.
            if "\x00" in info.orig_filename:
                skipped.append((_display(info.orig_filename), "name holds a NUL byte"))
                continue
            path = _normalise(info.filename)
            if _is_directory(info, path):
                # An empty directory entry is normal; one that holds data is not a file
                # perfbot reads, and must not vanish without a word.
                held = len(_read_member(archive, info, budget))
                if held:
                    skipped.append((_display(path), f"directory entry holding {held} bytes"))
                if path.rstrip("/") and _path_problem(path.rstrip("/")) is None:
                    unread.append(path.rstrip("/") + "/")
                continue
            path_problem = _path_problem(path)
            problem = _type_problem(info) or path_problem
            if problem is not None:
                skipped.append((_display(path), problem))
                if path_problem is None:
                    unread.append(path)
                continue
            accepted.append((path, info))
        withheld, collisions = _collisions([path for path, _ in accepted] + unread)
        files = [
            ReportFile(path, _read_member(archive, info, budget))
            for index, (path, info) in enumerate(accepted)
            if index not in withheld
        ]
    return ArtifactContents(sorted(files, key=lambda file: file.path), skipped, collisions)


def read_pr_number_zip(data: bytes, name: str = "pr-number") -> int:
    """The PR number held by a PR-number artifact: one file with a short positive decimal."""
    with _open_zip(data, name, _PR_LIMITS) as archive:
        members = [i for i in archive.infolist() if not _is_directory(i, _normalise(i.filename))]
        _check_members(members, name)
        if len(members) != 1:
            raise ArtifactError(name, f"holds {len(members)} files, expected one")
        (member,) = members
        problem = _type_problem(member)
        if problem is not None:
            raise ArtifactError(name, f"its file is a {problem}, expected a regular file")
        # One byte more than allowed is enough to know the file is too large.
        raw = _read_prefix(archive, member, _PR_FILE_MAX_BYTES + 1, name)
    if len(raw) > _PR_FILE_MAX_BYTES:
        raise ArtifactError(name, f"file larger than {_PR_FILE_MAX_BYTES} bytes")
    return _parse_pr_number(raw, name)


def _open_zip(data: bytes, name: str, limits: ArtifactLimits) -> zipfile.ZipFile:
    if len(data) > limits.max_zip_bytes:
        raise ArtifactError(name, f"the zip is larger than {_size(limits.max_zip_bytes)}")
    if data.count(_CENTRAL_DIR_SIGNATURE) > limits.max_members:
        raise ArtifactError(name, f"holds more than {limits.max_members} entries")
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except Exception as exc:
        # zipfile reports a broken archive through many exception types; all mean the same.
        raise ArtifactError(name, f"not a readable zip file ({_echo(str(exc))})") from None


def _check_members(members: list[zipfile.ZipInfo], name: str) -> None:
    """Refuse, before anything is decompressed, an archive perfbot cannot read safely."""
    for info in members:
        if info.flag_bits & _ENCRYPTED_FLAGS:
            raise ArtifactError(name, f"member {_quote(info.filename)} is encrypted")
        if info.compress_type not in _READABLE_METHODS:
            raise ArtifactError(
                name,
                f"member {_quote(info.filename)} uses compression method {info.compress_type}; "
                "only stored and deflate are read",
            )


def _normalise(filename: str) -> str:
    # Zips made on Windows may separate with backslashes; a path is only ever a string here.
    return filename.replace("\\", "/")


def _mode(info: zipfile.ZipInfo) -> int:
    # Unix tools keep st_mode in the high half of the external attributes.
    return info.external_attr >> 16


def _is_directory(info: zipfile.ZipInfo, path: str) -> bool:
    # Not ZipInfo.is_dir(): it fails with IndexError on an empty name.
    return path.endswith("/") or stat.S_ISDIR(_mode(info))


def _type_problem(info: zipfile.ZipInfo) -> str | None:
    mode = _mode(info)
    if stat.S_ISLNK(mode):
        return "symbolic link (not followed)"
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG):
        return "special file (not a regular file)"
    return None


def _path_problem(path: str) -> str | None:
    if _has_invisible(path):
        return "name holds control or invisible characters"
    filler = None if path.isascii() else next((c for c in path if c in DEFAULT_IGNORABLE), None)
    if filler is not None:
        # U+3164 and the other fillers are letters to Unicode, yet show as nothing: a
        # name holding one looks like another name.
        return f"name holds U+{ord(filler):04X}, an invisible or filler character"
    if longest_mark_run(path) > MAX_COMBINING_MARKS:
        return f"name stacks more than {MAX_COMBINING_MARKS} combining marks on a character"
    if path.startswith("/"):
        return "absolute path"
    if _DRIVE.match(path):
        return "path starts with a drive letter"
    parts = path.split("/")
    if ".." in parts:
        return "path climbs out with a '..' component"
    if "." in parts:
        return "path has a '.' component"
    if "" in parts:
        return "path has an empty component"
    return None


def _fold(name: str) -> str:
    # Names a file system may treat as one: same letters up to case, or the same text in
    # another Unicode form (macOS stores decomposed names, Windows ignores case).
    return name.lower() if name.isascii() else unicodedata.normalize("NFKC", name).casefold()


class _Prefixes:
    """Every prefix of a set of paths as a small integer, computed in time linear in the
    names' length: a prefix is (its parent's number, its last component), so a name of
    30,000 components never costs 30,000 string copies of itself."""

    def __init__(self) -> None:
        self._numbers: dict[tuple[int, str], int] = {}

    def of(self, parts: list[str]) -> list[int]:
        numbers, parent = [], -1
        for part in parts:
            parent = self._numbers.setdefault((parent, part), len(self._numbers))
            numbers.append(parent)
        return numbers


def _collisions(paths: list[str]) -> tuple[set[int], list[tuple[str, ...]]]:
    """Which members (by index) collide with another, and each collision's names.

    Every prefix of every path is compared, so ``Head/a`` against ``head/b`` collides at
    ``head``: on a case-insensitive disk they are one directory. A member is counted in
    its shallowest collision only. A path ending in ``/`` is a directory entry.
    """
    exact, folded = _Prefixes(), _Prefixes()
    chains: list[tuple[list[int], list[int]]] = []
    spellings: dict[int, set[int]] = defaultdict(set)  # folded prefix → exact prefixes
    as_file: dict[int, int] = defaultdict(int)
    as_directory: set[int] = set()
    for path in paths:
        parts = path.rstrip("/").split("/")
        chain = (exact.of(parts), folded.of([_fold(part) for part in parts]))
        chains.append(chain)
        if path.endswith("/"):
            # A directory entry holds no data: it conflicts only with a file of its name
            # (unzip cannot make both), not with another spelling of the directory.
            as_directory.update(chain[1])
        else:
            for spelling, key in zip(*chain, strict=True):
                spellings[key].add(spelling)
            as_directory.update(chain[1][:-1])
            as_file[chain[1][-1]] += 1

    def collides(key: int) -> bool:
        files = as_file.get(key, 0)
        return len(spellings[key]) > 1 or files > 1 or (files > 0 and key in as_directory)

    groups: dict[int, list[str]] = {}
    withheld: set[int] = set()
    for index, (path, (_, keys)) in enumerate(zip(paths, chains, strict=True)):
        depth = next((d for d, key in enumerate(keys) if collides(key)), None)
        if depth is None:
            continue
        withheld.add(index)
        parts = path.rstrip("/").split("/")
        is_directory = depth < len(parts) - 1 or path.endswith("/")
        shown = _display("/".join(parts[: depth + 1])) + ("/" if is_directory else "")
        names = groups.setdefault(keys[depth], [])
        # A directory is named once; a file once per member that has its name.
        if not (is_directory and shown in names):
            names.append(shown)
    return withheld, [tuple(names) for names in groups.values()]


@dataclass(slots=True)
class _Budget:
    """Bytes decompressed so far, checked against the limits as each chunk arrives."""

    artifact: str
    limits: ArtifactLimits
    zip_bytes: int
    total: int = 0

    def charge(self, info: zipfile.ZipInfo, member_bytes: int, added: int) -> None:
        self.total += added
        limits = self.limits
        member = _quote(info.filename)
        if member_bytes > limits.max_member_bytes:
            self._refuse(
                f"member {member} decompresses to more than {_size(limits.max_member_bytes)}"
            )
        if self.total > limits.max_total_bytes:
            self._refuse(f"its files decompress to more than {_size(limits.max_total_bytes)}")
        # The header's compressed size cannot claim more than the whole zip holds.
        compressed = max(1, min(info.compress_size, self.zip_bytes))
        if member_bytes > RATIO_EXEMPT_BYTES and member_bytes > limits.max_ratio * compressed:
            self._refuse(f"member {member} expands more than {limits.max_ratio}-fold (a zip bomb?)")
        if self.total > RATIO_EXEMPT_BYTES and self.total > limits.max_ratio * self.zip_bytes:
            self._refuse(f"its files expand more than {limits.max_ratio}-fold overall")

    def _refuse(self, reason: str) -> NoReturn:
        raise ArtifactError(self.artifact, reason)


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: _Budget) -> bytes:
    """Decompress in chunks, counting real bytes: the header's file_size is never trusted."""
    chunks: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(_CHUNK_BYTES):
                size += len(chunk)
                budget.charge(info, size, len(chunk))
                chunks.append(chunk)
    except ArtifactError:
        raise
    except Exception as exc:
        # Bad CRCs, truncated data, overlapping entries: any of zipfile's errors is a broken zip.
        raise ArtifactError(
            budget.artifact, f"member {_quote(info.filename)} is corrupt ({_echo(str(exc))})"
        ) from None
    return b"".join(chunks)


def _read_prefix(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, name: str) -> bytes:
    try:
        with archive.open(info) as stream:
            return stream.read(limit)
    except Exception as exc:
        raise ArtifactError(name, f"its file is corrupt ({_echo(str(exc))})") from None


def _parse_pr_number(raw: bytes, name: str) -> int:
    text = raw.strip()  # bytes.strip() removes ASCII whitespace only
    if not text:
        raise ArtifactError(name, "file is empty, expected a PR number")
    shown = _quote(text.decode("utf-8", "replace"))
    if not _DIGITS.fullmatch(text):
        raise ArtifactError(name, f"is not a decimal number: {shown}")
    if len(text) > _PR_MAX_DIGITS or not 1 <= int(text) <= _PR_MAX:
        raise ArtifactError(name, f"number out of range: {shown}")
    return int(text)


def _has_invisible(text: str) -> bool:
    if text.isascii():
        # The only invisible ASCII characters are the controls (U+0000-U+001F, U+007F),
        # exactly what isprintable() refuses: one pass in C, not a call per character.
        return not text.isprintable()
    return any(_is_invisible(char) for char in text)


def _is_invisible(char: str) -> bool:
    # Control, format (bidi overrides, zero-width), surrogate, private and unassigned
    # characters, and line separators: all can hide or disguise what a name says.
    category = unicodedata.category(char)
    return category[0] == "C" or category in ("Zl", "Zp")


def _display(text: str, limit: int = _DISPLAY_CHARS) -> str:
    """Untrusted text made safe to show: invisible characters replaced, length capped."""
    shown = "".join(
        "?" if _is_invisible(char) or char in DEFAULT_IGNORABLE else char
        for char in text[: limit + 1]
    )
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _echo(text: str) -> str:
    return _display(text, _ECHO_CHARS)


def _quote(text: str) -> str:
    return f"'{_echo(text)}'"


def _size(count: int) -> str:
    for unit, scale in (("MiB", MiB), ("KiB", KiB)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return f"{count} bytes"
