"""The destination leader fences a Fetch v19 ``MirrorLeaderEpoch`` on the wire.

The mirror partition's log carries the source's epochs 0 and 3 (the source leader epoch
was raised mid-way), while the destination's own leader epoch stays 0: the mirror leader
epoch is the log's latest epoch, 3. A fetch naming an older one is FENCED_LEADER_EPOCH, a
newer one UNKNOWN_LEADER_EPOCH, and both answers carry 3, which a follower adopts; 3 and
-1 (not checked) read the records.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest
from helpers.mirrors import MIRROR, MIRROR_CONFIGS, broker_of, mirrored_up_to, produce

from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records.raw_batch import iter_batches

TOPIC = "orders"
SOURCE_EPOCH = 3
FOLLOWER_ID = 2


async def _mirror_with_two_source_epochs(start_cluster: Any, wait_for: Any) -> Any:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    await produce(source.bootstrap, TOPIC, 3, tag="epoch-0")
    broker = broker_of(source)
    row = broker.snapshot.topics[TOPIC].partitions[0]
    bumped = PartitionAssignment(0, row.replicas, row.leader, SOURCE_EPOCH, row.isr)
    await asyncio.to_thread(broker.store.update_partition, TOPIC, bumped)
    await broker.refresh_metadata()
    await produce(source.bootstrap, TOPIC, 2, tag="epoch-3")
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
    await wait_for(lambda: mirrored_up_to(source, destination, TOPIC, 0), timeout=20)
    return destination


async def _fetch_v19(destination: Any, mirror_leader_epoch: int) -> Any:
    """One partition's answer to a follower-style Fetch v19 from offset 0."""
    broker = broker_of(destination)
    partition = broker.replica_manager.partition(TOPIC, 0)
    request = build_request(
        1,
        19,
        {
            "replica_id": FOLLOWER_ID,
            "replica_state": {"replica_id": FOLLOWER_ID, "replica_epoch": -1},
            "max_wait": datetime.timedelta(0),
            "min_bytes": 1,
            "max_bytes": 1_048_576,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic_id": broker.replica_manager.topic_id(TOPIC),
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": partition.leader_epoch,
                            "fetch_offset": 0,
                            "last_fetched_epoch": -1,
                            "log_start_offset": 0,
                            "partition_max_bytes": 1_048_576,
                            "mirror_leader_epoch": mirror_leader_epoch,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    connection = BrokerConnection(broker.host, broker.port, client_id="mirror-epoch-test")
    await connection.connect()
    try:
        response = await connection.send(request)
    finally:
        await connection.close()
    return response.responses[0].partitions[0]


async def test_the_mirror_leader_epoch_is_fenced_like_the_current_leader_epoch(
    start_cluster: Any, wait_for: Any
) -> None:
    destination = await _mirror_with_two_source_epochs(start_cluster, wait_for)
    partition = broker_of(destination).replica_manager.partition(TOPIC, 0)
    assert partition.leader_epoch == 0
    assert partition.mirror_leader_epoch == SOURCE_EPOCH

    for sent, expected in (
        (SOURCE_EPOCH - 1, ErrorCode.FENCED_LEADER_EPOCH),
        (0, ErrorCode.FENCED_LEADER_EPOCH),
        (SOURCE_EPOCH + 1, ErrorCode.UNKNOWN_LEADER_EPOCH),
    ):
        answer = await _fetch_v19(destination, sent)
        assert ErrorCode(int(answer.error_code)) == expected, sent
        assert bytes(answer.records or b"") == b""
        assert int(answer.mirror_leader_epoch) == SOURCE_EPOCH

    for sent in (SOURCE_EPOCH, -1):
        answer = await _fetch_v19(destination, sent)
        assert ErrorCode(int(answer.error_code)) == ErrorCode.NONE
        assert int(answer.mirror_leader_epoch) == SOURCE_EPOCH
        batches = list(iter_batches(bytes(answer.records)))
        assert [b.partition_leader_epoch for b in batches][-1] == SOURCE_EPOCH
        assert batches[-1].last_offset == partition.log_end_offset - 1


@pytest.mark.parametrize("sent", [0, SOURCE_EPOCH])
async def test_a_plain_topic_ignores_the_mirror_leader_epoch(start_cluster: Any, sent: int) -> None:
    cluster = await start_cluster("primary", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    await produce(cluster.bootstrap, TOPIC, 2)
    answer = await _fetch_v19(cluster, sent)
    assert ErrorCode(int(answer.error_code)) == ErrorCode.NONE
    assert int(answer.mirror_leader_epoch) == -1
    assert len(list(iter_batches(bytes(answer.records)))) >= 1
