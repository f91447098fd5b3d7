"""Failover (remove topics from the mirror) and failback (mirror back the other way)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.mirrors import (
    MIRROR,
    MIRROR_CONFIGS,
    batches_of,
    broker_of,
    mirror_state,
    mirrored_up_to,
    partition_log,
    produce,
    produce_error_code,
)
from helpers.replication import restart, stop

from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.cluster import ClusterClient
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.records import (
    MirrorPidReset,
    RawBatch,
    decode_control_batch,
)


def _fingerprint(batch: RawBatch) -> tuple[int, int, int, bytes]:
    return batch.base_offset, batch.last_offset, batch.partition_leader_epoch, bytes(batch.data)


async def _mirror(admin_bootstrap: str, source_bootstrap: str, topics: list[str]) -> None:
    async with Admin(bootstrap=admin_bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source_bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, topics)).all()


async def _fail_over(cluster: Any, topic: str, wait_for: Any) -> None:
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, [topic])).all()
    await wait_for(lambda: mirror_state(cluster, topic, 0) == "STOPPED", timeout=20)


async def _leader_epoch(bootstrap: str, topic: str) -> int:
    async with ClusterClient(bootstrap, client_id="mirror-test") as client:
        view = await client.refresh_metadata([topic])
    return view.topics[topic].partitions[0].leader_epoch


async def test_failover_makes_the_topic_writable_after_a_pid_reset(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
    await produce(source.bootstrap, "orders", 5)
    await _mirror(destination.bootstrap, source.bootstrap, ["orders"])
    await wait_for(lambda: mirrored_up_to(source, destination, "orders", 0), timeout=20)
    assert await _leader_epoch(destination.bootstrap, "orders") == 0

    await _fail_over(destination, "orders", wait_for)

    assert await _leader_epoch(destination.bootstrap, "orders") == 1
    last = batches_of(destination, "orders", 0)[-1]
    assert last.is_control and last.partition_leader_epoch == 1
    reset = decode_control_batch(last)
    assert reset == MirrorPidReset(source.cluster_id)
    assert await produce_error_code(destination.bootstrap, "orders") == ErrorCode.NONE
    assert batches_of(destination, "orders", 0)[-1].partition_leader_epoch == 1
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (partition,) = (await admin.describe_mirrors([MIRROR]))[MIRROR].partitions
    assert (partition.state, partition.last_mirror_epoch) == ("STOPPED", 0)


@pytest.mark.parametrize("old_source_bumps_its_epoch", [True, False])
async def test_failback_truncates_the_divergent_tail_and_copies_only_the_delta(
    start_cluster: Any, wait_for: Any, old_source_bumps_its_epoch: bool
) -> None:
    """Spec "Log Convergence" scenario B, with and without an epoch bump on the old source.

    With the bump the LME truncation cuts the old source's tail; without it both logs
    share epoch 0 and the fetch's diverging epoch cuts it at the exact offset.
    """
    a = await start_cluster("primary", configs=MIRROR_CONFIGS)
    b = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=a.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
    await produce(a.bootstrap, "orders", 4)
    await _mirror(b.bootstrap, a.bootstrap, ["orders"])
    await wait_for(lambda: mirrored_up_to(a, b, "orders", 0), timeout=20)
    shared = [_fingerprint(x) for x in batches_of(a, "orders", 0)]
    await _fail_over(b, "orders", wait_for)
    failover_end = partition_log(b, "orders", 0).log_end_offset
    await produce(b.bootstrap, "orders", 2, tag="written-on-b")

    if old_source_bumps_its_epoch:
        broker_a = broker_of(a)
        current = broker_a.snapshot.topics["orders"].partitions[0]
        bumped = PartitionAssignment(0, current.replicas, current.leader, 1, current.isr)
        await asyncio.to_thread(broker_a.store.update_partition, "orders", bumped)
        await broker_a.refresh_metadata()
    await produce(a.bootstrap, "orders", 3, tag="lost-on-a")
    divergent = [b2.base_offset for b2 in batches_of(a, "orders", 0)][len(shared) :]
    assert divergent and divergent[0] == failover_end - 1

    appended: list[int] = []
    mirrors_a = broker_of(a).mirrors
    real_append = mirrors_a.append

    def counting_append(topic: str, partition: int, batches: list[RawBatch]) -> None:
        appended.extend(x.base_offset for x in batches)
        real_append(topic, partition, batches)

    mirrors_a.append = counting_append
    await _mirror(a.bootstrap, b.bootstrap, ["orders"])
    on_b = [_fingerprint(x) for x in batches_of(b, "orders", 0)]
    await wait_for(
        lambda: [_fingerprint(x) for x in batches_of(a, "orders", 0)] == on_b, timeout=20
    )
    assert on_b[: len(shared)] == shared
    assert appended == [x[0] for x in on_b[len(shared) :]]
    assert appended[0] == failover_end - 1


async def test_a_failover_after_a_restart_while_the_source_is_down_names_the_stored_source(
    start_cluster: Any, wait_for: Any
) -> None:
    """The restarted leader never connects to the source, yet MIRROR_PID_RESET carries the
    source cluster id stored when the mirror first connected (it was empty)."""
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
    await produce(source.bootstrap, "orders", 5)
    await _mirror(destination.bootstrap, source.bootstrap, ["orders"])
    await wait_for(lambda: mirrored_up_to(source, destination, "orders", 0), timeout=20)
    source_cluster_id = source.cluster_id
    await stop(source, broker_of(source).broker_id)
    broker_id = broker_of(destination).broker_id
    await stop(destination, broker_id)
    await restart(destination, broker_id)
    await wait_for(lambda: mirror_state(destination, "orders", 0) == "MIRRORING", timeout=20)

    await _fail_over(destination, "orders", wait_for)

    last = batches_of(destination, "orders", 0)[-1]
    assert last.is_control
    assert decode_control_batch(last) == MirrorPidReset(source_cluster_id)


async def test_mirroring_a_topic_back_while_its_failback_runs_is_refused_as_a_cycle(
    start_cluster: Any, wait_for: Any
) -> None:
    """After a failover to b and a failback mirror on a, adding the topic on b back to its
    mirror from a would mirror it both ways at once, which the spec does not support: the
    add is refused with INVALID_REQUEST, and b keeps what it acknowledged. Once a stops
    its copy, the same add goes ahead (the end of a failback)."""
    a = await start_cluster("primary", configs=MIRROR_CONFIGS)
    b = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=a.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
    await produce(a.bootstrap, "orders", 4)
    await _mirror(b.bootstrap, a.bootstrap, ["orders"])
    await wait_for(lambda: mirrored_up_to(a, b, "orders", 0), timeout=20)
    await _fail_over(b, "orders", wait_for)
    await produce(b.bootstrap, "orders", 2, tag="written-on-b")
    on_b = [_fingerprint(x) for x in batches_of(b, "orders", 0)]
    await _mirror(a.bootstrap, b.bootstrap, ["orders"])
    await wait_for(lambda: mirror_state(a, "orders", 0) == "MIRRORING", timeout=20)

    async with Admin(bootstrap=b.bootstrap) as admin:
        result = await admin.add_topics_to_mirror(MIRROR, ["orders"])
    with pytest.raises(KafkaError) as refused:
        result.all()
    assert refused.value.code == ErrorCode.INVALID_REQUEST
    assert "cycle" in str(refused.value)
    assert mirror_state(b, "orders", 0) == "STOPPED"
    assert [_fingerprint(x) for x in batches_of(b, "orders", 0)] == on_b

    await _fail_over(a, "orders", wait_for)
    async with Admin(bootstrap=b.bootstrap) as admin:
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()
    await wait_for(lambda: mirror_state(b, "orders", 0) == "MIRRORING", timeout=20)
