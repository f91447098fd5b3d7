"""Client quotas in the metadata store (Kafka keeps them as ClientQuotaRecords in its
metadata log), so that a quota set through any broker is enforced by all of them.

One row per (entity, key); an entity left with no key has no rows, as Kafka drops it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from sqlalchemy import and_, delete, select

from mirrorsim.broker.metadata import schema
from mirrorsim.broker.metadata.store import MetadataStore, transaction
from mirrorsim.broker.quotas.entity import Entity

QuotaChanges = Mapping[Entity, Mapping[str, float | None]]
"""Entity -> key -> new value, None removing the key."""


def encode_entity(entity: Entity) -> str:
    return json.dumps([list(pair) for pair in entity])


def decode_entity(text: str) -> Entity:
    return tuple((str(entity_type), name) for entity_type, name in json.loads(text))


def client_quotas(store: MetadataStore) -> dict[Entity, dict[str, float]]:
    table = schema.client_quotas
    quotas: dict[Entity, dict[str, float]] = {}
    with transaction(store.engine) as conn:
        for row in conn.execute(select(table)):
            quotas.setdefault(decode_entity(row.entity), {})[row.key] = float(row.value)
    return quotas


def alter_client_quotas(store: MetadataStore, changes: QuotaChanges) -> None:
    """Apply every change in one transaction: a request's accepted entities land together."""
    table = schema.client_quotas
    with transaction(store.engine) as conn:
        for entity, ops in changes.items():
            encoded = encode_entity(entity)
            for key, value in ops.items():
                where = and_(table.c.entity == encoded, table.c.key == key)
                conn.execute(delete(table).where(where))
                if value is not None:
                    conn.execute(table.insert().values(entity=encoded, key=key, value=value))
