"""Hostile artifacts end to end: a signed workflow_run in, the fake GitHub's state out.

One perfbot (in-process, against the fake GitHub) serves the whole module; every case gets
its own pull request, measurement run and artifacts, so the cases cannot see each other.
For each case the test asserts what was posted (or that nothing was), that /webhook
answered 202 and the job finished cleanly, that nothing was written anywhere but that
PR, that no comment or check run carries markup from the report, a token, a signed
storage URL or a traceback, and that the next ordinary delivery is still served.
"""

from __future__ import annotations

import hashlib
import re
import threading
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from perfbot.app import download, reporting
from perfbot.app.artifacts import ArtifactLimits
from perfbot.sandbox.fakegithub import FakeGitHub, Pull, RecordedRequest, Run
from tests.harness import (
    FORK_REPO_ID,
    ZPERF_BASE,
    World,
    assert_done,
    in_process_service,
    regressed,
    report_zip,
    wait_idle,
    zip_of,
    zperf_log,
)
from tests.hostile import (
    PLATFORM,
    KiB,
    MiB,
    assert_inert,
    assert_no_leak,
    big_member,
    bomb,
    encrypted,
    head_file,
    iperf3_error_case,
    json_pair,
    lying_size,
    many_members,
    many_metrics,
    metric,
    named_metric,
    named_platform,
    named_reason,
    named_unit,
    nested_targz,
    nested_zip,
    normal_files,
    nul_in_name,
    perfbot_json,
    runs_disagree,
    stored,
    symlink,
    visible,
    with_normal,
    zip64,
    zip64_absurd_count,
    zip_members,
)

CANARY = 1
UNREADABLE = "the measurement could not be read"


@dataclass
class Service:
    """perfbot serving one World; hands out a fresh PR, head and run id per case."""

    world: World
    client: httpx.Client
    database: Path
    numbers: Iterator[int] = field(default_factory=lambda: iter(range(100, 10**6)))
    finished: dict[str, float] = field(default_factory=dict)
    delivered: str = ""  # the delivery id of the last run ``deliver`` posted

    @property
    def fake(self) -> FakeGitHub:
        return self.world.fake

    def number(self) -> int:
        return next(self.numbers)

    def pull(
        self, number: int | None = None, *, fork: bool = False, sha: str | None = None
    ) -> Pull:
        number = number or self.number()
        head = sha or hashlib.sha1(f"head-{number}".encode()).hexdigest()
        return self.world.pull(number, head, fork=fork)

    def job_counts(self) -> dict[str, float]:
        """workflow_run jobs finished so far, by outcome (done, retried, failed)."""
        found = re.findall(
            r'^perfbot_jobs_total\{event="workflow_run",outcome="(\w+)"\} (\S+)$',
            self.client.get("/metrics").text,
            re.MULTILINE,
        )
        return {"done": 0.0, "retried": 0.0, "failed": 0.0} | {k: float(v) for k, v in found}

    def post(self, run: Run) -> str:
        """Post ``run``'s delivery; its delivery id."""
        body, headers = self.world.delivery(run)
        response = self.client.post("/webhook", content=body, headers=headers)
        assert response.status_code == 202, response.text
        assert response.json() == {"status": "queued"}
        return headers["X-GitHub-Delivery"]

    def assert_done(self, *words: str) -> None:
        """The last delivered run's job ended DONE with a reason saying each of ``words``:
        the proof that an absence of writes comes from the code deciding so."""
        assert_done(self.database, self.delivered, *words)

    def deliver(self, run: Run) -> list[RecordedRequest]:
        """Post ``run``'s delivery and, right behind it, an ordinary one (the canary); wait
        for both jobs; the write calls made for anything but the canary.

        The canary's comment must then show the canary's run: whatever the hostile
        artifact did, perfbot is alive and still serves the next delivery.
        """
        before = self.finished or self.job_counts()
        first_request = len(self.fake.requests)
        first_download = len(self.fake.storage_requests)
        canary_pull = self.fake.repo("acme/widget").pulls[CANARY]
        canary = self.world.measured_run(canary_pull, self.number() + 800_000)
        self.delivered = self.post(run)
        self.post(canary)
        wait_idle(self.client.get, 60)
        # Both jobs ran to their end: not retried after an internal error, not given up.
        self.finished = self.job_counts()
        assert self.finished == before | {"done": before["done"] + 2}
        # The storage host gets signed URLs only, never perfbot's GitHub token.
        downloads = self.fake.storage_requests[first_download:]
        assert downloads, "nothing was downloaded"
        assert all("authorization" not in r.headers for r in downloads)
        (canary_comment,) = self.fake.bot_comments("acme/widget", CANARY)
        assert f"/actions/runs/{canary.id})" in canary_comment.body
        assert "1 regression" in canary_comment.body
        canary_ids = {canary_comment.id} | {
            c.id for c in self.fake.check_runs_for("acme/widget", canary_pull.head_sha)
        }
        writes = []
        for call in self.fake.requests[first_request:]:
            if call.method in ("GET", "HEAD") or "/access_tokens" in call.path:
                continue
            target = call.path.rsplit("/", 1)[-1]
            if call.path == f"/repos/acme/widget/issues/{CANARY}/comments":
                continue
            if target.isdigit() and int(target) in canary_ids:
                continue
            if isinstance(call.body, dict) and call.body.get("head_sha") == canary_pull.head_sha:
                continue
            writes.append(call)
        return writes


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    # Confirm before red is off: one service answers every case here, and a re-run that
    # one case's regression asks for would land among the next case's writes
    # (tests/test_confirm.py covers confirming).
    world = World.create({".github/perfbot.yml": "confirm: false\n"})
    world.pull(CANARY, "c" * 40)  # gets a fresh ordinary run behind every hostile one
    database = tmp_path_factory.mktemp("hostile") / "perfbot.db"
    with in_process_service(world, database) as client:
        yield Service(world, client, database)


