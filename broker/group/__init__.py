"""The classic consumer-group coordinator (JoinGroup/SyncGroup/Heartbeat/...) and the
committed offsets it owns."""

from mirrorsim.broker.group.clock import Clock, ManualClock, SystemClock
from mirrorsim.broker.group.config import GroupConfig
from mirrorsim.broker.group.coordinator import GroupCoordinator
from mirrorsim.broker.group.offset_store import (
    CommittedOffset,
    InMemoryOffsetStore,
    OffsetStore,
    TopicPartition,
)
from mirrorsim.broker.group.state import GroupState, IllegalGroupTransition

__all__ = [
    "Clock",
    "CommittedOffset",
    "GroupConfig",
    "GroupCoordinator",
    "GroupState",
    "IllegalGroupTransition",
    "InMemoryOffsetStore",
    "ManualClock",
    "OffsetStore",
    "SystemClock",
    "TopicPartition",
]
