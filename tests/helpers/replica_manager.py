"""Building blocks for ReplicaManager tests: a fake clock, fetch requests and partition state."""

from __future__ import annotations

import uuid

from mirrorsim.broker.replica import (
    PartitionFetch,
    PartitionRead,
    PartitionState,
)
from mirrorsim.protocol.errors import KafkaError
from mirrorsim.protocol.records import (
    Record,
    build_batch,
    decode_records,
    iter_batches,
)

TOPIC = "orders"


NOW_MS = 1_700_000_000_000


TOPIC_ID = uuid.UUID("6f1c2c4e-1111-4222-8333-944455556666")


class FakeClock:
    """Wall-clock milliseconds for the replica manager, frozen at NOW_MS."""

    def __call__(self) -> int:
        return NOW_MS


def log_clock() -> float:
    """The log's clock (seconds), frozen at the same instant."""
    return NOW_MS / 1000


def records_bytes(
    values: list[bytes],
    *,
    timestamp: int = NOW_MS,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    batch = build_batch(
        [Record(i, timestamp, None, v) for i, v in enumerate(values)],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    return batch.data


def state(
    partition: int = 0,
    *,
    leader: int = 1,
    epoch: int = 0,
    replicas: tuple[int, ...] = (1,),
    isr: tuple[int, ...] | None = None,
    configs: dict[str, str] | None = None,
) -> PartitionState:
    return PartitionState(
        topic=TOPIC,
        partition=partition,
        topic_id=TOPIC_ID,
        leader=leader,
        leader_epoch=epoch,
        replicas=replicas,
        isr=replicas if isr is None else isr,
        configs=configs or {},
    )


def consumer_fetch(offset: int, max_bytes: int = 1 << 20, **kw: int) -> PartitionFetch:
    return PartitionFetch(fetch_offset=offset, partition_max_bytes=max_bytes, **kw)


def fetched_values(read: PartitionRead | KafkaError, from_offset: int = 0) -> list[bytes | None]:
    assert isinstance(read, PartitionRead), read
    return [
        r.value
        for batch in iter_batches(read.records)
        for r in decode_records(batch)
        if r.offset >= from_offset
    ]
