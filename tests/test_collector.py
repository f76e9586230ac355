"""The engine's entry points raise the young collection threshold while they run, and
always put it back: nested, concurrent, failing or with collection turned off."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from perfbot.engine.judge.compare import compare
from perfbot.engine.read.collector import ENGINE_YOUNG_THRESHOLD, fewer_collections
from perfbot.engine.read.sides import ReportFile, read_side
from perfbot.engine.show.render import render


@pytest.fixture(autouse=True)
def _default_thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def test_the_threshold_is_raised_inside_and_restored_after_even_on_failure() -> None:
    seen: list[tuple[int, int, int]] = []

    @fewer_collections
    def inner() -> None:
        seen.append(gc.get_threshold())

    @fewer_collections
    def outer() -> None:
        inner()
        seen.append(gc.get_threshold())
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        outer()
    assert seen == [(ENGINE_YOUNG_THRESHOLD, 10, 10)] * 2
    assert gc.get_threshold() == (700, 10, 10)


def test_concurrent_calls_share_one_raise_and_the_last_restores() -> None:
    started, release = threading.Barrier(2), threading.Event()
    seen: list[int] = []

    @fewer_collections
    def work() -> None:
        started.wait(5)
        release.wait(5)
        seen.append(gc.get_threshold()[0])

    first = threading.Thread(target=work)
    first.start()
    second = threading.Thread(target=work)
    second.start()
    release.set()
    first.join(5)
    second.join(5)
    assert seen == [ENGINE_YOUNG_THRESHOLD] * 2
    assert gc.get_threshold() == (700, 10, 10)


def test_collection_turned_off_or_already_rarer_is_left_as_it_is() -> None:
    @fewer_collections
    def threshold() -> int:
        return gc.get_threshold()[0]

    gc.set_threshold(0)
    assert threshold() == 0
    gc.set_threshold(ENGINE_YOUNG_THRESHOLD * 2)
    assert threshold() == ENGINE_YOUNG_THRESHOLD * 2


def test_a_large_report_is_judged_with_few_young_collections() -> None:
    """2 platforms x 5,000 metrics a side: tens of thousands of objects that all stay alive;
    at CPython's default threshold the collector would walk them hundreds of times."""
    files = [
        ReportFile(
            f"board-{board}/zperf.log",
            "\n".join(
                f"[00:00:00.000,000] ZPERF-RESULT case{i:05d}_mbps={10 + i % 97:.3f}"
                for i in range(5_000)
            ).encode(),
        )
        for board in range(2)
    ]
    young: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 0:
            young.append(1)

    gc.callbacks.append(count)
    try:
        render(compare(read_side(files), read_side(files)))
    finally:
        gc.callbacks.remove(count)
    assert len(young) < 20, f"{len(young)} young collections"
