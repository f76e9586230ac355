"""A report kept to be laid out again: its comparison and what the body says around it
(``RenderContext``), as JSON beside the prepared report, and back.

The App stores a PR's prepared report (``render.Prepared``) to compose its comment again
as the PR's situation changes. A person's ``/perfbot accept`` changes the report itself
(rows, headline, check run): with the comparison and its context kept too, it is laid out
again at once (``prepare``), without the artifact or the store's history.

The JSON is written from the dataclasses' own type hints and read back against them:
dataclasses as objects of their fields (one of several in a union also names its class,
``"@"``), enums by value, tuples as arrays, times in ISO 8601. What does not read back
exactly as declared (a report kept by another version of perfbot, say) is no report:
``load`` says None, and the comment waits for the next one.
"""

from __future__ import annotations

import enum
import json
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime
from operator import attrgetter
from typing import Any, Final, Literal, Union, get_args, get_origin, get_type_hints

import orjson

from perfbot.engine.judge.compare import Comparison
from perfbot.engine.show.render import Prepared, RenderContext, document_text

# A metric is about half a kilobyte of JSON, and writing it takes ~30 µs: a report of more
# metrics or samples than these is not kept (it could not be accepted, nor would its JSON
# fit), and one whose JSON is longer than this neither.
MAX_KEPT_METRICS: Final = 5_000
MAX_KEPT_SAMPLES: Final = 100_000
MAX_KEPT_CHARS: Final = 4 * 1024 * 1024
_VERSION: Final = 1
# The kept report, compact, when orjson cannot write it (``_source``). What it writes is
# made here afresh (no value is met twice): no need to look for cycles.
_SOURCE: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)


@dataclass(frozen=True, slots=True)
class Kept:
    """What a report is laid out from: ``render.prepare(comparison, context)``."""

    comparison: Comparison
    context: RenderContext


def dump(prepared: Prepared, kept: Kept | None) -> str:
    """``prepared`` as ``Prepared.dump`` writes it, with ``kept`` beside it when given and
    not too big (``Prepared.load`` reads the text as ever). Writing a big report's takes a
    while: off the event loop."""
    document = prepared.document()
    if kept is not None and keepable(kept.comparison):
        source = _source(_plain(Kept, kept))
        if len(source) <= MAX_KEPT_CHARS:
            document["kept"] = {"version": _VERSION, "source": source}
    return document_text(document)


def _source(plain: Any) -> str:
    """The kept report's JSON: orjson's (a third of json's time, checks included) when it
    reads back as ``plain`` exactly, else json's. orjson writes a NaN or an infinity as
    null, and refuses an int beyond 64 bits or a lone surrogate, where json writes what
    ``load`` reads back as it was."""
    try:
        text = orjson.dumps(plain)
    except orjson.JSONEncodeError:
        return _SOURCE.encode(plain)
    if orjson.loads(text) != plain:
        return _SOURCE.encode(plain)
    return text.decode()


def keepable(comparison: Comparison) -> bool:
    """Whether ``comparison`` is small enough to keep (``MAX_KEPT_METRICS``, ``…_SAMPLES``),
    told before a byte of it is written."""
    metrics = [m for platform in comparison.platforms for m in platform.metrics]
    if len(metrics) > MAX_KEPT_METRICS:
        return False
    samples = sum(len(s.samples) for m in metrics for s in (m.base, m.head) if s is not None)
    return samples <= MAX_KEPT_SAMPLES


def load(stored: str) -> Kept | None:
    """The report kept in ``stored`` (a ``dump``), or None when it holds none this perfbot
    reads."""
    try:
        document = json.loads(stored)
        kept = document["kept"] if isinstance(document, dict) else None
        if not isinstance(kept, dict) or kept.get("version") != _VERSION:
            return None
        value = _typed(Kept, json.loads(kept["source"]))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None
    return value if isinstance(value, Kept) else None


# --- writing ---------------------------------------------------------------------------------

Writer = Callable[[Any], Any]
# A writer per type hint, made once: walking the hints for every value cost ~80 µs a metric.
_WRITERS: dict[Any, Writer] = {}
_MAKING: set[Any] = set()  # the hints whose writers are being made
_MAKING_LOCK: Final = threading.RLock()
# The types of value a scalar's writer passes through as they are: an enum or a time is
# what it changes. A field or an item of one of these is copied without a call.
_PLAIN: Final[frozenset[type]] = frozenset({str, int, float, bool, type(None)})
_UNCHANGED: Final[frozenset[type]] = frozenset()


