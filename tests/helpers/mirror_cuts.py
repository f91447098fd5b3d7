"""Source batches and configs for mirror-partition ReplicaManager tests."""

from __future__ import annotations

from helpers.replica_manager import TOPIC
from mirrorsim.broker.replica import FetchKey
from mirrorsim.protocol.records import RawBatch, Record, build_batch

MIRROR_CONFIGS = {"mirror.name": "my-mirror"}


LEADER_EPOCH = 4


FOLLOWER = 2


KEY = FetchKey(TOPIC, 0)


def source_batch(offset: int, count: int, epoch: int) -> RawBatch:
    return build_batch(
        [Record(offset + i, 1_000, b"k", b"v") for i in range(count)],
        base_offset=offset,
        partition_leader_epoch=epoch,
    )
