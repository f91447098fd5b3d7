"""Failover of a 64-partition topic: batched, and every partition ends exactly as one alone.

Each partition must still go through the whole STOPPING sequence (epoch above every
epoch in its log, in the metadata store and the checkpoint, MIRROR_PID_RESET first in the
new epoch, writable), while the state records of all partitions share a few appends to
``__mirror_state`` instead of one per partition and transition.
"""

from __future__ import annotations

import asyncio
from typing import Any

from helpers.mirrors import (
    MIRROR,
    MIRROR_CONFIGS,
    batches_of,
    broker_of,
    mirror_state,
    mirrored_up_to,
    produce_error_code,
)

from mirrorsim.broker.log.epoch_cache import CHECKPOINT_NAME, EpochEntry, LeaderEpochFileCache
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.cluster import ClusterClient
from mirrorsim.compare.workload import produce_batch
from mirrorsim.protocol.messages.mirror_state_records import MIRROR_STATE_TOPIC
from mirrorsim.protocol.records import MirrorPidReset, Record, build_batch, decode_control_batch

PARTITIONS = 64
TOPIC = "wide"


def _state_topic_batches(cluster: Any) -> int:
    broker = broker_of(cluster)
    partitions = broker.snapshot.topics[MIRROR_STATE_TOPIC].partitions
    return sum(len(batches_of(cluster, MIRROR_STATE_TOPIC, p.partition)) for p in partitions)


async def test_sixty_four_partitions_fail_over_together(start_cluster: Any, wait_for: Any) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])).all()
    async with ClusterClient(source.bootstrap, client_id="wide-producer") as client:
        await client.refresh_metadata([TOPIC])
        for p in range(PARTITIONS):
            batch = build_batch([Record(i, 0, None, b"v") for i in range(2)])
            await produce_batch(client, TOPIC, p, batch.data)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
        await wait_for(
            lambda: all(
                mirror_state(destination, TOPIC, p) == "MIRRORING"
                and mirrored_up_to(source, destination, TOPIC, p)
                for p in range(PARTITIONS)
            ),
            timeout=30,
            message="every partition mirrored",
        )
        state_batches_before = _state_topic_batches(destination)

        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()
        await wait_for(
            lambda: all(
                mirror_state(destination, TOPIC, p) == "STOPPED" for p in range(PARTITIONS)
            ),
            timeout=30,
            message="every partition STOPPED",
        )

    broker = broker_of(destination)
    stored = (await asyncio.to_thread(broker.store.topics, [TOPIC]))[TOPIC].partitions
    assert [a.leader_epoch for a in stored] == [1] * PARTITIONS
    for p in range(PARTITIONS):
        last = batches_of(destination, TOPIC, p)[-1]
        assert (last.base_offset, last.partition_leader_epoch) == (2, 1)
        assert decode_control_batch(last) == MirrorPidReset(source.cluster_id)
        log = broker.replica_manager.partition(TOPIC, p).log
        on_disk = LeaderEpochFileCache.load(log.dir / CHECKPOINT_NAME).epoch_entries
        assert on_disk[-1] == EpochEntry(1, 2)
        assert log.epoch_cache.epoch_entries == on_disk
    appended = _state_topic_batches(destination) - state_batches_before
    assert 0 < appended < PARTITIONS
    for p in (0, PARTITIONS - 1):
        assert await produce_error_code(destination.bootstrap, TOPIC, p) == 0