def _plain(hint: Any, value: Any) -> Any:
    return _writer(hint)(value)


def _writer(hint: Any) -> Writer:
    writer = _WRITERS.get(hint)
    if writer is not None:
        return writer
    with _MAKING_LOCK:  # a big report is written on a thread of its own
        writer = _WRITERS.get(hint)
        if writer is not None:
            return writer
        if hint in _MAKING:  # a type that holds itself: its writer is looked up when called

            def later(value: Any) -> Any:
                return _WRITERS[hint](value)

            return later
        _MAKING.add(hint)
        try:
            writer = _WRITERS[hint] = _make_writer(hint)
        finally:
            _MAKING.discard(hint)
    return writer


def _make_writer(hint: Any) -> Writer:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return _union_writer(hint)
    if origin is tuple:
        return _tuple_writer(hint)
    if is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_writer(hint)
    return _scalar


def _unchanged(hint: Any) -> frozenset[type]:
    """The types of value that ``_writer(hint)`` returns as they are, whatever their value."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        # The option a value passes first writes it: a scalar one as it is. A Literal's
        # test looks at the value, not only its type: a value it passes is unchanged too.
        return frozenset(kind for option in get_args(hint) for kind in _passes(option))
    if origin is tuple or (is_dataclass(hint) and isinstance(hint, type)):
        return _UNCHANGED
    return _PLAIN  # ``_scalar``


def _passes(option: Any) -> frozenset[type]:
    """The plain types every value of which passes ``_test_of(option)``."""
    if option is type(None):
        return frozenset({type(None)})
    if get_origin(option) is Literal:
        return _UNCHANGED
    if option is float:
        return frozenset({float, int})
    kind = get_origin(option) or option
    if not isinstance(kind, type) or is_dataclass(kind):
        return _UNCHANGED
    return frozenset(plain for plain in _PLAIN if issubclass(plain, kind))


def _dataclass_writer(cls: type[Any]) -> Writer:
    """An object of the dataclass's fields: each value as it is when its type is one its
    hint writes unchanged, else by its hint's writer.

    Made from source, one entry per field, as ``dataclasses`` makes a class's
    ``__init__``: a loop over the fields cost half as much again, on every kept report."""
    hints = _hints(cls)
    names = [f.name for f in fields(cls)]
    # What the source names: the values' getter, and each field's types of value written
    # as they are and its writer. A field's name is an identifier (dataclasses checks).
    scope: dict[str, Any] = {"values": _getter(names)}
    entries = []
    for i, name in enumerate(names):
        scope[f"unchanged{i}"] = _unchanged(hints[name])
        scope[f"write{i}"] = _writer(hints[name])
        entries.append(f"{name!r}: v{i} if type(v{i}) in unchanged{i} else write{i}(v{i})")
    values = "".join(f"v{i}, " for i in range(len(names)))
    unpack = f"    {values}= values(value)\n" if names else ""
    source = f"def dataclass_writer(value):\n{unpack}    return {{{', '.join(entries)}}}\n"
    # Named for tracebacks and profiles; made above of field names only.
    exec(compile(source, f"<kept writer of {cls.__qualname__}>", "exec"), scope)
    writer: Writer = scope["dataclass_writer"]
    return writer


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The values of the attributes ``names`` of an object, as a tuple."""
    if len(names) > 1:
        return attrgetter(*names)
    return lambda value: tuple(getattr(value, name) for name in names)


