"""The store's shared reads of configuration files (``ConfigFiles``): one per repository
whatever the case of its names, a later read over an earlier one but never the reverse,
no file kept as no file, purged by age. Both backends, several stores on one database
as replicas are."""

from __future__ import annotations

from perfbot.store import Store
from perfbot.store.base import SharedFile
from tests.store.conftest import Connect


async def test_a_read_is_shared_with_another_replica_whatever_the_case(connect: Connect) -> None:
    one, two = await connect(), await connect()
    assert await two.config_file("acme", "widget") is None
    await one.save_config_file("Acme", "Widget", "threshold: 2\n", 10.0)
    assert await two.config_file("acme", "WIDGET") == SharedFile("threshold: 2\n", 10.0)
    assert await two.config_file("acme", "gadget") is None
    assert await two.config_file("other", "widget") is None


async def test_a_later_read_replaces_an_earlier_one_never_the_reverse(store: Store) -> None:
    await store.save_config_file("acme", "widget", "threshold: 2\n", 10.0)
    await store.save_config_file("acme", "widget", "threshold: 3\n", 20.0)
    await store.save_config_file("acme", "widget", "threshold: 1\n", 15.0)  # read before
    assert await store.config_file("acme", "widget") == SharedFile("threshold: 3\n", 20.0)


async def test_no_file_is_kept_as_no_file(store: Store) -> None:
    await store.save_config_file("acme", ".github", None, 10.0)
    assert await store.config_file("acme", ".github") == SharedFile(None, 10.0)


async def test_reads_older_than_the_cut_are_purged(store: Store) -> None:
    await store.save_config_file("acme", "old", "a: 1\n", 10.0)
    await store.save_config_file("acme", "new", "a: 2\n", 30.0)
    assert await store.purge_config_files(20.0) == 1
    assert await store.config_file("acme", "old") is None
    assert await store.config_file("acme", "new") == SharedFile("a: 2\n", 30.0)
