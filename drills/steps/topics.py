"""Steps on topics: create them, advance the log start (retention), record offsets."""

from __future__ import annotations

from typing import Any

from mirrorsim.client.admin_types import NewTopic, OffsetSpec, TopicPartition
from mirrorsim.drills.context import DrillContext
from mirrorsim.drills.polling import wait_until


async def create_topics(ctx: DrillContext, cluster: str, topics: list[dict[str, Any]]) -> None:
    """Each topic: ``{name, partitions: 1, replication_factor: -1, configs: {},
    compacted: false, assignments: {partition: [broker ids]}}``; ``compacted`` sets
    ``cleanup.policy=compact``; ``assignments`` places the replicas (then the partition
    count and replication factor come from it)."""
    new = []
    for topic in topics:
        configs = {k: str(v) for k, v in (topic.get("configs") or {}).items()}
        if topic.get("compacted"):
            configs["cleanup.policy"] = "compact"
        assignments = {
            int(p): [int(r) for r in replicas]
            for p, replicas in (topic.get("assignments") or {}).items()
        }
        new.append(
            NewTopic(
                topic["name"],
                -1 if assignments else int(topic.get("partitions", 1)),
                -1 if assignments else int(topic.get("replication_factor", -1)),
                configs,
                assignments or None,
            )
        )
    async with ctx.cluster(cluster).admin() as admin:
        (await admin.create_topics(new)).all()
        names = [t.name for t in new]
        await wait_until(
            lambda: _all_led(admin, names), 30, f"leaders for {', '.join(names)} on {cluster}"
        )
    ctx.mark("topics created", f"{cluster}: {', '.join(t.name for t in new)}")


async def _all_led(admin: Any, names: list[str]) -> bool:
    described = await admin.describe_topics(names)
    return all(p.leader_id >= 0 for t in described.values() for p in t.partitions)


async def delete_records(
    ctx: DrillContext, cluster: str, topic: str, before: int, partition: int = 0
) -> None:
    """Advance the log start offset to ``before``, as retention deleting old segments does."""
    async with ctx.cluster(cluster).admin() as admin:
        low = await admin.delete_records({TopicPartition(topic, partition): before})
    ctx.mark("log start advanced", f"{cluster} {topic}-{partition} -> {low}")


async def partition_offsets(
    ctx: DrillContext, cluster: str, topics: list[str]
) -> dict[str, dict[str, int]]:
    """``{"orders-0": {"log_start": .., "log_end": ..}}`` through ListOffsets."""
    async with ctx.cluster(cluster).admin() as admin:
        described = await admin.describe_topics(topics)
        partitions = [
            TopicPartition(name, p.partition) for name, t in described.items() for p in t.partitions
        ]
        earliest = await admin.list_offsets({tp: OffsetSpec.EARLIEST for tp in partitions})
        latest = await admin.list_offsets({tp: OffsetSpec.LATEST for tp in partitions})
    return {
        f"{tp.topic}-{tp.partition}": {
            "log_start": earliest[tp].offset,
            "log_end": latest[tp].offset,
        }
        for tp in partitions
    }


async def record_offsets(ctx: DrillContext, cluster: str, topics: list[str]) -> None:
    """Results ``offsets.<cluster>.<topic-partition>.log_start|log_end|bytes`` (bytes:
    the size of the leader's log)."""
    for key, value in (await partition_offsets(ctx, cluster, topics)).items():
        topic, _, partition = key.rpartition("-")
        log = await ctx.cluster(cluster).log_view(topic, int(partition))
        ctx.record_in("offsets", cluster, key, {**value, "bytes": log.size_in_bytes})


STEPS = {
    "create_topics": create_topics,
    "delete_records": delete_records,
    "record_offsets": record_offsets,
}
