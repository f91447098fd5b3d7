"""The broker's answers to the transaction coordinator's questions about the cluster.

Ownership uses FindCoordinator's own mapping, so the broker a client is sent to is the
one that accepts the transactional id. The offsets partition of a group is led by the
group's coordinator, by the same mapping over ``offsets.topic.num.partitions``.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from mirrorsim.broker.group.ownership import coordinator_partition
from mirrorsim.broker.metadata.models import BrokerRegistration
from mirrorsim.broker.metadata.view import ClusterSnapshot
from mirrorsim.broker.txn.state import GROUP_OFFSETS_TOPIC


@runtime_checkable
class TxnClusterHost(Protocol):
    """What the coordinator's view of the cluster reads of its broker."""

    @property
    def broker_id(self) -> int: ...

    @property
    def snapshot(self) -> ClusterSnapshot: ...

    def config(self, name: str) -> Any: ...

    def live_brokers(self) -> list[BrokerRegistration]: ...


class BrokerTxnCluster:
    def __init__(self, broker: TxnClusterHost) -> None:
        self._broker = broker

    def _node_for(self, partition: int) -> int | None:
        live = self._broker.live_brokers()
        return live[partition % len(live)].broker_id if live else None

    def owns(self, transactional_id: str) -> bool:
        partitions = int(self._broker.config("transaction.state.log.num.partitions"))
        return self._node_for(coordinator_partition(transactional_id, partitions)) == (
            self._broker.broker_id
        )

    def offsets_partition(self, group_id: str) -> int:
        return coordinator_partition(
            group_id, int(self._broker.config("offsets.topic.num.partitions"))
        )

    def partition_exists(self, topic: str, partition: int) -> bool:
        record = self._broker.snapshot.topics.get(topic)
        return record is not None and any(p.partition == partition for p in record.partitions)

    def leader_for(self, topic: str, partition: int) -> int | None:
        if topic == GROUP_OFFSETS_TOPIC:
            return self._node_for(partition)
        record = self._broker.snapshot.topics.get(topic)
        if record is None:
            return None
        for assignment in record.partitions:
            if assignment.partition == partition and assignment.leader >= 0:
                return int(assignment.leader)
        return None
