"""Configuration files are read from GitHub once per minute, per repository and per owner."""

from __future__ import annotations

import asyncio

from perfbot.app.configcache import CONFIG_PATH, ConfigCache
from perfbot.github.errors import GitHubError, GitHubUnavailable


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
