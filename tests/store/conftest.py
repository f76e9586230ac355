"""Fixtures of the store tests: a private PostgreSQL server for the session (tests/pg.py)."""

from __future__ import annotations

from tests.pg import pg_database, pg_server, pg_url

__all__ = ["pg_database", "pg_server", "pg_url"]
