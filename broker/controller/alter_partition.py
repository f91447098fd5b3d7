"""Compare-and-set writes of one partition row: elections and ISR changes (AlterPartition).

A write names the row it expects (replicas, leader, leader epoch, ISR); if the row has
moved on, the write is refused and the caller re-reads. This stands in for Kafka's
partition epoch: every election bumps the leader epoch and every ISR change alters the ISR,
so a stale controller or a leader with an outdated ISR cannot overwrite a newer decision.
Controller writes are also fenced by the controller lease. ISR changes are also checked
against the broker rows (broker epochs, fencing, liveness), and the controller clears a new
incarnation's fence here (``unfence``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine, and_, select, update

from mirrorsim.broker.controller.lease import holds_lease
from mirrorsim.broker.metadata import change_counter, schema
from mirrorsim.broker.metadata.models import BrokerRegistration, PartitionAssignment
from mirrorsim.broker.metadata.store import transaction
from mirrorsim.protocol.errors import ErrorCode, KafkaError

NO_BROKER_EPOCH = -1
"""A broker epoch the request does not know: not checked (Kafka's -1)."""


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
        with transaction(self._engine) as conn:
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
        session: BrokerSession,
    ) -> PartitionAssignment:
        """AlterPartition from a leader; raises Kafka's AlterPartition error codes.

        The broker rows are read in the same transaction as the partition row, so a replica
        that re-registered (a new incarnation, fenced) after the leader last saw it cannot
        slip into the ISR with a log its old incarnation had.
        """
        with transaction(self._engine) as conn:
            current = _read(conn, topic, partition)
            if current is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            brokers = _brokers(conn)
            registered = brokers.get(leader)
            if registered is not None and session.leader_epoch not in (
                NO_BROKER_EPOCH,
                registered.broker_epoch,
            ):
                raise KafkaError(
                    ErrorCode.STALE_BROKER_EPOCH,
                    f"Broker {leader} is at broker epoch {registered.broker_epoch}, "
                    f"not {session.leader_epoch}",
                )
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
            ineligible = sorted(
                r for r in set(new_isr) - set(current.isr) if not session.eligible(brokers.get(r))
            )
            if ineligible:
                raise KafkaError(
                    ErrorCode.INELIGIBLE_REPLICA,
                    f"Replicas {ineligible} are not live, fenced or of another broker epoch",
                )
            updated = PartitionAssignment(
                partition, current.replicas, current.leader, current.leader_epoch, new_isr
            )
            _write(conn, topic, updated)
            return updated


@dataclass(frozen=True, slots=True)
class BrokerSession:
    """What an ISR change is checked against besides the partition row (KIP-903): the
    leader's broker epoch, the broker epoch each follower's fetches carried, and when a
    heartbeat still counts as live."""

    now_ms: int
    session_timeout_ms: int
    leader_epoch: int = NO_BROKER_EPOCH
    member_epochs: Mapping[int, int] = field(default_factory=dict)

    def eligible(self, broker: BrokerRegistration | None) -> bool:
        """A joining replica: registered, live, unfenced, and the incarnation that fetched."""
        if broker is None or broker.fenced:
            return False
        if self.now_ms - broker.heartbeat_at > self.session_timeout_ms:
            return False
        fetched_as = self.member_epochs.get(broker.broker_id, NO_BROKER_EPOCH)
        return fetched_as in (NO_BROKER_EPOCH, broker.broker_epoch)


def unfence(
    engine: Engine, broker_id: int, broker_epoch: int, fence: ControllerFence | None
) -> bool:
    """Clear the fence of one incarnation (still the registered one). ``fence``: the
    controller's, refused once it lost the lease; None for a broker clearing its own
    fence, which is safe only when it holds no role (roles never grow while fenced)."""
    with transaction(engine) as conn:
        if fence is not None and not holds_lease(
            conn, fence.broker_id, fence.controller_epoch, fence.now_ms
        ):
            return False
        brokers = schema.brokers
        return bool(
            conn.execute(
                update(brokers)
                .where(
                    (brokers.c.broker_id == broker_id)
                    & (brokers.c.broker_epoch == broker_epoch)
                    & brokers.c.fenced
                )
                .values(fenced=False)
            ).rowcount
        )


def _brokers(conn: Connection) -> dict[int, BrokerRegistration]:
    return {
        row.broker_id: BrokerRegistration(**row._mapping)
        for row in conn.execute(select(schema.brokers))
    }


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
    change_counter.bump(conn, topics=[topic])
