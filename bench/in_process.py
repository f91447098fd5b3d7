"""Reading an in-process cluster's logs directly.

Benchmarks poll log end offsets every millisecond on the brokers' own event loop; a
request through a client would cost the copy being measured far more than a lookup.
"""

from __future__ import annotations

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.broker.log.partition_log import PartitionLog
from mirrorsim.protocol.errors import KafkaError


def find_leader_log(cluster: ClusterRunner, topic: str, partition: int) -> PartitionLog | None:
    """The partition leader's log, or None while no broker of ``cluster`` leads it."""
    for broker in cluster.brokers:
        try:
            replica = broker.replica_manager.partition(topic, partition)
        except KafkaError:
            continue
        if replica.is_leader:
            return replica.log
    return None


def leader_log(cluster: ClusterRunner, topic: str, partition: int) -> PartitionLog:
    """The partition leader's log; LookupError when no broker leads it."""
    log = find_leader_log(cluster, topic, partition)
    if log is None:
        raise LookupError(f"{topic}-{partition} has no leader in {cluster.spec.name}")
    return log
