"""Configuration files are read from GitHub once per minute, per repository and per owner."""

from __future__ import annotations

import asyncio

from perfbot.app.configcache import CONFIG_PATH, ConfigCache
from perfbot.github.errors import GitHubError, GitHubUnavailable
from perfbot.store.base import SharedFile


class Files:
    """A file source that counts its reads."""

    def __init__(self, files: dict[tuple[str, str], str], error: GitHubError | None = None):
        self.files = files
        self.error = error
        self.reads: list[tuple[str, str]] = []

    async def get_file(self, owner: str, repo: str, path: str) -> str | None:
        assert path == CONFIG_PATH
        self.reads.append((owner, repo))
        if self.error is not None:
            raise self.error
        return self.files.get((owner, repo))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_repo_merged_over_org_and_cached() -> None:
    clock = Clock()
    cache = ConfigCache(ttl=60, clock=clock)
    files = Files({("acme", ".github"): "threshold: 2\n", ("acme", "widget"): "tolerance: 9\n"})
    result = await cache.get(files, "acme", "widget")
    assert (result.repo_config.threshold, result.repo_config.tolerance) == (2, 9)
    await cache.get(files, "acme", "widget")
    assert len(files.reads) == 2  # the second call was served from the cache
    clock.now = 61
    await cache.get(files, "acme", "widget")
    assert len(files.reads) == 4


async def test_org_exclude_disables_the_repository() -> None:
    files = Files({("acme", ".github"): "exclude: [widget]\n"})
    result = await ConfigCache().get(files, "acme", "widget")
    assert not result.repo_config.enabled
    assert result.excluded_by_org


async def test_no_access_to_the_org_repository_means_no_defaults() -> None:
    files = Files({}, error=GitHubError("forbidden", 403))
    result = await ConfigCache().get(files, "acme", "widget")
    assert result.repo_config.enabled
    assert result.errors == ()


async def test_a_github_outage_is_not_mistaken_for_no_file() -> None:
    files = Files({}, error=GitHubUnavailable("502", 502))
    try:
        await ConfigCache().get(files, "acme", "widget")
    except GitHubUnavailable:
        return
    raise AssertionError("a retryable error must reach the job, which retries it")


class SlowFiles(Files):
    """Answers only once released: reads pile up behind the first."""

    def __init__(self, files: dict[tuple[str, str], str], error: GitHubError | None = None):
        super().__init__(files, error)
        self.release = asyncio.Event()

    async def get_file(self, owner: str, repo: str, path: str) -> str | None:
        await self.release.wait()
        return await super().get_file(owner, repo, path)


async def test_jobs_asking_together_share_one_read() -> None:
    cache = ConfigCache(ttl=60, clock=Clock())
    files = SlowFiles({("acme", "widget"): "tolerance: 9\n"})
    asking = [asyncio.create_task(cache.get(files, "acme", "widget")) for _ in range(20)]
    await asyncio.sleep(0)
    asking[0].cancel()  # one job gives up: the others still get the file
    files.release.set()
    results = await asyncio.gather(*asking[1:])
    assert {r.repo_config.tolerance for r in results} == {9}
    assert sorted(files.reads) == [("acme", ".github"), ("acme", "widget")]


async def test_a_shared_read_that_fails_fails_each_waiter_and_is_tried_again() -> None:
    cache = ConfigCache(ttl=60, clock=Clock())
    files = SlowFiles({}, error=GitHubUnavailable("GitHub answered 502", 502))
    asking = [asyncio.create_task(cache.get(files, "acme", "widget")) for _ in range(5)]
    await asyncio.sleep(0)
    files.release.set()
    results = await asyncio.gather(*asking, return_exceptions=True)
    assert all(isinstance(r, GitHubUnavailable) for r in results)
    assert files.reads == [("acme", ".github")]
    files.error = None
    await cache.get(files, "acme", "widget")
    assert len(files.reads) == 3


class SharedFiles:
    """The store's ``ConfigFiles`` in memory, as every process of one database sees it."""

    def __init__(self, broken: bool = False) -> None:
        self.files: dict[tuple[str, str], SharedFile] = {}
        self.broken = broken

    async def config_file(self, owner: str, repo: str) -> SharedFile | None:
        if self.broken:
            raise RuntimeError("the disk is on fire")
        return self.files.get((owner.lower(), repo.lower()))

    async def save_config_file(self, owner: str, repo: str, text: str | None, now: float) -> None:
        if self.broken:
            raise RuntimeError("the disk is on fire")
        self.files[(owner.lower(), repo.lower())] = SharedFile(text, now)

    async def purge_config_files(self, before: float) -> int:
        return 0


async def test_a_second_process_takes_the_first_ones_read_for_the_rest_of_its_minute() -> None:
    wall, shared = Clock(), SharedFiles()
    first = ConfigCache(ttl=60, clock=Clock(), shared=shared, wall=wall)
    second_clock = Clock()
    second = ConfigCache(ttl=60, clock=second_clock, shared=shared, wall=wall)
    files = Files({("acme", ".github"): "threshold: 2\n", ("acme", "widget"): "tolerance: 9\n"})
    await first.get(files, "acme", "widget")
    assert len(files.reads) == 2
    wall.now = second_clock.now = 40.0
    result = await second.get(files, "Acme", "widget")
    assert (result.repo_config.threshold, result.repo_config.tolerance) == (2, 9)
    assert len(files.reads) == 2  # the first process's reads, not GitHub
    # Trusted for what was left of the first read's minute, not a minute of its own.
    wall.now = second_clock.now = 61.0
    await second.get(files, "acme", "widget")
    assert len(files.reads) == 4
    assert shared.files[("acme", "widget")] == SharedFile("tolerance: 9\n", 61.0)


async def test_a_store_that_cannot_be_read_costs_a_github_read_only() -> None:
    cache = ConfigCache(ttl=60, clock=Clock(), shared=SharedFiles(broken=True), wall=Clock())
    files = Files({("acme", "widget"): "tolerance: 9\n"})
    result = await cache.get(files, "acme", "widget")
    assert result.repo_config.tolerance == 9
    assert len(files.reads) == 2


async def test_the_same_texts_are_resolved_once() -> None:
    clock = Clock()
    cache = ConfigCache(ttl=60, clock=clock)
    files = Files({("acme", "widget"): "tolerance: 9\n"})
    first = await cache.get(files, "acme", "widget")
    clock.now = 61  # read again from GitHub: the same text
    assert await cache.get(files, "acme", "widget") is first
    files.files[("acme", "widget")] = "tolerance: 7\n"
    clock.now = 122
    assert (await cache.get(files, "acme", "widget")).repo_config.tolerance == 7
