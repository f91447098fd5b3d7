"""Mirroring a 64-partition topic: every partition reaches MIRRORING and catches up.

The throughput benchmark's shape (mirror the topic, pause, produce, resume) with as many
partitions as it uses, so a stall that shows only with many partitions (state writes,
fetcher placement, one shared fetch session) fails here within seconds.
"""

from __future__ import annotations

import time
from typing import Any

from helpers.mirrors import MIRROR, MIRROR_CONFIGS, broker_of, mirror_state, partition_log

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.cluster import ClusterClient
from mirrorsim.compare.workload import produce_batch
from mirrorsim.protocol.records import Compression, Record, build_batch

PARTITIONS = 64
TOPIC = "wide"


async def _produce_each(bootstrap: str, records: int) -> None:
    now_ms = int(time.time() * 1000)
    async with ClusterClient(bootstrap, client_id="wide-producer") as client:
        await client.refresh_metadata([TOPIC])
        for p in range(PARTITIONS):
            batch = build_batch(
                [Record(i, now_ms, f"k{i}".encode(), bytes(64)) for i in range(records)],
                compression=Compression.LZ4,
            )
            await produce_batch(client, TOPIC, p, batch.data)


def _caught_up(source: Any, destination: Any) -> bool:
    """Every partition MIRRORING, its log end at the source's, and no lag seen by the leader."""
    statuses = broker_of(destination).mirrors.partitions
    for p in range(PARTITIONS):
        status = statuses.get((TOPIC, p))
        source_end = partition_log(source, TOPIC, p).log_end_offset
        if (
            status is None
            or status.state.name != "MIRRORING"
            or partition_log(destination, TOPIC, p).log_end_offset != source_end
            or status.source_high_watermark != source_end
        ):
            return False
    return True


async def test_sixty_four_partitions_all_mirror_pause_resume_and_catch_up(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])).all()
    await _produce_each(source.bootstrap, 3)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
        await wait_for(lambda: _caught_up(source, destination), timeout=15, message="first copy")

        (await admin.pause_mirror_topics(MIRROR, [TOPIC])).all()
        await wait_for(
            lambda: all(mirror_state(destination, TOPIC, p) == "PAUSED" for p in range(PARTITIONS)),
            timeout=15,
            message="every partition PAUSED",
        )
        await _produce_each(source.bootstrap, 5)
        assert partition_log(destination, TOPIC, 0).log_end_offset == 3

        (await admin.resume_mirror_topics(MIRROR, [TOPIC])).all()
        await wait_for(lambda: _caught_up(source, destination), timeout=15, message="catch-up")
        described = (await admin.describe_mirrors([MIRROR]))[MIRROR].partitions
    assert len(described) == PARTITIONS
    assert {d.state for d in described} == {"MIRRORING"}
    assert all(partition_log(destination, TOPIC, p).log_end_offset == 8 for p in range(PARTITIONS))
