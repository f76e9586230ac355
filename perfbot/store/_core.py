"""The store's logic, written once for SQLite and PostgreSQL.

``SQLStore`` is every role of ``perfbot.store.base.Store`` written over the four
primitives of ``perfbot.store._sql.SQLBackend`` (fetch, write, write many rows, run steps
atomically). Each role's statements and logic sit together in one module:

* ``_queue``: deliveries, the sweeps for missed ones, the job queue;
* ``_state``: pull-request state, suspended installations, locks and marks;
* ``_series``: the measurements;
* ``_watch``: the default branch's watch (its changes, and the acknowledgements);
* ``_pace``: the pace of GitHub writes, shared by replicas;
* ``_configs``: repository configuration files as read from GitHub, shared by replicas.

A backend (``sqlite.SQLiteStore``, ``postgres.PostgresStore``) adds only what really
differs: its connections and how the primitives run on them, ``setup``/``close``, the
claim (what keeps claims exclusive between processes), recording a delivery (SQLite's
group commit, PostgreSQL's one statement), and presence (which ended processes' claims
it can free at once). Statements are SQL both databases read, with ``:name``
parameters, compiled per dialect (``_sql.SQL``); the few that differ are written per
dialect beside each other (``SQL.each``), and the rows come back through shared readers
(``_rows``).

Adding a table (as the watch's and the write pacer's were):

1. a migration at the end of ``_schema.STEPS``, its DDL written once with the
   dialect's words (``{real}``, ``{bigint}``, ``{identity}``, ``{flag[name]}``), an
   ``Each`` only where the DDL really differs; and its version's digests in
   ``tests/store/test_migrations.py``;
2. its role protocol in ``base.py``, added to ``Store``;
3. one module of its statements and a mixin of its methods over the primitives (as
   ``_state.LocksSQL``), added to ``SQLStore`` below. Neither backend changes.
"""

from __future__ import annotations

from perfbot.store._configs import ConfigFilesSQL
from perfbot.store._pace import PacingSQL
from perfbot.store._queue import DeliveriesSQL, QueueSQL
from perfbot.store._series import MeasurementsSQL
from perfbot.store._state import InstallationsSQL, LocksSQL, MarksSQL, PullsSQL
from perfbot.store._watch import WatchSQL


class SQLStore(
    DeliveriesSQL,
    QueueSQL,
    LocksSQL,
    MarksSQL,
    PullsSQL,
    InstallationsSQL,
    MeasurementsSQL,
    WatchSQL,
    PacingSQL,
    ConfigFilesSQL,
):
    """Every role but what each backend adds (see the module's docstring)."""
