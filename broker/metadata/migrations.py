"""Versioned schema migrations, applied in order when a store opens.

``MIGRATIONS[i]`` brings the schema from version ``i`` to ``i + 1``. ``schema.py``
always describes the newest shape and the first migration creates whatever tables are
missing from it, so on a fresh database the later migrations find their change already
made: every migration must therefore be idempotent (inspect before altering). Several
brokers may open the same database at once; the migrations run inside one write
transaction (SQLite ``BEGIN IMMEDIATE``, a PostgreSQL advisory lock), so exactly one
of them applies each version.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Connection, inspect, select, text

from mirrorsim.broker.metadata import change_counter, schema

Migration = Callable[[Connection], None]


def _create_initial_tables(conn: Connection) -> None:
    schema.metadata.create_all(conn, checkfirst=True)


def _add_transaction_tables(conn: Connection) -> None:
    for table in (
        schema.transactions,
        schema.txn_pending_offsets,
        schema.txn_coordinator_epoch,
    ):
        table.create(conn, checkfirst=True)


def _add_security_tables(conn: Connection) -> None:
    for table in (schema.scram_credentials, schema.broker_listeners):
        table.create(conn, checkfirst=True)


def _add_mirror_source_clusters(conn: Connection) -> None:
    schema.mirror_source_clusters.create(conn, checkfirst=True)


def _add_finalized_features(conn: Connection) -> None:
    schema.finalized_features.create(conn, checkfirst=True)


def _add_metadata_version(conn: Connection) -> None:
    schema.metadata_version.create(conn, checkfirst=True)
    change_counter.create_row(conn)


def _add_broker_epochs(conn: Connection) -> None:
    schema.broker_epoch_counter.create(conn, checkfirst=True)
    present = {column["name"] for column in inspect(conn).get_columns("brokers")}
    if "broker_epoch" not in present:
        conn.execute(text("ALTER TABLE brokers ADD COLUMN broker_epoch BIGINT NOT NULL DEFAULT 0"))
    if "fenced" not in present:
        conn.execute(text("ALTER TABLE brokers ADD COLUMN fenced BOOLEAN NOT NULL DEFAULT FALSE"))


def _add_client_quotas(conn: Connection) -> None:
    schema.client_quotas.create(conn, checkfirst=True)


def _add_group_configs(conn: Connection) -> None:
    schema.group_configs.create(conn, checkfirst=True)


def _add_share_group_states(conn: Connection) -> None:
    schema.share_group_states.create(conn, checkfirst=True)


def _add_topic_versions(conn: Connection) -> None:
    present = {column["name"] for column in inspect(conn).get_columns("topics")}
    if "version" not in present:
        conn.execute(text("ALTER TABLE topics ADD COLUMN version BIGINT NOT NULL DEFAULT 0"))


MIGRATIONS: list[Migration] = [
    _create_initial_tables,
    _add_transaction_tables,
    _add_security_tables,
    _add_mirror_source_clusters,
    _add_finalized_features,
    _add_metadata_version,
    _add_broker_epochs,
    _add_client_quotas,
    _add_group_configs,
    _add_share_group_states,
    _add_topic_versions,
]


def current_version(conn: Connection) -> int:
    schema.schema_version.create(conn, checkfirst=True)
    latest = conn.execute(
        select(schema.schema_version.c.version).order_by(schema.schema_version.c.version.desc())
    ).first()
    return 0 if latest is None else int(latest[0])


def migrate(conn: Connection, migrations: list[Migration] = MIGRATIONS) -> int:
    """Apply the pending migrations in the caller's transaction; returns the new version.

    The store's transactions run one at a time (``store.create_store_engine``), so two
    first openers cannot both apply a migration."""
    version = current_version(conn)
    for target, migration in enumerate(migrations[version:], start=version + 1):
        migration(conn)
        conn.execute(
            schema.schema_version.insert().values(
                version=target, applied_at=int(time.time() * 1000)
            )
        )
    return max(version, len(migrations))
