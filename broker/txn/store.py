"""Transaction metadata in the metadata store (Kafka keeps it in ``__transaction_state``).

Every state change is one database transaction guarded by the state it starts from (a
compare-and-set on producer id, epoch and state), so two brokers that both think they
coordinate an id cannot interleave their changes: the loser gets ``StaleTxnMetadata`` and
re-reads. The store also hands out the coordinator epoch: each coordinator start takes
the next one, so partition leaders can refuse markers from a coordinator that was
replaced (TRANSACTION_COORDINATOR_FENCED).

Pending offsets of TxnOffsetCommit wait here, keyed by producer id, until the group's
marker materializes (COMMIT) or drops (ABORT) them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from sqlalchemy import Connection, Row, and_, delete, select, update

from mirrorsim.broker.group.offset_store import CommittedOffset, TopicPartition
from mirrorsim.broker.metadata import schema
from mirrorsim.broker.metadata.store import MetadataStore, transaction
from mirrorsim.broker.txn.state import TxnMetadata, TxnState

_EPOCH_ROW = 0


class StaleTxnMetadata(Exception):
    """The stored metadata is not the one the change was computed from."""


class TxnStore:
    def __init__(self, store: MetadataStore) -> None:
        self._engine = store.engine

    def next_coordinator_epoch(self) -> int:
        table = schema.txn_coordinator_epoch
        with transaction(self._engine) as conn:
            row = conn.execute(select(table.c.epoch).where(table.c.id == _EPOCH_ROW)).first()
            epoch = 0 if row is None else int(row[0]) + 1
            if row is None:
                conn.execute(table.insert().values(id=_EPOCH_ROW, epoch=epoch))
            else:
                conn.execute(update(table).where(table.c.id == _EPOCH_ROW).values(epoch=epoch))
            return epoch

    def get(self, transactional_id: str) -> TxnMetadata | None:
        table = schema.transactions
        with transaction(self._engine) as conn:
            row = conn.execute(
                select(table).where(table.c.transactional_id == transactional_id)
            ).first()
        return None if row is None else _from_row(row)

    def all(self) -> list[TxnMetadata]:
        with transaction(self._engine) as conn:
            return [_from_row(row) for row in conn.execute(select(schema.transactions))]

    def replace(self, expected: TxnMetadata | None, new: TxnMetadata) -> None:
        """Write ``new`` if the stored row is still ``expected`` (absent when None)."""
        table = schema.transactions
        values = _to_values(new)
        with transaction(self._engine) as conn:
            if expected is None:
                exists = conn.execute(
                    select(table.c.transactional_id).where(
                        table.c.transactional_id == new.transactional_id
                    )
                ).first()
                if exists is not None:
                    raise StaleTxnMetadata(new.transactional_id)
                conn.execute(table.insert().values(**values))
                return
            guard = and_(
                table.c.transactional_id == expected.transactional_id,
                table.c.producer_id == expected.producer_id,
                table.c.producer_epoch == expected.producer_epoch,
                table.c.state == expected.state.value,
                table.c.last_update_ms == expected.last_update_ms,
            )
            if not conn.execute(update(table).where(guard).values(**values)).rowcount:
                raise StaleTxnMetadata(new.transactional_id)

    # -- pending transactional offsets -----------------------------------------------------

    def add_pending_offsets(
        self, producer_id: int, group_id: str, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> None:
        table = schema.txn_pending_offsets
        with transaction(self._engine) as conn:
            for tp, offset in offsets.items():
                key = and_(
                    table.c.producer_id == producer_id,
                    table.c.group_id == group_id,
                    table.c.topic == tp.topic,
                    table.c.partition == tp.partition,
                )
                conn.execute(delete(table).where(key))
                conn.execute(
                    table.insert().values(
                        producer_id=producer_id,
                        group_id=group_id,
                        topic=tp.topic,
                        partition=tp.partition,
                        committed_offset=offset.committed_offset,
                        leader_epoch=offset.leader_epoch,
                        metadata=offset.metadata,
                    )
                )

    def pending_offsets(self, producer_id: int) -> dict[str, dict[TopicPartition, CommittedOffset]]:
        table = schema.txn_pending_offsets
        with transaction(self._engine) as conn:
            return _group_rows(conn, table.c.producer_id == producer_id)

    def pending_partitions(self, group_id: str) -> set[TopicPartition]:
        """Partitions of a group with an offset waiting on a transaction (require_stable)."""
        table = schema.txn_pending_offsets
        with transaction(self._engine) as conn:
            rows = conn.execute(
                select(table.c.topic, table.c.partition).where(table.c.group_id == group_id)
            )
            return {TopicPartition(row.topic, row.partition) for row in rows}

    def drop_pending_offsets(self, producer_id: int, group_ids: list[str]) -> None:
        table = schema.txn_pending_offsets
        with transaction(self._engine) as conn:
            conn.execute(
                delete(table).where(
                    table.c.producer_id == producer_id, table.c.group_id.in_(group_ids)
                )
            )


def _group_rows(
    conn: Connection, where: object
) -> dict[str, dict[TopicPartition, CommittedOffset]]:
    table = schema.txn_pending_offsets
    result: dict[str, dict[TopicPartition, CommittedOffset]] = {}
    for row in conn.execute(select(table).where(where)):  # type: ignore[arg-type]
        result.setdefault(row.group_id, {})[TopicPartition(row.topic, row.partition)] = (
            CommittedOffset(row.committed_offset, row.leader_epoch, row.metadata)
        )
    return result


def _to_values(meta: TxnMetadata) -> dict[str, object]:
    return {
        "transactional_id": meta.transactional_id,
        "producer_id": meta.producer_id,
        "producer_epoch": meta.producer_epoch,
        "last_producer_id": meta.last_producer_id,
        "last_producer_epoch": meta.last_producer_epoch,
        "timeout_ms": meta.timeout_ms,
        "state": meta.state.value,
        "partitions": json.dumps(sorted(meta.partitions)),
        "txn_start_ms": meta.txn_start_ms,
        "last_update_ms": meta.last_update_ms,
    }


def _from_row(row: Row[object]) -> TxnMetadata:
    m = row._mapping
    return TxnMetadata(
        transactional_id=m["transactional_id"],
        producer_id=int(m["producer_id"]),
        producer_epoch=int(m["producer_epoch"]),
        timeout_ms=int(m["timeout_ms"]),
        state=TxnState(m["state"]),
        partitions=frozenset((str(t), int(p)) for t, p in json.loads(m["partitions"])),
        txn_start_ms=int(m["txn_start_ms"]),
        last_update_ms=int(m["last_update_ms"]),
        last_producer_id=int(m["last_producer_id"]),
        last_producer_epoch=int(m["last_producer_epoch"]),
    )
