"""Partition replicas on one broker: roles, high watermark, ISR and the data path."""

from mirrorsim.broker.replica.fetch_session import (
    FetchKey,
    FetchSessionCache,
    PartitionFetch,
    PartitionOutcome,
)
from mirrorsim.broker.replica.manager import (
    FetchOutcome,
    FetchParams,
    OffsetAndTimestamp,
    ReplicaManager,
)
from mirrorsim.broker.replica.partition import AppendResult, Partition, PartitionRead
from mirrorsim.broker.replica.partition_state import PartitionState

__all__ = [
    "AppendResult",
    "FetchKey",
    "FetchOutcome",
    "FetchParams",
    "FetchSessionCache",
    "OffsetAndTimestamp",
    "Partition",
    "PartitionFetch",
    "PartitionOutcome",
    "PartitionRead",
    "PartitionState",
    "ReplicaManager",
]
