"""The comparison's workload: keyed lz4 batches of a fixed size, an aged-out head, a group.

Batches are built with the project's codec and produced as they are, so every run has the
same batch boundaries; the first ``trimmed_batches`` of each partition are then deleted
(DeleteRecords), as retention would, so the source log starts above 0. A copy that
re-produces records starts its own log at 0, which is how its offsets drift.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic, OffsetAndMetadata, TopicPartition
from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.client.errors import raise_for_error
from mirrorsim.protocol.records import Compression, Record, build_batch

_PRODUCE = 0


@dataclass(frozen=True, slots=True)
class Workload:
    topic: str = "orders"
    partitions: int = 2
    records_per_partition: int = 1000
    records_per_batch: int = 50
    trimmed_batches: int = 2
    group: str = "billing"
    consumed_per_partition: int = 437
    value_size: int = 100
    records_per_timestamp: int = 10
    """Consecutive records sharing one timestamp, as a fast producer writes several within
    a millisecond: what a translation by timestamp re-reads at most."""

    @property
    def log_start_offset(self) -> int:
        return self.trimmed_batches * self.records_per_batch

    @property
    def committed_offset(self) -> int:
        """The group's position on the source: ``consumed_per_partition`` records past the
        log start, capped at the log end."""
        return min(self.log_start_offset + self.consumed_per_partition, self.records_per_partition)

    def value(self, partition: int, index: int) -> bytes:
        prefix = f"{self.topic}-{partition}-{index}-".encode()
        return prefix + b"x" * max(0, self.value_size - len(prefix))


def workload_batches(workload: Workload, partition: int, now_ms: int) -> list[bytes]:
    batches = []
    for start in range(0, workload.records_per_partition, workload.records_per_batch):
        stop = min(start + workload.records_per_batch, workload.records_per_partition)
        records = [
            Record(
                i - start,
                now_ms + i // workload.records_per_timestamp,
                f"key-{i % 97}".encode(),
                workload.value(partition, i),
            )
            for i in range(start, stop)
        ]
        batches.append(build_batch(records, compression=Compression.LZ4).data)
    return batches


async def produce_workload(bootstrap: str, workload: Workload) -> None:
    """Create the topic, produce every batch, trim the head, commit the group's position."""
    async with Admin(bootstrap=bootstrap) as admin:
        (await admin.create_topics([NewTopic(workload.topic, workload.partitions)])).all()
    now_ms = int(time.time() * 1000)
    async with ClusterClient(bootstrap, client_id="compare-workload") as client:
        await client.refresh_metadata([workload.topic])
        for partition in range(workload.partitions):
            for batch in workload_batches(workload, partition, now_ms):
                await produce_batch(client, workload.topic, partition, batch)
    tps = [TopicPartition(workload.topic, p) for p in range(workload.partitions)]
    async with Admin(bootstrap=bootstrap) as admin:
        if workload.trimmed_batches:
            await admin.delete_records({tp: workload.log_start_offset for tp in tps})
        committed = {tp: OffsetAndMetadata(workload.committed_offset) for tp in tps}
        (await admin.alter_consumer_group_offsets(workload.group, committed)).all()


async def produce_batch(client: ClusterClient, topic: str, partition: int, batch: bytes) -> None:
    leader = client.leader_for(topic, partition)
    if leader is None:
        raise RuntimeError(f"{topic}-{partition} has no leader")
    response = await client.send_to_node(
        leader,
        RequestSpec(
            _PRODUCE,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": datetime.timedelta(seconds=30),
                "topic_data": [
                    {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
                ],
            },
            versions=(9,),
        ),
    )
    raise_for_error(response.responses[0].partition_responses[0].error_code)


async def produce_records(bootstrap: str, topic: str, workload: Workload, count: int) -> None:
    """``count`` more records on every partition of ``topic``, one batch each."""
    now_ms = int(time.time() * 1000)
    async with ClusterClient(bootstrap, client_id="compare-workload") as client:
        await client.refresh_metadata([topic])
        for partition in range(workload.partitions):
            records = [
                Record(i, now_ms, b"after-failover", workload.value(partition, -1 - i))
                for i in range(count)
            ]
            await produce_batch(
                client, topic, partition, build_batch(records, compression=Compression.LZ4).data
            )
