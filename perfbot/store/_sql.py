"""Statements written once for both dialects, and what a backend provides to run them.

A statement is written with named parameters (``:name``) in SQL that SQLite and
PostgreSQL both read, and compiled once per dialect into the driver's positional
placeholders (``?`` for sqlite3, ``%s`` for psycopg) with the order of its parameters.
Positional rather than named: for a measurement's 23 columns, sqlite3 took twice as long
to bind them by name, a dict per row to build besides, which a report's thousands of
rows would feel. The one other rewrite: SQLite (before 3.39) spells the standard's
``IS [NOT] DISTINCT FROM`` as ``IS [NOT]``. A statement whose SQL really differs between
the dialects is written once per dialect (``SQL.each``), with the same parameters.

Importing it loads no database driver.
"""

from __future__ import annotations

import abc
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal, TypeVar, cast

Dialect = Literal["sqlite", "postgres"]
DIALECTS: Final[tuple[Dialect, ...]] = ("sqlite", "postgres")

Params = Mapping[str, Any]
Row = tuple[Any, ...]  # what sqlite3 and psycopg (TupleRow) return
T = TypeVar("T")

# What compiling rewrites, outside quoted literals: a parameter (a colon and a name, not a
# cast's ::text), the standard's IS [NOT] DISTINCT FROM, and a percent sign (psycopg reads
# every % as a placeholder's start, in literals too).
_TOKEN: Final = re.compile(
    r"(?P<literal>'(?:[^']|'')*')"
    r"|(?<!:):(?P<name>[A-Za-z_]\w*)"
    r"|(?P<distinct>\bIS (?P<not>NOT )?DISTINCT FROM\b)"
    r"|%"
)


@dataclass(frozen=True, slots=True)
class Compiled:
    """A statement as one driver takes it: its text, and its parameters' names in the
    order of their placeholders (a name used twice is there twice)."""

    text: str
    names: tuple[str, ...]
    # Every statement binds through this: itemgetter picks the values in C.
    _pick: Callable[[Params], tuple[Any, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = self.names

        def one(params: Params) -> tuple[Any, ...]:
            return (params[names[0]],)  # itemgetter of one name gives the value alone

        def none(params: Params) -> tuple[Any, ...]:
            return ()

        pick: Callable[[Params], tuple[Any, ...]] = one if len(names) == 1 else none
        if len(names) > 1:
            pick = cast(Callable[[Params], tuple[Any, ...]], operator.itemgetter(*names))
        object.__setattr__(self, "_pick", pick)

    def bind(self, params: Params) -> tuple[Any, ...]:
        """``params`` (by name) as the driver's positional values; a missing one raises."""
        return self._pick(params)


class SQL:
    """One statement, written once (``SQL(text)``) or once per dialect (``SQL.each``)."""

    __slots__ = ("_compiled", "text")

    def __init__(self, text: str) -> None:
        self.text = text  # as written: what a reader (or a mutant) edits
        self._compiled = {dialect: _compile(text, dialect) for dialect in DIALECTS}

    @classmethod
    def each(cls, *, sqlite: str, postgres: str) -> SQL:
        """A statement whose SQL differs between the dialects; ``text`` is SQLite's."""
        statement = cls(sqlite)
        statement._compiled["postgres"] = _compile(postgres, "postgres")
        if set(statement._compiled["postgres"].names) != set(statement._compiled["sqlite"].names):
            raise ValueError(f"the two dialects' statements take other parameters: {sqlite}")
        return statement

    def compiled(self, dialect: Dialect) -> Compiled:
        return self._compiled[dialect]

    @property
    def names(self) -> tuple[str, ...]:
        """The parameters in placeholder order, the same in both dialects: the order in
        which ``SQLBackend._write_many`` takes each row's values."""
        names = self._compiled["sqlite"].names
        if self._compiled["postgres"].names != names:
            raise ValueError("the dialects take this statement's parameters in other orders")
        return names

    def __repr__(self) -> str:
        return f"SQL({' '.join(self.text.split())!r})"


def _compile(text: str, dialect: Dialect) -> Compiled:
    names: list[str] = []
    postgres = dialect == "postgres"

    def replace(match: re.Match[str]) -> str:
        if match.group("name") is not None:
            names.append(match.group("name"))
            return "%s" if postgres else "?"
        if match.group("distinct") is not None and not postgres:
            return "IS" if match.group("not") else "IS NOT"
        # A literal, or a percent sign, or the standard's spelling that PostgreSQL reads.
        return match.group(0).replace("%", "%%") if postgres else match.group(0)

    return Compiled(_TOKEN.sub(replace, text), tuple(names))


# One transaction of several statements: each run once per mapping of parameters.
Steps = Sequence[tuple[SQL, Sequence[Params]]]


class SQLBackend(abc.ABC):
    """What a backend provides for the store's logic (``perfbot.store._core``) to run.

    Each primitive is one transaction. The backend chooses where and how: SQLite on its
    worker thread under BEGIN IMMEDIATE, PostgreSQL on a pooled autocommit connection.
    """

    dialect: ClassVar[Dialect]

    @abc.abstractmethod
    async def _fetch(self, sql: SQL, params: Params) -> list[Row]:
        """The rows of one query."""

    async def _peek(self, sql: SQL, params: Params) -> list[Row]:
        """The rows of a point read (a key's row or two, by index) or another small read
        (a report's few series' histories): ``_fetch``, unless the backend has a cheaper
        way for so small a read."""
        return await self._fetch(sql, params)

    async def _fetch_if(self, probe: SQL, sql: SQL, params: Params) -> list[Row]:
        """The rows of ``sql``. ``probe`` is a point read (``_peek``) that finds a row
        whenever ``sql`` would, of the same ``params``: a backend whose point reads cost
        far less than its queries asks it first, and answers a query that would find
        nothing (most PRs have no acceptances, most branches no open changes) without
        running it. Here, the query alone."""
        return await self._fetch(sql, params)

    async def _poke(self, sql: SQL, params: Params) -> int:
        """One small write (a row by its key: a lease, a lock, a pace record): ``_write``,
        unless the backend has a cheaper way for so small a write."""
        return await self._write(sql, params)

    @abc.abstractmethod
    async def _write(self, sql: SQL, params: Params) -> int:
        """Run one statement in a write transaction of its own; the rows it changed."""

    @abc.abstractmethod
    async def _write_many(
        self, sql: SQL, items: Sequence[T], row: Callable[[T], tuple[Any, ...]]
    ) -> int:
        """Run ``sql`` once per item, all in one transaction; the rows changed.

        ``row(item)`` gives an item's values in the order of ``sql.names``. The backend
        decides where the rows are encoded (10,000 take a tenth of a second).
        """

    @abc.abstractmethod
    async def _atomically(self, steps: Steps) -> list[Row]:
        """Run the steps in order in one transaction; the rows of the last statement."""

    def _text(self, value: str) -> str:
        """``value`` as this database can store it (PostgreSQL's text holds no NUL)."""
        return value