def run_for(
    service: Service,
    pull: Pull,
    report: bytes | None,
    hint: bytes | None,
    *,
    head_sha: str | None = None,
    pull_requests: list[Pull] | None = None,
) -> Run:
    """A finished measurement run of ``pull`` with these artifacts (None: no such artifact)."""
    fake, repo = service.fake, service.world.repo
    fork = pull.head_repo_id != repo.id
    run = fake.add_run(
        repo,
        service.number() + 500_000,
        head_sha or pull.head_sha,
        pull.head_ref,
        head_repo=("mallory/widget", FORK_REPO_ID) if fork else None,
        pull_requests=pull_requests,
    )
    if report is not None:
        fake.add_artifact(repo, run, "perf-report", report)
    if hint is not None:
        fake.add_artifact(repo, run, "pr-number", hint)
    return run


def downloaded(service: Service, run: Run, name: str) -> bool:
    """Whether perfbot asked for the download of ``run``'s artifact ``name``."""
    (artifact,) = [
        a for a in service.fake.artifacts.values() if (a.run_id, a.name) == (run.id, name)
    ]
    path = f"/repos/acme/widget/actions/artifacts/{artifact.id}/zip"
    return any(r.path == path for r in service.fake.requests)


def pr_zip(text: str | bytes) -> bytes:
    return zip_of({"pr_number.txt": text})


def assert_writes_only_to(
    service: Service, writes: list[RecordedRequest], pull: Pull | None
) -> None:
    """Every write went to ``pull`` (its comment, its head's check run), or none was made."""
    fake = service.fake
    if pull is None:
        assert writes == []
        return
    own_comments = {c.id for c in fake.comments_on("acme/widget", pull.number)}
    own_checks = {c.id for c in fake.check_runs_for("acme/widget", pull.head_sha)}
    for call in writes:
        path = call.path
        if path == f"/repos/acme/widget/issues/{pull.number}/comments":
            continue
        if (m := re.fullmatch(r"/repos/acme/widget/issues/comments/(\d+)", path)) and int(
            m.group(1)
        ) in own_comments:
            continue
        if path == "/repos/acme/widget/check-runs" and call.body["head_sha"] == pull.head_sha:
            continue
        if (m := re.fullmatch(r"/repos/acme/widget/check-runs/(\d+)", path)) and int(
            m.group(1)
        ) in own_checks:
            continue
        raise AssertionError(f"a write outside PR {pull.number}: {call.method} {path}")


def posted(service: Service, pull: Pull, run: Run) -> str:
    """The PR's one comment, checked for markup and leaks, with its check run."""
    fake = service.fake
    comments = fake.bot_comments("acme/widget", pull.number)
    assert len(comments) == 1, [c.body[:200] for c in comments]
    body = comments[0].body
    assert len(body) <= 65_536
    assert_inert(body, f"https://github.com/acme/widget/actions/runs/{run.id}")
    assert_no_leak(body, fake)
    (check,) = fake.check_runs_for("acme/widget", pull.head_sha)
    for text in check.output.values():
        assert_no_leak(text or "", fake)
    return body


def check_everything_clean(fake: FakeGitHub) -> None:
    for comment in fake.comments.values():
        assert_no_leak(comment.body, fake)
    for check in fake.check_runs.values():
        for text in check.output.values():
            assert_no_leak(text or "", fake)


# --- the report artifact: zips and files ---------------------------------------------------------


@dataclass(frozen=True)
class Report:
    """A hostile report artifact; ``shows`` is text the comment must show (decoded),
    ``hides`` raw text the comment body must not contain."""

    data: bytes | Callable[[], bytes]
    shows: tuple[str, ...] = ()
    hides: tuple[str, ...] = ()
    limits: ArtifactLimits | None = None
    downloaded: bool = True  # False: refused by its listed size, before any download

    def build(self) -> bytes:
        return self.data() if callable(self.data) else self.data


def unreadable(*reason: str) -> tuple[str, ...]:
    return (UNREADABLE, *reason)


def failed_file(path: str, reason: str) -> tuple[str, ...]:
    """A head file listed as a failed case, the rest of the report compared as usual."""
    return (f"{path} (PR): ", reason, "tcp4_mbps")


NORMAL_HEAD = f"head/{PLATFORM}/"

