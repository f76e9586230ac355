"""Conditional reads: what GitHub last answered to a read, kept with its ``ETag``, so the
same read asked again says ``If-None-Match`` and a ``304 Not Modified`` (which GitHub does
not count against the rate limit) gives back the value already converted.

Kept per process, per installation (the key says whose read it was: an answer one
installation may see is never handed to another), least recently used first out, within
``max_bytes`` of the kept values' approximate sizes. What is kept is the converted value
(a PR's few fields), not GitHub's answer (15-30 KB of JSON for a PR): counted at the
answer's size, 8 MiB held some 300 PRs, and a process serving more read each of them in
full every time, a round robin through the LRU (bench/service.py, 600 installations).
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, fields, is_dataclass
from typing import Final, Generic, TypeVar, cast

from perfbot.github.errors import GitHubError
from perfbot.github.wire import Answered

V = TypeVar("V")
R = TypeVar("R")
A = TypeVar("A", bound=Answered)

DEFAULT_MAX_BYTES: Final = 8 * 1024 * 1024
# What an entry costs besides its value's text: the key, the ETag, the objects.
ENTRY_OVERHEAD: Final = 400


@dataclass(frozen=True, slots=True)
class Validated(Generic[V]):
    etag: str
    value: V
    size: int


class Validators:
    """The latest answer of each read, by key, with its ETag."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: OrderedDict[Hashable, Validated[object]] = OrderedDict()

    def get(self, key: Hashable) -> Validated[object] | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: Hashable, etag: str, value: object, size: int) -> None:
        self.drop(key)
        cost = size + ENTRY_OVERHEAD
        if cost > self._max_bytes:
            return
        self._entries[key] = Validated(etag, value, cost)
        self._bytes += cost
        while self._bytes > self._max_bytes:
            _, oldest = self._entries.popitem(last=False)
            self._bytes -= oldest.size

    def drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry.size

    def __len__(self) -> int:
        return len(self._entries)


async def conditional_read(
    validators: Validators | None,
    key: Hashable,
    *,
    call: Callable[[str, Callable[[], Awaitable[A]]], Awaitable[R]],
    send: Callable[[dict[str, str]], Awaitable[A]],
    convert: Callable[[A], V],
    gone: tuple[int, ...],
) -> V | None:
    """The value of a read through ``call`` (the installation's, paced and mapped), naming
    the ETag of ``key``'s last answer: a 304 gives back that answer's value; None when
    GitHub answers one of ``gone`` (the entry is dropped)."""
    known = validators.get(key) if validators is not None else None
    headers = {"If-None-Match": known.etag} if known is not None else {}
    try:
        response = cast(A, await call("GET", lambda: send(headers)))
    except GitHubError as exc:
        if exc.status in gone:
            if validators is not None:
                validators.drop(key)
            return None
        raise
    if response.status_code == 304 and known is not None:
        return cast(V, known.value)
    value = convert(response)
    etag = response.headers.get("etag")
    if etag and validators is not None:
        validators.put(key, etag, value, kept_size(value))
    return value


def kept_size(value: object) -> int:
    """About the memory ``value`` holds: a text's length; an object's own size and its
    fields' (each counted shallowly: a PR's labels tuple, not each label)."""
    if isinstance(value, str | bytes):
        return len(value)
    if is_dataclass(value) and not isinstance(value, type):
        return sys.getsizeof(value) + sum(
            sys.getsizeof(getattr(value, field.name)) for field in fields(value)
        )
    return sys.getsizeof(value)
