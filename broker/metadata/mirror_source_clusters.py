"""The source cluster id of each mirror, stored beside the mirror.

Every metadata refresh of a mirror compares the source's current cluster id with the one
first seen for the mirror, to halt the sync when the address now leads to another
cluster. Kept in one broker's memory, that guard would be lost by a restart or a move of
the mirror's metadata coordinator, and the new coordinator would adopt the replacement as
if it were the original. Stored here, the first id survives both, and every broker's
ListMirrors reports the same one. Rows reference ``mirrors`` with ``ON DELETE CASCADE``:
a deleted mirror forgets its source. Methods are synchronous, one short transaction
each, like ``MetadataStore``'s.
"""

from __future__ import annotations

import time

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from mirrorsim.broker.metadata import schema
from mirrorsim.broker.metadata.store import MetadataStore, transaction


class MirrorSourceClusters:
    def __init__(self, store: MetadataStore) -> None:
        self._engine = store.engine

    def cluster_ids(self) -> dict[str, str]:
        """``{mirror: source cluster id}`` of every mirror that has connected once."""
        table = schema.mirror_source_clusters
        with transaction(self._engine) as conn:
            return {row.mirror: row.cluster_id for row in conn.execute(select(table))}

    def record(self, mirror: str, cluster_id: str) -> str:
        """Store ``cluster_id`` unless the mirror already has one; returns the stored id.

        The first writer wins, so two brokers that connect at once agree on one id, and a
        later connection to a replaced source never overwrites the original. An unknown
        mirror (deleted meanwhile) raises KeyError.
        """
        table = schema.mirror_source_clusters
        with transaction(self._engine) as conn:
            row = conn.execute(select(table.c.cluster_id).where(table.c.mirror == mirror)).first()
            if row is not None:
                return str(row.cluster_id)
            try:
                conn.execute(
                    table.insert().values(
                        mirror=mirror, cluster_id=cluster_id, recorded_at=int(time.time() * 1000)
                    )
                )
            except IntegrityError:
                raise KeyError(f"unknown mirror {mirror}") from None
            return cluster_id