ZIP_CASES: dict[str, Report] = {
    "bomb-ratio": Report(
        lambda: bomb(32 * MiB), unreadable("expands more than 200-fold (a zip bomb?)")
    ),
    "bomb-member-over-64-MiB": Report(
        lambda: big_member(65 * MiB), unreadable("decompresses to more than 64 MiB")
    ),
    "bomb-total-over-limit": Report(
        lambda: zip_of({f"head/p{i}/zperf.log": bytes(300 * KiB) for i in range(5)}),
        unreadable("its files decompress to more than 1 MiB"),
        limits=ArtifactLimits(max_total_bytes=1 * MiB, max_ratio=10**6),
    ),
    "bomb-zip-over-50-MiB": Report(
        lambda: bytes(50 * MiB + 1),
        unreadable("is over the 52,428,800-byte limit"),
        downloaded=False,
    ),
    "bomb-header-says-tiny": Report(
        lambda: lying_size(bomb(4 * MiB), 0, 10), unreadable("is corrupt")
    ),
    # perfbot counts the bytes that really come out, never the header's claim: a header that
    # overstates a small member changes nothing.
    "header-says-huge": Report(
        lambda: lying_size(with_normal({}), 1, 2**32 - 1), ("no change beyond the noise floor",)
    ),
    "thousands-of-members": Report(
        lambda: many_members(5_000), unreadable("more than 2000 entries")
    ),
    "zip-in-zip": Report(nested_zip, failed_file("inner.zip", "binary file, not a text report")),
    "tar-gz-in-zip": Report(
        nested_targz, failed_file("results.tar.gz", "binary file, not a text report")
    ),
    "path-dotdot": Report(
        lambda: with_normal({"head/../../evil/zperf.log": "x"}),
        ("skipped: path climbs out with a '..' component", "tcp4_mbps"),
    ),
    "path-absolute": Report(
        lambda: with_normal({"/etc/perfbot/zperf.log": "x"}),
        ("skipped: absolute path",),
    ),
    "path-backslash": Report(
        lambda: with_normal({"head\\..\\..\\evil.log": "x"}),
        ("head/../../evil.log skipped: path climbs out",),
    ),
    # zipfile ends a name at NUL (as the APPNOTE's C tools do); perfbot refuses the member
    # rather than read a regressed "a.log" the zip does not name.
    "path-nul": Report(
        lambda: nul_in_name(NORMAL_HEAD + "a.log", "/../../evil", {"tcp4_mbps": 0.001}),
        ("a.log?/../../evil skipped: name holds a NUL byte", "no change beyond the noise floor"),
        hides=("0.001",),
    ),
    "path-drive-letter": Report(
        lambda: with_normal({"C:/Windows/zperf.log": "x"}),
        ("skipped: path starts with a drive letter",),
    ),
    "symlink": Report(
        lambda: zip_members(
            [*normal_files().items(), (symlink(NORMAL_HEAD + "passwd.log", ""), "/etc/passwd")]
        ),
        ("passwd.log skipped: symbolic link (not followed)",),
    ),
    "duplicate-names": Report(
        lambda: zip_members(
            [
                *normal_files().items(),
                (NORMAL_HEAD + "zperf.log", zperf_log({**ZPERF_BASE, "tcp4_mbps": 0.001})),
            ]
        ),
        # unzip would keep one copy, perfbot neither: the side's case is failed, not chosen.
        (
            "qemu_x86/zperf.log (PR): ambiguous: head/qemu_x86/zperf.log, "
            "head/qemu_x86/zperf.log are one path",
            "no PR measurement",
        ),
        hides=("0.001",),
    ),
    "case-variant-of-a-side": Report(
        lambda: with_normal({f"HEAD/{PLATFORM}/zperf.log": zperf_log({"tcp4_mbps": 0.001})}),
        ("head/ (PR): ambiguous: head/, HEAD/ are one path", "no PR measurement"),
        hides=("0.001",),
    ),
    "case-variant-of-a-side-alone": Report(
        lambda: zip_of(
            {
                f"Base/{PLATFORM}/zperf.log": zperf_log(ZPERF_BASE),
                f"head/{PLATFORM}/zperf.log": zperf_log(ZPERF_BASE),
            }
        ),
        ("Base/qemu_x86/zperf.log skipped: Base/ is not base/", "no base measurement"),
    ),
    "directory-holding-data": Report(
        lambda: with_normal({f"head/{PLATFORM}/extra/": zperf_log({"tcp4_mbps": 0.001})}),
        ("head/qemu_x86/extra/ skipped: directory entry holding", "no change beyond"),
        hides=("0.001",),
    ),
    "name-with-a-hangul-filler": Report(
        lambda: with_normal({f"head/{PLATFORM}/zperf\u3164.log": zperf_log({"tcp4_mbps": 1})}),
        ("zperf?.log skipped: name holds U+3164, an invisible or filler", "no change beyond"),
        hides=("\u3164",),
    ),
    "name-with-a-combining-stack": Report(
        lambda: with_normal({f"head/{PLATFORM}/z" + "\u0301" * 9 + ".log": "x"}),
        ("skipped: name stacks more than 3 combining marks",),
        hides=("\u0301" * 4,),
    ),
    "many-skipped-members-are-counted": Report(
        lambda: with_normal({f"head/../m{i}.log": "x" for i in range(10)}),
        ("head/../m2.log skipped", "… and 7 more artifact members skipped.", "no change beyond"),
    ),
    "encrypted-member": Report(
        lambda: encrypted(with_normal({}), 1),
        unreadable("member 'head/qemu_x86/zperf.log' is encrypted"),
    ),
    "bzip2-member": Report(
        lambda: zip_members(list(normal_files().items()), zipfile.ZIP_BZIP2),
        unreadable("uses compression method 12; only stored and deflate are read"),
    ),
    "not-a-zip": Report(b"this is not a zip\n", unreadable("not a readable zip file")),
    "zero-bytes": Report(b"", unreadable("not a readable zip file")),
    "truncated-zip": Report(
        lambda: with_normal({})[: len(with_normal({})) // 2], unreadable("not a readable zip file")
    ),
    "empty-zip": Report(lambda: zip_of({}), ("no measurements found",)),
    "only-directories": Report(
        lambda: zip_members([("head/", b""), ("base/", b"")]), ("no measurements found",)
    ),
    "zip64-fields": Report(zip64, ("no change beyond the noise floor",)),
    # The entry count perfbot trusts is the number of central-directory signatures in the
    # bytes it holds, never a count the zip claims: 2**62 claimed entries cost nothing.
    "zip64-absurd-entry-count": Report(zip64_absurd_count, ("no change beyond the noise floor",)),
    "long-member-name": Report(
        lambda: with_normal({"head/" + "p" * 10_000 + "/zperf.log": zperf_log(ZPERF_BASE)}),
        ("p" * 100 + "…", "no base measurement"),
        hides=("p" * 200,),
    ),
}

JSON_CASES: dict[str, Report] = {
    "json-deeply-nested-deflated": Report(
        lambda: head_file('{"perfbot": 1, "metrics": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        unreadable("expands more than 200-fold"),
    ),
    "json-deeply-nested-stored": Report(
        lambda: head_file(
            '{"perfbot": 1, "metrics": ' + "[" * 100_000 + "]" * 100_000 + "}", store=True
        ),
        failed_file("hostile.json", "the JSON is nested too deeply"),
    ),
    "json-huge-string": Report(
        lambda: head_file(perfbot_json([metric("x" * 5_000_000)]), store=True),
        failed_file(
            "hostile.json", "metrics[0].name must be 1 to 200 characters long, got 5000000"
        ),
    ),
    "json-huge-array": Report(
        # The broken last item is a failed case; the 200,000 before it are read (and drop
        # the tables from a comment that must stay within GitHub's limit).
        lambda: head_file(perfbot_json([metric(str(i)) for i in range(200_000)] + [7]), store=True),
        (
            "hostile.json (PR): ",
            "metrics[200000] must be an object, got a number",
            "200000 not comparable",
        ),
    ),
    "json-huge-values-array": Report(
        lambda: head_file(perfbot_json([{"name": "x", "values": [1] * 1_000_000}]), store=True),
        failed_file("hostile.json", "must hold 1 to 10000 numbers, got 1000000"),
    ),
    "json-duplicate-keys": Report(
        # JSON leaves duplicate names undefined; perfbot, like Python and JavaScript, reads the
        # last one, so the file says one thing to every reader that follows that rule.
        lambda: json_pair(
            perfbot_json([metric("dup", 100.0)]),
            '{"perfbot": 1, "platform": "json", "metrics": [{"name": "dup", "value": 1.0,'
            ' "value": 50.0}]}',
        ),
        ("dup", "−50.00 %"),
    ),
    "json-nan": Report(
        lambda: head_file('{"perfbot": 1, "metrics": [{"name": "x", "value": NaN}]}'),
        failed_file("hostile.json", "the number NaN is not allowed"),
    ),
    "json-infinity": Report(
        lambda: head_file('{"perfbot": 1, "metrics": [{"name": "x", "value": Infinity}]}'),
        failed_file("hostile.json", "the number Infinity is not allowed"),
    ),
    "json-minus-infinity": Report(
        lambda: head_file('{"perfbot": 1, "metrics": [{"name": "x", "value": -Infinity}]}'),
        failed_file("hostile.json", "the number -Infinity is not allowed"),
    ),
    "json-1e400-overflows": Report(
        lambda: head_file('{"perfbot": 1, "metrics": [{"name": "x", "value": 1e400}]}'),
        failed_file("hostile.json", "metrics[0].value must be a finite number, got Infinity"),
    ),
    "json-absurd-magnitudes": Report(
        lambda: json_pair(
            perfbot_json([metric("tiny", values=[1e-308, 1e-308]), metric("neg", -1e308)]),
            perfbot_json([metric("tiny", values=[1e308, 1e308]), metric("neg", 1e308)]),
        ),
        ("1e+308", "−1e+308", "1e−308"),
        hides=("inf", "nan", "000,000,000"),
    ),
    "json-negative-zero": Report(
        lambda: json_pair(perfbot_json([metric("z", -0.0)]), perfbot_json([metric("z", 0.0)])),
        ("no change beyond the noise floor",),
        hides=("−0 ",),
    ),
    "json-huge-integer": Report(
        lambda: head_file(
            '{"perfbot": 1, "metrics": [{"name": "x", "value": 1' + "0" * 5000 + "}]}"
        ),
        failed_file("hostile.json", "the JSON holds an absurdly long number"),
    ),
    "json-number-as-string": Report(
        lambda: head_file(perfbot_json([metric("x", "12.5")])),
        failed_file("hostile.json", 'metrics[0].value must be a finite number, got "12.5"'),
    ),
    "json-boolean-as-number": Report(
        lambda: head_file(perfbot_json([metric("x", True)])),
        failed_file("hostile.json", "metrics[0].value must be a finite number, got true"),
    ),
    "json-wrong-types-everywhere": Report(
        lambda: with_normal(
            {
                "head/json/a.json": '{"perfbot": "1", "metrics": []}',
                "head/json/b.json": '{"perfbot": 1, "metrics": {}}',
                "head/json/c.json": '{"perfbot": 1, "metrics": [5]}',
                "head/json/d.json": '{"perfbot": 1, "metrics": [{"name": 5, "value": 1}]}',
                "head/json/e.json": perfbot_json([metric(unit=[])]),
                "head/json/f.json": perfbot_json([metric(better=1)]),
                "head/json/g.json": perfbot_json([metric(platform={})]),
                "head/json/h.json": perfbot_json([], failures=[{"case": "c", "reason": 7}]),
                "head/json/i.json": '[{"name": 1, "unit": null, "value": []}]',
                "head/json/j.json": '{"perfbot": 1, "platform": 9, "metrics": []}',
            }
        ),
        (
            '"perfbot": "1" is not a supported format version',
            "metrics must be an array, got an object",
            "metrics[0] must be an object, got a number",
            "metrics[0].name must be a string, got a number",
            "metrics[0].unit must be a string, got an array",
            'metrics[0].better must be "higher" or "lower", got 1',
            "metrics[0].platform must be a string, got an object",
            "failures[0].reason must be a non-empty string, got 7",
            "[0].name must be a non-empty string, got 1",
            "platform must be a string, got a number",
        ),
    ),
    "json-trailing-garbage": Report(
        lambda: head_file(perfbot_json([metric()]) + " <script>alert(1)</script>"),
        failed_file("hostile.json", "invalid JSON at line 1"),
        hides=("<script",),
    ),
    "json-bom": Report(
        lambda: json_pair(
            perfbot_json([metric("bom", 10.0)]), "\ufeff" + perfbot_json([metric("bom", 5.0)])
        ),
        ("bom", "−50.00 %"),
    ),
    "json-utf-16": Report(
        lambda: head_file(perfbot_json([metric()]).encode("utf-16")),
        failed_file("hostile.json", "binary file, not a text report"),
    ),
    "json-not-utf-8": Report(
        lambda: head_file(b'{"perfbot": 1, "metrics": [{"name": "\xff\xfe", "value": 1}]}'),
        failed_file("hostile.json", "not UTF-8 text (invalid byte at offset"),
    ),
    "json-empty-file": Report(lambda: head_file(b""), failed_file("hostile.json", "empty file")),
    "json-whitespace-file": Report(
        lambda: head_file(b" \n\t\n"), failed_file("hostile.json", "empty file")
    ),
}

WRONG_FORMAT_CASES: dict[str, Report] = {
    "png": Report(
        lambda: head_file(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64), "chart.png"),
        failed_file("chart.png", "binary file, not a text report"),
    ),
    "elf": Report(
        lambda: head_file(b"\x7fELF\x02\x01\x01" + bytes(120), "zperf"),
        failed_file("zperf", "binary file, not a text report"),
    ),
    "webhook-payload": Report(
        lambda: head_file(
            '{"action": "completed", "workflow_run": {"id": 1, "head_sha": "'
            + "a" * 40
            + '", "pull_requests": [{"number": 1}]}}',
            "event.json",
        ),
        failed_file("event.json", "not a supported report format"),
    ),
    "html-page": Report(
        lambda: head_file(
            "<!DOCTYPE html><html><body><img src=x onerror=alert(1)>@admin</body></html>",
            "index.html",
        ),
        failed_file("index.html", "not a supported report format"),
        hides=("<img", "<body"),
    ),
    "yaml": Report(
        lambda: head_file(
            "metrics:\n  - name: x\n    value: !!python/object:os.system ls\n", "r.yml"
        ),
        failed_file("r.yml", "not a supported report format"),
    ),
    "iperf3-error": Report(
        lambda: head_file(
            '{"start": {"connected": []}, "intervals": [], "end": {},'
            ' "error": "unable to connect to server: Connection refused @admin #1"}',
            "tcp_rx_1.json",
        ),
        ("tcp_rx (PR): iperf3 reported an error: unable to connect to server: Connection refused",),
    ),
}

NAME_CASES: dict[str, Report] = {
    "name-mention": Report(lambda: named_metric("@mallory ping"), ("@mallory ping",)),
    "name-team-mention": Report(lambda: named_metric("@acme/security"), ("@acme/security",)),
    "name-reference": Report(lambda: named_metric("fixes #123"), ("fixes #123",)),
    "name-cross-repo-reference": Report(lambda: named_metric("acme/widget#1"), ("acme/widget#1",)),
    "name-url": Report(lambda: named_metric("https://evil.example/x"), ("https://evil.example/x",)),
    "name-www": Report(lambda: named_metric("www.evil.example"), ("www.evil.example",)),
    "name-img-onerror": Report(
        lambda: named_metric("<img src=x onerror=alert(1)>"), ("<img src=x onerror=alert(1)>",)
    ),
    "name-details-close": Report(
        lambda: named_metric("</details><details open><summary>ok"),
        ("</details><details open><summary>ok",),
    ),
    "name-marker": Report(
        lambda: named_metric("<!-- perfbot:report -->"), ("<!-- perfbot:report -->",)
    ),
    "name-table-close": Report(lambda: named_metric("</table></code>|x|"), ("</table></code>|x|",)),
    "name-markdown-link": Report(
        lambda: named_metric("[approved](https://evil.example)"),
        ("[approved](https://evil.example)",),
    ),
    "name-markdown-image": Report(
        lambda: named_metric("![x](https://evil.example/a.png)"),
        ("![x](https://evil.example/a.png)",),
    ),
    "name-heading": Report(lambda: named_metric("### All green, merge it"), ("### All green",)),
    "name-pipes": Report(lambda: named_metric("a|b|c||"), ("a|b|c||",)),
    "name-backticks": Report(lambda: named_metric("`x` ```fence"), ("`x` ```fence",)),
    "name-emphasis": Report(lambda: named_metric("*bold* _it_ ~~s~~"), ("*bold* _it_ ~~s~~",)),
    "name-bidi-override": Report(
        lambda: named_metric("tx\u202erahc"), ("txrahc",), hides=("\u202e",)
    ),
    "name-zero-width": Report(
        lambda: named_metric("@\u200bmal\u200dlory\ufeff"), ("@mallory",), hides=("\u200d",)
    ),
    "name-control-chars": Report(
        lambda: named_metric("rx\x1b[31m\x07"),
        failed_file("j.json", "metrics[0].name must not contain control characters"),
    ),
    "name-10-KB": Report(
        lambda: named_metric("n" * 10_000),
        failed_file("j.json", "metrics[0].name must be 1 to 200 characters long, got 10000"),
    ),
    "name-200-chars-capped": Report(lambda: named_metric("n" * 200), ("n" * 100 + "…",)),
    "name-gh-reference": Report(lambda: named_metric("fixes GH-12 gh-7"), ("fixes GH-12 gh-7",)),
    "name-filler": Report(lambda: named_metric("rx\u3164tx"), ("rxtx",), hides=("\u3164",)),
    "name-combining-stack": Report(
        lambda: named_metric("Z" + "\u0301\u0316\u0334\u0358" * 10),
        ("Z\u0301\u0316\u0334",),
        hides=("\u0301\u0316\u0334\u0358",),
    ),
    "unit-gh-reference": Report(lambda: named_unit("GH-3"), ("(GH-3)",)),
    "platform-gh-reference": Report(lambda: named_platform("GH-5"), ("GH-5",)),
    "reason-gh-reference-and-sha": Report(
        lambda: named_reason("see GH-12 and acme/widget@a5c3785ed8d6a35868bc169f07e40e889087fd2e"),
        ("see GH-12 and acme/widget@a5c3785ed8d6a35868bc169f07e40e889087fd2e",),
    ),
    "unit-html": Report(lambda: named_unit("<b>Mbps</b>"), ("(<b>Mbps</b>)",)),
    "unit-mention": Report(lambda: named_unit("@mallory"), ("(@mallory)",)),
    "platform-mention-and-html": Report(
        lambda: named_platform("@mallory <img src=x>"), ("@mallory <img src=x>",)
    ),
    # A member name with invisible characters is refused outright (it could disguise a path).
    "platform-bidi-and-zero-width": Report(
        lambda: named_platform("qemu\u202e\u200bx86"),
        ("skipped: name holds control or invisible characters", "no measurements found"),
        hides=("\u202e", "\u200b"),
    ),
    "platform-pipe-and-link": Report(
        lambda: named_platform("a|[b](https://evil.example)"), ("a|[b](https://evil.example)",)
    ),
    "case-name-mention-and-reference": Report(
        lambda: iperf3_error_case("@mallory #42 fixes acme#7"),
        ("@mallory #42 fixes acme#7 (PR): iperf3 reported an error: the server is busy",),
    ),
    "case-name-html": Report(
        lambda: iperf3_error_case("<img src=x onerror=alert(1)>"), ("<img src=x onerror=alert(1)>",)
    ),
    "runs-left-out-names-and-settings": Report(
        lambda: runs_disagree("@mallory #42", "@admin #7 <img src=x> `x` | https://evil.example"),
        (
            # A setting's value is cut at 40 characters on its own; the sentence is whole.
            "@mallory #42 (PR): @mallory #42_2.json ran with mode @admin #7 <img src=x> `x` | "
            "https://evi…; kept @mallory #42_1.json (mode plain)",
        ),
    ),
    "reason-everything": Report(
        lambda: named_reason(
            "@mallory see #1 https://evil.example <img src=x> `x`\n### fake heading\u202e -->"
        ),
        ("@mallory see #1 https://evil.example <img src=x> `x` ### fake heading -->",),
    ),
}


def hostile_report_case(service: Service, report: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    pull = service.pull()
    run = run_for(service, pull, report.build(), pr_zip(f"{pull.number}\n"))
    if report.limits is not None:
        monkeypatch.setattr(download, "LIMITS", report.limits)
    writes = service.deliver(run)
    monkeypatch.undo()
    assert downloaded(service, run, "perf-report") is report.downloaded
    assert_writes_only_to(service, writes, pull)
    body = posted(service, pull, run)
    shown = visible(body)
    for expected in report.shows:
        assert expected in shown, f"{expected!r} not in the comment:\n{body}"
    for hidden in report.hides:
        assert hidden not in body
    # Any error is one line of the comment, not a dump.
    if UNREADABLE in report.shows:
        (line,) = [line for line in body.split("\n") if line.startswith("❌")]
        assert all(expected in visible(line) for expected in report.shows[1:])


@pytest.mark.parametrize("case", ZIP_CASES.values(), ids=ZIP_CASES.keys())
def test_hostile_zip(service: Service, case: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    hostile_report_case(service, case, monkeypatch)


@pytest.mark.parametrize("case", JSON_CASES.values(), ids=JSON_CASES.keys())
def test_hostile_json(service: Service, case: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    hostile_report_case(service, case, monkeypatch)


@pytest.mark.parametrize("case", WRONG_FORMAT_CASES.values(), ids=WRONG_FORMAT_CASES.keys())
def test_wrong_format(service: Service, case: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    hostile_report_case(service, case, monkeypatch)


@pytest.mark.parametrize("case", NAME_CASES.values(), ids=NAME_CASES.keys())
def test_hostile_names(service: Service, case: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    hostile_report_case(service, case, monkeypatch)


def test_100000_metrics_fit_and_the_service_stays_responsive(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    pull = service.pull()
    run = run_for(service, pull, many_metrics(100_000), pr_zip(str(pull.number)))
    answered = threading.Condition()
    answers = 0
    stop = threading.Event()
    # Whether, while the report was compared and rendered, /healthz was answered.
    served_meanwhile: list[bool] = []

    def probe() -> None:
        nonlocal answers
        # GitHub waits 10 s for a webhook's answer: no probe may wait longer.
        with httpx.Client(base_url=service.client.base_url, timeout=10) as client:
            while not stop.is_set():
                assert client.get("/healthz").status_code == 200
                with answered:
                    answers += 1
                    answered.notify_all()
                stop.wait(0.05)

    real = reporting.read_contents

    def read_sides(*args: Any) -> Any:
        if sum(len(f.data) for f in args[0].files) <= reporting.INLINE_BYTES:
            return real(*args)  # the canary's small report, rendered inline by design
        # Off the event loop (a thread) this waits for a /healthz answer; on the loop it
        # would block the answer it waits for, and time out.
        with answered:
            before = answers
        result = real(*args)
        with answered:
            served_meanwhile.append(answered.wait_for(lambda: answers > before, timeout=10))
        return result

    monkeypatch.setattr(reporting, "read_contents", read_sides)
    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    try:
        writes = service.deliver(run)
    finally:
        stop.set()
        prober.join(30)
        monkeypatch.undo()
    assert served_meanwhile == [True], "/healthz went unanswered while the report was read"
    assert_writes_only_to(service, writes, pull)
    body = posted(service, pull, run)
    assert "50000 regressions" in body
    assert "Left out to stay within GitHub's comment size limit" in body
    (check,) = service.fake.check_runs_for("acme/widget", pull.head_sha)
    assert len(check.output["summary"] or "") <= 65_535


# --- forged and missing PR numbers ---------------------------------------------------------------


@dataclass(frozen=True)
class Forgery:
    """A PR-number artifact (from the case's PRs) and who must get the comment."""

    hint: Callable[[Service, Pull, Pull], bytes | None]
    posts: bool = True


def number_hint(text: str) -> Callable[[Service, Pull, Pull], bytes]:
    return lambda service, own, victim: pr_zip(text.format(own=own.number, victim=victim.number))


FORGERIES: dict[str, Forgery] = {
    "other-open-pr": Forgery(number_hint("{victim}")),
    "other-open-pr-with-whitespace": Forgery(number_hint("  \n{victim}\r\n\n")),
    "non-numeric": Forgery(number_hint("seven")),
    "negative": Forgery(number_hint("-{own}")),
    "zero": Forgery(number_hint("0")),
    "huge-10e30": Forgery(number_hint("1" + "0" * 30)),
    "two-numbers": Forgery(number_hint("{victim} {own}")),
    "two-lines": Forgery(number_hint("{victim}\n{own}\n")),
    "reference-syntax": Forgery(number_hint("acme/other#{own}")),
    "nul-after-number": Forgery(number_hint("{victim}\x00")),
    "empty-file": Forgery(number_hint("")),
    "not-a-zip": Forgery(lambda service, own, victim: str(victim.number).encode()),
    "two-files": Forgery(
        lambda service, own, victim: zip_of({"a.txt": str(victim.number), "b.txt": "1"})
    ),
    "zip-bomb": Forgery(lambda service, own, victim: zip_of({"n.txt": bytes(20 * MiB)})),
    "over-64-KiB": Forgery(
        lambda service, own, victim: stored({"n.txt": str(victim.number) + " " * 70_000})
    ),
    "symlink": Forgery(
        lambda service, own, victim: zip_members([(symlink("n.txt", ""), str(victim.number))])
    ),
}


@pytest.mark.parametrize("forgery", FORGERIES.values(), ids=FORGERIES.keys())
def test_forged_pr_number_is_only_a_hint(service: Service, forgery: Forgery) -> None:
    # A fork's run: GitHub names no PR for it, so the fork's PR-number artifact is read.
    own, victim = service.pull(fork=True), service.pull()
    run = run_for(service, own, report_zip(regressed()), forgery.hint(service, own, victim))
    writes = service.deliver(run)
    assert downloaded(service, run, "pr-number")
    # The hint is refused; the run's PR is derived from its head commit.
    assert_writes_only_to(service, writes, own)
    assert "1 regression" in posted(service, own, run)
    assert service.fake.comments_on("acme/widget", victim.number) == []


def test_hint_naming_a_closed_pr_at_the_same_commit(service: Service) -> None:
    own = service.pull(fork=True)
    closed = service.fake.add_pull(
        service.world.repo,
        service.number(),
        own.head_sha,
        "old-branch",
        head_repo_full_name="mallory/widget",
        head_repo_id=FORK_REPO_ID,
        state="closed",
    )
    run = run_for(service, own, report_zip(regressed()), pr_zip(str(closed.number)))
    writes = service.deliver(run)
    assert downloaded(service, run, "pr-number")
    assert_writes_only_to(service, writes, own)
    posted(service, own, run)
    assert service.fake.comments_on("acme/widget", closed.number) == []


def test_hint_of_a_closed_pr_with_no_open_pr_posts_nothing(service: Service) -> None:
    closed = service.fake.add_pull(
        service.world.repo, service.number(), "e" * 40, "gone", state="closed"
    )
    run = run_for(service, closed, report_zip(regressed()), pr_zip(str(closed.number)))
    assert service.deliver(run) == []
    service.assert_done("nothing posted")
    assert downloaded(service, run, "pr-number")


def test_pull_requests_of_another_repository_in_the_run_are_ignored(service: Service) -> None:
    other = service.fake.add_repo("octo/elsewhere", 777, 1)
    foreign = service.fake.add_pull(other, 5, "d" * 40, "feature")
    own = service.pull()
    run = run_for(service, own, report_zip(regressed()), None, pull_requests=[foreign])
    writes = service.deliver(run)
    assert_writes_only_to(service, writes, own)
    posted(service, own, run)
    assert service.fake.comments_on(other, 5) == []


def test_hint_of_a_pr_from_another_fork_with_the_same_head(service: Service) -> None:
    # Both PRs point at one commit (a fork network shares objects): only the one whose head
    # repository ran the measurement is the run's PR.
    own = service.pull(fork=True)
    other = service.fake.add_pull(
        service.world.repo,
        service.number(),
        own.head_sha,
        "copy",
        head_repo_full_name="eve/widget",
        head_repo_id=901,
    )
    run = run_for(service, own, report_zip(regressed()), pr_zip(str(other.number)))
    writes = service.deliver(run)
    assert downloaded(service, run, "pr-number")
    assert_writes_only_to(service, writes, own)
    posted(service, own, run)
    assert service.fake.comments_on("acme/widget", other.number) == []


def test_fork_without_pr_number_artifact_is_derived_from_its_head(service: Service) -> None:
    own = service.pull(fork=True)
    run = run_for(service, own, report_zip(regressed()), None)
    writes = service.deliver(run)
    assert_writes_only_to(service, writes, own)
    assert "1 regression" in posted(service, own, run)


def test_fork_head_shared_by_two_open_prs_goes_to_the_proven_hint(service: Service) -> None:
    # Two open PRs from the run's head repository at the run's head commit: the hint names
    # one that passes every check, and that one alone gets the comment.
    first = service.pull(fork=True)
    second = service.pull(fork=True, sha=first.head_sha)
    run = run_for(service, first, report_zip(regressed()), pr_zip(str(second.number)))
    writes = service.deliver(run)
    assert_writes_only_to(service, writes, second)
    posted(service, second, run)
    assert service.fake.comments_on("acme/widget", first.number) == []


def test_fork_head_shared_by_two_open_prs_without_hint_posts_nothing(service: Service) -> None:
    first = service.pull(fork=True)
    second = service.pull(fork=True, sha=first.head_sha)
    run = run_for(service, first, report_zip(regressed()), None)
    assert service.deliver(run) == []
    service.assert_done("2 open PRs match the run's head commit", "nothing posted")
    assert service.fake.comments_on("acme/widget", first.number) == []
    assert service.fake.comments_on("acme/widget", second.number) == []


def test_run_of_a_commit_no_pr_has_posts_nothing(service: Service) -> None:
    own = service.pull()
    run = run_for(service, own, report_zip(regressed()), pr_zip(str(own.number)), head_sha="f" * 40)
    assert service.deliver(run) == []
    service.assert_done("no open PR match", "nothing posted")


# --- across all cases ----------------------------------------------------------------------------


def test_storage_never_saw_a_credential_and_nothing_leaked(service: Service) -> None:
    # Whatever else ran in this module before, at least these downloads happened.
    own = service.pull(fork=True)
    run = run_for(service, own, bomb(8 * MiB), zip_of({"n.txt": bytes(4 * MiB)}))
    assert_writes_only_to(service, service.deliver(run), own)
    fake = service.fake
    assert len(fake.storage_requests) >= 3
    assert all("authorization" not in r.headers for r in fake.storage_requests)
    assert all(r.status == 200 for r in fake.storage_requests)
    check_everything_clean(fake)
    assert fake.unknown_routes == []
    assert fake.foreign_comment_edits == []
