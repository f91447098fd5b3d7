"""Partition replicas on one broker: roles, high watermark, ISR and the data path."""

from mirrorsim.broker.replica.fetch_session import (
    FetchContext,
    FetchKey,
    FetchSession,
    FetchSessionCache,
    IncrementalContext,
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
    "FetchContext",
    "FetchKey",
    "FetchOutcome",
    "FetchParams",
    "FetchSession",
    "FetchSessionCache",
    "IncrementalContext",
    "OffsetAndTimestamp",
    "Partition",
    "PartitionFetch",
    "PartitionOutcome",
    "PartitionRead",
    "PartitionState",
    "ReplicaManager",
]
