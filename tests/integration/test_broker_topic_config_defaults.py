"""Broker-level topic-config defaults reach the partitions: min.insync.replicas on the
produce path and message.max.bytes in the log, static and changed dynamically."""

from __future__ import annotations

from typing import Any

from helpers.broker_configs import FAST
from helpers.replication import broker, produce, stop

from mirrorsim.broker.metadata.alter_ops import AlterConfigOp
from mirrorsim.broker.metadata.store import CLUSTER_DEFAULT
from mirrorsim.broker.server import Broker
from mirrorsim.protocol.acl import AlterConfigOpType
from mirrorsim.protocol.errors import ErrorCode


async def produce_one(target: Broker, topic: str, value: bytes, *, acks: int = -1) -> ErrorCode:
    """One Produce v9 of a one-record batch to partition 0, straight to ``target``."""
    code, _ = await produce(target, [value], acks=acks, topic=topic)
    return code


async def test_broker_min_insync_replicas_refuses_acks_all_with_one_live_replica(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs={**FAST, "min.insync.replicas": 2})
    leader = broker(cluster, 1)
    await leader.controller.create_topic("no-override", assignments={0: [1, 2, 3]})
    await wait_for(lambda: leader.replica_manager.partition("no-override", 0).is_leader)
    partition = leader.replica_manager.partition("no-override", 0)
    assert partition.state.min_insync_replicas() == 2
    assert await produce_one(leader, "no-override", b"three in sync") == ErrorCode.NONE

    await stop(cluster, 3)
    await stop(cluster, 2)
    await wait_for(lambda: partition.state.isr == (1,), timeout=10, message="ISR is the leader")
    assert await produce_one(leader, "no-override", b"refused") == ErrorCode.NOT_ENOUGH_REPLICAS
    assert await produce_one(leader, "no-override", b"acks=1", acks=1) == ErrorCode.NONE

    await leader.controller.alter_broker_configs(
        CLUSTER_DEFAULT, [AlterConfigOp("min.insync.replicas", AlterConfigOpType.SET, "1")]
    )
    assert partition.state.min_insync_replicas() == 1
    assert await produce_one(leader, "no-override", b"accepted") == ErrorCode.NONE


async def test_broker_message_max_bytes_bounds_batches_until_changed(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(configs={"message.max.bytes": 1000})
    target = cluster.brokers[0]
    await target.controller.create_topic("plain", num_partitions=1, replication_factor=1)
    await target.controller.create_topic(
        "overridden",
        num_partitions=1,
        replication_factor=1,
        configs={"max.message.bytes": "100000"},
    )
    big = b"x" * 2000
    assert await produce_one(target, "plain", big) == ErrorCode.MESSAGE_TOO_LARGE
    assert await produce_one(target, "plain", b"small") == ErrorCode.NONE
    assert await produce_one(target, "overridden", big) == ErrorCode.NONE

    await target.controller.alter_broker_configs(
        str(target.broker_id), [AlterConfigOp("message.max.bytes", AlterConfigOpType.SET, "100000")]
    )
    assert target.replica_manager.partition("plain", 0).log.config.max_message_bytes == 100000
    assert await produce_one(target, "plain", big) == ErrorCode.NONE

    await target.controller.alter_broker_configs(
        str(target.broker_id), [AlterConfigOp("message.max.bytes", AlterConfigOpType.DELETE, None)]
    )
    assert await produce_one(target, "plain", big) == ErrorCode.MESSAGE_TOO_LARGE


async def test_broker_log_configs_reach_the_log(start_cluster: Any) -> None:
    cluster = await start_cluster(
        configs={
            "log.retention.ms": 60_000,
            "log.segment.bytes": 1 << 20,
            "log.cleanup.policy": "compact",
        }
    )
    target = cluster.brokers[0]
    await target.controller.create_topic("logs", num_partitions=1, replication_factor=1)
    config = target.replica_manager.partition("logs", 0).log.config
    assert (config.retention_ms, config.segment_bytes, config.cleanup_policy) == (
        60_000,
        1 << 20,
        "compact",
    )
