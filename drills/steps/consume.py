"""Consumer-group and share-group steps: start, stop, move, wait until caught up, and
committed offsets (including waiting for the mirror's group-offset sync)."""

from __future__ import annotations

from typing import Any

from mirrorsim.drills.confluent_workloads import (
    ConsumerProtocolWorkload,
    ShareConsumerWorkload,
    confluent_kafka,
)
from mirrorsim.drills.context import Ack, DrillContext
from mirrorsim.drills.polling import wait_until
from mirrorsim.drills.workloads import AioConsumerWorkload, ConsumerSpec, ConsumerWorkload

GROUP_PROTOCOLS = ("classic", "consumer")


async def consume(
    ctx: DrillContext,
    name: str,
    cluster: str,
    topics: list[str],
    group: str | None = None,
    auto_offset_reset: str = "earliest",
    isolation_level: str = "read_uncommitted",
    group_protocol: str = "classic",
) -> None:
    """Start a consumer-group member in the background; it records every record seen.
    ``group_protocol: consumer`` makes it a KIP-848 member (confluent-kafka), ``classic``
    an aiokafka one."""
    if group_protocol not in GROUP_PROTOCOLS:
        raise ValueError(f"group_protocol must be one of {', '.join(GROUP_PROTOCOLS)}")
    spec = ConsumerSpec(
        name, cluster, tuple(topics), group or name, auto_offset_reset, isolation_level
    )
    workload: ConsumerWorkload[Any]
    if group_protocol == "consumer":
        confluent_kafka()
        workload = ConsumerProtocolWorkload(ctx, spec)
    else:
        workload = AioConsumerWorkload(ctx, spec)
    _start(ctx, workload)


async def share_consume(
    ctx: DrillContext,
    name: str,
    cluster: str,
    topics: list[str],
    group: str | None = None,
    auto_offset_reset: str = "earliest",
) -> None:
    """Start a share group member (confluent-kafka's ShareConsumer) in the background: it
    accepts every record and records it. ``auto_offset_reset`` becomes the group's
    ``share.auto.offset.reset`` on each cluster it connects to."""
    confluent_kafka()
    spec = ConsumerSpec(name, cluster, tuple(topics), group or name, auto_offset_reset)
    _start(ctx, ShareConsumerWorkload(ctx, spec))


def _start(ctx: DrillContext, workload: ConsumerWorkload[Any]) -> None:
    ctx.consumers[workload.spec.name] = workload
    workload.start()
    ctx.mark("consumer started", f"{workload.spec.name} on {workload.cluster}")


async def stop_consumer(ctx: DrillContext, name: str) -> None:
    await ctx.consumers[name].stop()
    ctx.mark("consumer stopped", name)


async def start_consumer(ctx: DrillContext, name: str, cluster: str | None = None) -> None:
    workload = ctx.consumers[name]
    if cluster is not None and cluster != workload.cluster:
        workload.move(cluster)
    workload.start()
    ctx.mark("consumer started", f"{name} on {workload.cluster}")


async def move_consumer(ctx: DrillContext, name: str, cluster: str) -> None:
    ctx.consumers[name].move(cluster)
    ctx.mark("consumer moved", f"{name} -> {cluster}")


async def wait_consumed(
    ctx: DrillContext, name: str, workloads: list[str] | None = None, timeout: float = 60.0
) -> None:
    """Wait until the consumer has seen every acknowledged record of its topics (of the
    named producer workloads, or all) in its current cluster's ledger that it can be
    delivered. A moved consumer resumes each partition at the group's synced offset,
    which may lie past the new cluster's log end at failover (the spec allows it); the
    records written there below that offset are never delivered, so they are counted in
    ``skipped.<name>`` rather than waited for."""
    consumer = ctx.consumers[name]

    def ledger() -> list[Ack]:
        return [
            a
            for a in ctx.acks
            if a.topic in consumer.spec.topics
            and (workloads is None or a.workload in workloads)
            and a.cluster == consumer.cluster
        ]

    def deliverable(ack: Ack) -> bool:
        resumed = consumer.resumed_at.get(f"{ack.topic}-{ack.partition}")
        return resumed is None or ack.offset >= resumed

    def caught_up() -> bool:
        seen = {s.value for s in consumer.seen}
        return all(a.value in seen for a in ledger() if deliverable(a))

    await wait_until(caught_up, timeout, f"consumer {name} caught up")
    seen = {s.value for s in consumer.seen}
    skipped = [a for a in ledger() if not deliverable(a) and a.value not in seen]
    ctx.record_in("skipped", name, len(skipped))


async def wait_consumer_ready(ctx: DrillContext, name: str, timeout: float = 60.0) -> None:
    """Wait until the member has partitions and a position in each (after any offset
    reset); results ``positions.<name>.<topic-partition>``."""
    consumer = ctx.consumers[name]
    positions = await wait_until(lambda: consumer.positions, timeout, f"consumer {name} positioned")
    for key, offset in positions.items():
        ctx.record_in("positions", name, key, offset)
    ctx.mark("consumer ready", f"{name}: {positions}")


async def committed_offsets(ctx: DrillContext, cluster: str, group: str) -> dict[str, int]:
    async with ctx.cluster(cluster).admin() as admin:
        found = await admin.list_consumer_group_offsets(group)
    return {f"{tp.topic}-{tp.partition}": meta.offset for tp, meta in found.items()}


async def record_committed(ctx: DrillContext, cluster: str, group: str) -> None:
    """Results ``committed.<cluster>.<group>.<topic-partition>``."""
    for key, offset in (await committed_offsets(ctx, cluster, group)).items():
        ctx.record_in("committed", cluster, group, key, offset)


async def wait_group_synced(
    ctx: DrillContext, group: str, source: str, destination: str, timeout: float = 60.0
) -> None:
    """Wait until the destination holds the group's committed offsets of the source."""

    async def synced() -> bool:
        wanted = await committed_offsets(ctx, source, group)
        return bool(wanted) and await committed_offsets(ctx, destination, group) == wanted

    await wait_until(synced, timeout, f"group {group} offsets synced {source} -> {destination}")
    ctx.mark("group offsets synced", f"{group} {source} -> {destination}")


STEPS = {
    "consume": consume,
    "share_consume": share_consume,
    "stop_consumer": stop_consumer,
    "start_consumer": start_consumer,
    "move_consumer": move_consumer,
    "wait_consumed": wait_consumed,
    "wait_consumer_ready": wait_consumer_ready,
    "record_committed": record_committed,
    "wait_group_synced": wait_group_synced,
}
