"""A PostgreSQL URL as the store connects with it: libpq's connection string, where it
points in words a message may show (never the password), and the passwords to scrub from
any message that might quote them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

# libpq's own timeout for establishing one connection (whole seconds), unless the URL sets
# connect_timeout itself: an unreachable host fails start-up in seconds, not minutes.
CONNECT_TIMEOUT_SECONDS: Final = 10


@dataclass(frozen=True, slots=True)
class Target:
    conninfo: str
    where: str  # user@host:port/dbname
    secrets: frozenset[str]


def parse_url(url: str) -> Target:
    """``url`` (``postgresql://``, ``postgres://``) as libpq's connection string.

    Raises ``ValueError`` naming the problem, never the password, for a malformed URL.
    """
    url = normalise_scheme(url)
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        # libpq's reason quotes parts of the URL: every password in it is masked.
        reason = scrub(str(exc).strip(), url_passwords(url))
        raise ValueError(f"the PostgreSQL URL is not valid: {reason}") from None
    params.setdefault("connect_timeout", CONNECT_TIMEOUT_SECONDS)
    # Names perfbot's sessions in pg_stat_activity for the database's operator.
    params.setdefault("application_name", "perfbot")
    secrets = frozenset([str(params["password"])] if params.get("password") else [])
    return Target(make_conninfo("", **params), describe(params), secrets)


def normalise_scheme(url: str) -> str:
    """``postgres://`` and SQLAlchemy's ``postgresql+driver://`` as libpq's ``postgresql://``."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme.split("+")[0].lower() in ("postgresql", "postgres"):
        return f"postgresql://{rest}"
    return url


def describe(params: dict[str, Any]) -> str:
    """``user@host:port/dbname`` for messages: what the operator needs, never the password."""
    user = params.get("user")
    host = params.get("host") or params.get("hostaddr") or "localhost"
    port = params.get("port")
    where = f"{user}@{host}" if user else str(host)
    if port:
        where += f":{port}"
    return f"{where}/{params.get('dbname') or user or ''}"


def url_passwords(url: str) -> set[str]:
    """Every password ``url`` may carry — after ``user:`` and in ``password=`` query
    parameters — as written, decoded and unquoted, even in a URL too broken to parse."""
    rest = url.partition("://")[2]
    found = [rest.rpartition("@")[0].partition(":")[2]]
    for parameter in rest.partition("?")[2].split("&"):
        name, _, value = parameter.partition("=")
        if unquote(name).strip().lower() == "password":
            found.append(value)
    variants = {v for raw in found for v in (raw, unquote(raw), raw.strip("'\""))}
    return variants | {v.strip("'\"") for v in variants} - {""}


def scrub(message: str, secrets: Iterable[str]) -> str:
    """``message`` with every one of ``secrets`` replaced by ``***``.

    libpq's messages are not known to quote a password, but a malformed URL is quoted in
    part ("invalid percent-encoded token"), so nothing is left to chance.
    """
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            message = message.replace(secret, "***")
    return message
