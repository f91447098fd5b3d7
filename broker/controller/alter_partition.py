"""Compare-and-set writes of one partition row: elections and ISR changes (AlterPartition).

A write names the row it expects (replicas, leader, leader epoch, ISR); if the row has
moved on, the write is refused and the caller re-reads. This stands in for Kafka's
partition epoch: every election bumps the leader epoch and every ISR change alters the ISR,
so a stale controller or a leader with an outdated ISR cannot overwrite a newer decision.
Controller writes are also fenced by the controller lease.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, and_, select, update

from mirrorsim.broker.controller.lease import holds_lease
from mirrorsim.broker.metadata import change_counter, schema
from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.protocol.errors import ErrorCode, KafkaError


@dataclass(frozen=True, slots=True)
class ControllerFence:
    """The controller a write comes from; refused once another broker took the lease."""

    broker_id: int
    controller_epoch: int
    now_ms: int


class PartitionWriter:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def compare_and_set(
        self,
        topic: str,
        expected: PartitionAssignment,
        new: PartitionAssignment,
        *,
        fence: ControllerFence | None = None,
    ) -> bool:
        """Write ``new`` if the row still equals ``expected`` (and the fence holds)."""
        with self._engine.begin() as conn:
            if fence is not None and not holds_lease(
                conn, fence.broker_id, fence.controller_epoch, fence.now_ms
            ):
                return False
            if _read(conn, topic, expected.partition) != expected:
                return False
            _write(conn, topic, new)
            return True

    def alter_isr(
        self,
        topic: str,
        partition: int,
        *,
        leader: int,
        leader_epoch: int,
        expected_isr: tuple[int, ...],
        new_isr: tuple[int, ...],
        live: Collection[int],
    ) -> PartitionAssignment:
        """AlterPartition from a leader; raises Kafka's AlterPartition error codes."""
        with self._engine.begin() as conn:
            current = _read(conn, topic, partition)
            if current is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if current.leader != leader or current.leader_epoch != leader_epoch:
                raise KafkaError(
                    ErrorCode.FENCED_LEADER_EPOCH,
                    f"{topic}-{partition} is led by {current.leader} at epoch "
                    f"{current.leader_epoch}, not {leader} at {leader_epoch}",
                )
            if current.isr != expected_isr:
                raise KafkaError(
                    ErrorCode.INVALID_UPDATE_VERSION,
                    f"ISR of {topic}-{partition} is {list(current.isr)}, not {list(expected_isr)}",
                )
            if leader not in new_isr or not set(new_isr) <= set(current.replicas):
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid ISR {list(new_isr)}")
            added = set(new_isr) - set(current.isr)
            if not added <= set(live):
                raise KafkaError(
                    ErrorCode.INELIGIBLE_REPLICA,
                    f"Replicas {sorted(added - set(live))} are not live",
                )
            updated = PartitionAssignment(
                partition, current.replicas, current.leader, current.leader_epoch, new_isr
            )
            _write(conn, topic, updated)
            return updated


def _read(conn: Connection, topic: str, partition: int) -> PartitionAssignment | None:
    row = conn.execute(
        select(schema.partitions).where(
            and_(schema.partitions.c.topic == topic, schema.partitions.c.partition == partition)
        )
    ).first()
    if row is None:
        return None
    return PartitionAssignment(
        partition=row.partition,
        replicas=tuple(json.loads(row.replicas)),
        leader=row.leader,
        leader_epoch=row.leader_epoch,
        isr=tuple(json.loads(row.isr)),
    )


def _write(conn: Connection, topic: str, new: PartitionAssignment) -> None:
    conn.execute(
        update(schema.partitions)
        .where(
            and_(schema.partitions.c.topic == topic, schema.partitions.c.partition == new.partition)
        )
        .values(
            replicas=json.dumps(list(new.replicas)),
            leader=new.leader,
            leader_epoch=new.leader_epoch,
            isr=json.dumps(list(new.isr)),
        )
    )
    change_counter.bump(conn)
