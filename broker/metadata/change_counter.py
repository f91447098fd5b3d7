"""The metadata change counter: one row whose value grows with every committed change to
what a broker's metadata snapshot holds apart from the broker rows (topics, partitions,
dynamic broker configs, finalized features).

Every broker refreshes its snapshot twice a second, and on a large cluster re-reading every
partition row costs far more than the refresh usually finds. A writer bumps the counter in
the same transaction as its change, and a reader reads the counter before the rows, so
the rows it keeps are never older than the counter it keeps with them: an unchanged
counter proves the rows unchanged, and a write that lands between the two reads at worst
costs the next refresh one extra full read. Broker rows are left out
on purpose: heartbeats change them every few hundred milliseconds, so a refresh reads them
(a handful of rows) every time instead.

Writers bump last in their transaction, after the rows they change: on PostgreSQL the
counter row is then the last lock any writer takes, so writers queue on it without
deadlocking against each other's partition rows.

A moved counter says that something changed, not what: at 100,000 partitions re-reading
them all after each leader-epoch bump of a failover is most of the failover's work. So
a writer also names the topics whose row or partition rows it changed, and ``bump``
raises each one's ``version`` (just before the counter, in the same transaction). A
refresh then reads the (name, topic id, version) of every topic and re-reads the rows of
those whose triple moved; the topic id tells a recreated topic from the old one.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, select, update

from mirrorsim.broker.metadata import schema

_ROW_ID = 1
UNREAD = -1
"""The version of a snapshot never read from a store: differs from every stored value."""


def bump(conn: Connection, *, topics: Iterable[str]) -> None:
    """Count a committed change; ``topics``: the topics whose row or partition rows it
    changed (none for broker configs and features, nor for a deleted topic)."""
    names = sorted(set(topics))
    if names:
        table = schema.topics
        conn.execute(
            update(table).where(table.c.name.in_(names)).values(version=table.c.version + 1)
        )
    counter = schema.metadata_version
    conn.execute(
        update(counter).where(counter.c.id == _ROW_ID).values(version=counter.c.version + 1)
    )


def topic_versions(conn: Connection) -> dict[str, tuple[str, int]]:
    """Every topic's (topic id, version), by name."""
    table = schema.topics
    rows = conn.execute(select(table.c.name, table.c.topic_id, table.c.version))
    return {row.name: (row.topic_id, row.version) for row in rows}


def current(conn: Connection) -> int:
    table = schema.metadata_version
    return int(conn.execute(select(table.c.version).where(table.c.id == _ROW_ID)).scalar_one())


def create_row(conn: Connection) -> None:
    """The counter's one row at 0, unless a previous opener already made it."""
    table = schema.metadata_version
    if conn.execute(select(table.c.id).where(table.c.id == _ROW_ID)).first() is None:
        conn.execute(table.insert().values(id=_ROW_ID, version=0))
