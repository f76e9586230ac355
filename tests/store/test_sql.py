"""Statements written once and compiled for each dialect (perfbot.store._sql)."""

from __future__ import annotations

import pytest

from perfbot.store._queue import INSERT_DELIVERY, INSERT_JOB
from perfbot.store._rows import MEASUREMENT_COLUMNS
from perfbot.store._series import INSERT_MEASUREMENT
from perfbot.store._sql import SQL


def test_named_parameters_become_each_drivers_placeholders_in_order() -> None:
    statement = SQL("SELECT a FROM t WHERE b = :b AND c < :now AND d >= :now")

    sqlite, postgres = statement.compiled("sqlite"), statement.compiled("postgres")

    assert sqlite.text == "SELECT a FROM t WHERE b = ? AND c < ? AND d >= ?"
    assert postgres.text == "SELECT a FROM t WHERE b = %s AND c < %s AND d >= %s"
    assert sqlite.names == postgres.names == ("b", "now", "now")
    assert sqlite.bind({"now": 2.0, "b": "x", "unused": 0}) == ("x", 2.0, 2.0)
    with pytest.raises(KeyError):
        sqlite.bind({"b": "x"})


def test_literals_casts_and_percent_signs_are_not_parameters() -> None:
    statement = SQL("SELECT ':x', '$[0]', 'it''s :y' WHERE v = :v::text[] AND w LIKE 'a%'")

    assert statement.compiled("sqlite").text == (
        "SELECT ':x', '$[0]', 'it''s :y' WHERE v = ?::text[] AND w LIKE 'a%'"
    )
    assert statement.compiled("postgres").text == (
        "SELECT ':x', '$[0]', 'it''s :y' WHERE v = %s::text[] AND w LIKE 'a%%'"
    )
    assert statement.names == ("v",)


def test_sqlite_spells_is_distinct_from_its_own_way() -> None:
    statement = SQL(
        "a IS DISTINCT FROM :x AND b IS NOT DISTINCT FROM :y AND c = 'IS DISTINCT FROM'"
    )

    assert statement.compiled("sqlite").text == "a IS NOT ? AND b IS ? AND c = 'IS DISTINCT FROM'"
    assert statement.compiled("postgres").text.startswith("a IS DISTINCT FROM %s AND b IS NOT")


def test_a_statement_written_per_dialect_takes_the_same_parameters() -> None:
    statement = SQL.each(sqlite="DELETE FROM t WHERE id IN (:a)", postgres="DELETE :a")
    assert statement.text == "DELETE FROM t WHERE id IN (:a)"
    assert statement.compiled("postgres").text == "DELETE %s"
    with pytest.raises(ValueError, match="other parameters"):
        SQL.each(sqlite="SELECT :a", postgres="SELECT :b")
    with pytest.raises(ValueError, match="other orders"):
        _ = SQL.each(sqlite="SELECT :a, :b", postgres="SELECT :b, :a").names


def test_a_measurement_row_is_bound_in_the_order_of_its_columns() -> None:
    # record_measurements hands ``measurement_row``'s tuples to the driver by position.
    assert INSERT_MEASUREMENT.names == MEASUREMENT_COLUMNS


def test_a_delivery_and_its_job_are_bound_in_the_order_group_commit_writes_them() -> None:
    # perfbot.store._group_commit.record_deliveries builds their rows by position.
    assert INSERT_DELIVERY.names == ("id", "event", "action", "now", "job_id")
    assert INSERT_JOB.names == (
        "id",
        "delivery_id",
        "event",
        "payload",
        "serial_key",
        "installation_id",
        "now",
        "now",
    )