def _scalar(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _union_writer(hint: Any) -> Writer:
    tagged = len(_dataclasses(hint)) > 1
    # Each option in order: how a value of it is told, and how it is written.
    options = [
        (_test_of(option), _writer(option), _tag_of(option, tagged)) for option in get_args(hint)
    ]
    # Without a Literal, a value's type alone tells which option writes it: that option
    # is found once for each type of value the union meets.
    by_type: dict[type, tuple[Writer, str]] | None = (
        None if any(get_origin(option) is Literal for option in get_args(hint)) else {}
    )

    def union_writer(value: Any) -> Any:
        chosen = None if by_type is None else by_type.get(type(value))
        if chosen is None:
            chosen = next(((w, tag) for test, w, tag in options if test(value)), None)
            if chosen is None:
                raise TypeError(f"{type(value).__name__} is none of {hint}")
            if by_type is not None:
                by_type[type(value)] = chosen
        write, tag = chosen
        plain = write(value)
        return {"@": tag, **plain} if tag else plain

    return union_writer


def _test_of(option: Any) -> Callable[[Any], bool]:
    """Whether a value is of the union's ``option``."""
    if option is type(None):
        return lambda value: value is None
    if get_origin(option) is Literal:
        allowed = get_args(option)
        return lambda value: value in allowed
    if option is float:  # a float's may be written as an int
        return lambda value: isinstance(value, float | int) and not isinstance(value, bool)
    kind = get_origin(option) or option
    return lambda value: isinstance(value, kind)


def _tag_of(option: Any, tagged: bool) -> str:
    return option.__name__ if tagged and _is_class(option) else ""


def _tuple_writer(hint: Any) -> Writer:
    args = get_args(hint)
    if len(args) == 2 and args[1] is Ellipsis:
        write = _writer(args[0])
        unchanged = _unchanged(args[0])

        def same_items(value: Any) -> Any:
            # Samples, mostly: when every item is written as it is, the list is a copy.
            if unchanged and set(map(type, value)) <= unchanged:
                return list(value)
            return [write(element) for element in value]

        return same_items

    writers = [_writer(item) for item in args]

    def each_item(value: Any) -> Any:
        if len(value) != len(writers):
            raise TypeError(f"{len(value)} elements for {hint}")
        return [write(element) for write, element in zip(writers, value, strict=True)]

    return each_item


def _items(hint: Any, value: tuple[Any, ...]) -> list[Any]:
    """The hint of each element of ``value``: ``tuple[X, ...]`` or ``tuple[A, B]``."""
    args = get_args(hint)
    if len(args) == 2 and args[1] is Ellipsis:
        return [args[0]] * len(value)
    if len(args) != len(value):
        raise TypeError(f"{len(value)} elements for {hint}")
    return list(args)


# --- reading ---------------------------------------------------------------------------------


def _typed(hint: Any, value: Any) -> Any:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return _typed_union(hint, value)
    if origin is Literal:
        if value in get_args(hint):
            return value
        raise ValueError(f"{value!r} is not one of {get_args(hint)}")
    if origin is tuple:
        if not isinstance(value, list):
            raise TypeError(f"{hint} is not a list")
        return tuple(
            _typed(item, element)
            for item, element in zip(_items(hint, tuple(value)), value, strict=True)
        )
    if is_dataclass(hint) and isinstance(hint, type):
        return _typed_dataclass(hint, value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if hint is datetime:
        return datetime.fromisoformat(value)
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if hint is type(None) and value is None:
        return None
    if hint in (int, str, bool) and type(value) is hint:
        return value
    raise TypeError(f"{value!r} is not a {hint}")


def _typed_union(hint: Any, value: Any) -> Any:
    tagged = isinstance(value, dict) and "@" in value
    for option in get_args(hint):
        if tagged and not (_is_class(option) and option.__name__ == value["@"]):
            continue
        try:
            return _typed(option, {k: v for k, v in value.items() if k != "@"} if tagged else value)
        except (ValueError, TypeError, KeyError):
            continue
    raise TypeError(f"{value!r} is none of {hint}")


def _typed_dataclass(cls: type[Any], value: Any) -> Any:
    if not isinstance(value, dict):
        raise TypeError(f"{cls.__name__} is not an object")
    names = [f.name for f in fields(cls)]
    if set(value) != set(names):
        raise KeyError(f"{cls.__name__} has other fields")
    hints = _hints(cls)
    return cls(**{name: _typed(hints[name], value[name]) for name in names})


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _dataclasses(hint: Any) -> list[Any]:
    return [option for option in get_args(hint) if _is_class(option)]


def _is_class(hint: Any) -> bool:
    """Whether ``hint`` is a dataclass (the class, not an instance)."""
    return isinstance(hint, type) and is_dataclass(hint)
