"""Per-group config overrides in the metadata store (Kafka keeps them as ConfigRecords of
GROUP resources in its metadata log), so every broker describes the same values."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import delete, select

from mirrorsim.broker.metadata import schema
from mirrorsim.broker.metadata.store import MetadataStore, transaction


def group_configs(store: MetadataStore, group_id: str) -> dict[str, str]:
    table = schema.group_configs
    with transaction(store.engine) as conn:
        rows = conn.execute(select(table).where(table.c.group_id == group_id))
        return {row.name: row.value for row in rows}


def alter_group_configs(
    store: MetadataStore, group_id: str, change: Callable[[dict[str, str]], dict[str, str]]
) -> dict[str, str]:
    """Replace the group's overrides with ``change(current)`` in one transaction, so two
    alterations of one group cannot lose each other's keys; an exception from ``change``
    stores nothing."""
    table = schema.group_configs
    with transaction(store.engine) as conn:
        rows = conn.execute(select(table).where(table.c.group_id == group_id))
        configs = change({row.name: row.value for row in rows})
        conn.execute(delete(table).where(table.c.group_id == group_id))
        for name, value in configs.items():
            conn.execute(table.insert().values(group_id=group_id, name=name, value=value))
    return configs
