"""Checking steps: read a topic back (loss, visibility, live keys) and the Spark
convergence verification over both clusters' segment files."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from mirrorsim.drills.context import DrillContext
from mirrorsim.drills.polling import wait_until
from mirrorsim.drills.workloads import value_id

SPARK_MASTER = "local[2]"
LOST_SAMPLE = 10


async def read_all(
    ctx: DrillContext, cluster: str, topic: str, isolation_level: str, timeout: float = 60.0
) -> list[tuple[bytes | None, bytes | None]]:
    """Every (key, value) of ``topic`` from the log start to its end, partition by
    partition (the end is the LSO under read_committed)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=ctx.cluster(cluster).bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level=isolation_level,
    )
    await consumer.start()
    try:
        async with ctx.cluster(cluster).admin() as admin:
            described = (await admin.describe_topics([topic]))[topic]
        assigned = [TopicPartition(topic, p.partition) for p in described.partitions]
        consumer.assign(assigned)
        await consumer.seek_to_beginning(*assigned)
        ends = await consumer.end_offsets(assigned)
        records: list[tuple[bytes | None, bytes | None]] = []

        async def drained() -> bool:
            for _tp, messages in (await consumer.getmany(timeout_ms=200)).items():
                records.extend((m.key, m.value) for m in messages)
            positions = [await consumer.position(tp) for tp in assigned]
            return all(pos >= ends[tp] for pos, tp in zip(positions, assigned, strict=True))

        if any(ends.values()):
            await wait_until(drained, timeout, f"reading {topic} on {cluster} to its end")
        return records
    finally:
        await consumer.stop()


async def audit(ctx: DrillContext, cluster: str, topics: list[str], timeout: float = 60.0) -> None:
    """Compare the ledger with what ``cluster`` holds now. Results: ``records_acked``
    (distinct acknowledged records of these topics), ``records_present``,
    ``records_lost`` and ``lost_sample``."""
    present: set[str] = set()
    for topic in topics:
        for _, value in await read_all(ctx, cluster, topic, "read_uncommitted", timeout):
            present.add(value_id(value))
    acked = {a.value for a in ctx.acks if a.topic in topics}
    lost = sorted(acked - present)
    ctx.record("records_acked", len(acked))
    ctx.record("records_present", len(acked & present))
    ctx.record("records_lost", len(lost))
    ctx.record("lost_sample", lost[:LOST_SAMPLE])
    ctx.mark("audit", f"{cluster}: {len(lost)} of {len(acked)} acknowledged records lost")


async def read_topic(
    ctx: DrillContext,
    cluster: str,
    topic: str,
    isolation_level: str = "read_committed",
    label: str | None = None,
    timeout: float = 60.0,
) -> None:
    """Results ``values.<label>.<topic>`` (value ids in log order) and
    ``live_keys.<label>.<topic>`` (keys whose latest record is not a tombstone);
    ``label`` defaults to the cluster name."""
    records = await read_all(ctx, cluster, topic, isolation_level, timeout)
    latest: dict[str, bytes | None] = {}
    for key, value in records:
        if key is not None:
            latest[key.decode()] = value
    name = label or cluster
    ctx.record_in("values", name, topic, [value_id(v) for _, v in records if v is not None])
    ctx.record_in("live_keys", name, topic, sorted(k for k, v in latest.items() if v))
    ctx.mark("topic read", f"{cluster}/{topic} ({isolation_level}): {len(records)} records")


async def verify(
    ctx: DrillContext,
    source: str,
    destination: str,
    topics: list[str],
    source_broker: int = 1,
    destination_broker: int = 1,
    level: str = "batch",
    stop_offsets: bool = True,
) -> None:
    """Spark convergence job over one broker's data dir of each cluster, with the stop
    offsets recorded at failover (``stop_offsets: false`` checks a failback mirror, whose
    destination must hold its source's records even past them). Results
    ``verification.converged``, counts and ``verification.first_unexpected.<tp>``."""
    from mirrorsim.verify.job import read_segments, verify_logs
    from mirrorsim.verify.segments import TopicPartition as SegmentPartition
    from mirrorsim.verify.session import verification_session

    pattern = "|".join(re.escape(t) for t in topics)
    stops = {
        SegmentPartition.parse(key): int(offset)
        for key, offset in ctx.results.get("stop_offsets", {}).items()
        if stop_offsets and key.rpartition("-")[0] in topics
    }
    source_dir = str(ctx.cluster(source).broker_data_dir(source_broker))
    destination_dir = str(ctx.cluster(destination).broker_data_dir(destination_broker))
    ctx.mark("verification", f"{source} -> {destination} ({level})")

    def run() -> Any:
        spark = verification_session(SPARK_MASTER, app_name="mirrorsim-drill")
        return verify_logs(
            read_segments(spark, source_dir, level=level, topic=pattern),
            read_segments(spark, destination_dir, level=level, topic=pattern),
            level=level,
            stop_offsets=stops,
        )

    report = await asyncio.to_thread(run)
    ctx.record(
        "verification",
        {
            "converged": report.converged,
            "unexpected_divergences": report.unexpected_divergences,
            "expected_divergences": report.expected_divergences,
            "partitions": {
                f"{p['topic']}-{p['partition']}": p["status"] for p in report.partitions
            },
            "first_unexpected": {
                f"{p['topic']}-{p['partition']}": p["first_unexpected_offset"]
                for p in report.partitions
            },
        },
    )
    ctx.results["_verification_report"] = report.to_dict()
    verdict = "converged" if report.converged else "NOT converged"
    ctx.mark("verified", f"{verdict}: {report.unexpected_divergences} unexpected")


STEPS = {
    "audit": audit,
    "read_topic": read_topic,
    "verify": verify,
}
