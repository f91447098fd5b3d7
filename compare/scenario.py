"""One workload, three copies, one failover each: cluster mirroring, MM2-style, legacy MM.

Each mode copies the source cluster ``primary`` into its own destination cluster, so
topic names never collide. Then, per mode: fail over (mirroring: RemoveTopicsFromMirror;
the others: stop the replicator), find where the group resumes, write
``failback_records`` new records on the destination, and account for what failing back
costs. Mirroring's failback is run for real (the old source mirrors the new one and
copies only the delta after truncating to the last mirrored epoch); MM2 and legacy MM
have no common-prefix protocol, so the old source topic is rebuilt from the whole
destination topic, whose size is what they re-send.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.broker.log.partition_log import PartitionLog
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import TopicPartition
from mirrorsim.compare.legacy_mm import LegacyMirrorMaker, LegacyMirrorMakerConfig
from mirrorsim.compare.mm2 import MM2Config, MM2Replicator, OffsetTranslation
from mirrorsim.compare.mm2_records import Checkpoint
from mirrorsim.compare.outcome import (
    ModeOutcome,
    PartitionOutcome,
    TranslationOutcome,
    read_offsets_by_value,
    resume_offsets,
    topic_id,
)
from mirrorsim.compare.recompression import recompression_cpu_seconds
from mirrorsim.compare.workload import Workload, produce_records, produce_workload

MIRROR = "compare-mirror"
CLUSTER_CONFIGS = {
    "mirror.topic.num.partitions": 3,
    "mirror.fetch.max.wait.ms": 50,
    "mirror.metadata.refresh.interval.ms": 200,
}
POLL_S = 0.02


@dataclass(frozen=True, slots=True)
class ComparisonSettings:
    workload: Workload = field(default_factory=Workload)
    offset_lag_max: int = 100
    offset_translation: OffsetTranslation = "offset-sync"
    failback_records: int = 100
    timeout_s: float = 60.0


@asynccontextmanager
async def running_cluster(name: str, data_dir: Path) -> AsyncIterator[ClusterRunner]:
    runner = ClusterRunner(
        ClusterSpec(name=name, data_dir=data_dir / name, configs=CLUSTER_CONFIGS)
    )
    await runner.start()
    try:
        yield runner
    finally:
        await runner.stop()


async def run_comparison(settings: ComparisonSettings, data_dir: Path) -> list[ModeOutcome]:
    async with AsyncExitStack() as stack:
        source = await stack.enter_async_context(running_cluster("primary", data_dir))
        await produce_workload(source.bootstrap, settings.workload)
        cpu = recompression_cpu_seconds(source, settings.workload)
        mirror_dest = await stack.enter_async_context(running_cluster("backup", data_dir))
        mm2_dest = await stack.enter_async_context(running_cluster("backup-mm2", data_dir))
        legacy_dest = await stack.enter_async_context(running_cluster("backup-legacy", data_dir))
        # Mirroring goes last: its failback writes the delta back into the source.
        mm2 = await _mm2(source, mm2_dest, settings)
        legacy = await _legacy(source, legacy_dest, settings)
        mirroring = await _mirroring(source, mirror_dest, settings)
    mm2.recompression_cpu_seconds = legacy.recompression_cpu_seconds = cpu
    return [mirroring, mm2, legacy]


async def _until(predicate: Callable[[], Awaitable[bool]], timeout_s: float, what: str) -> None:
    try:
        async with asyncio.timeout(timeout_s):
            while not await predicate():
                await asyncio.sleep(POLL_S)
    except TimeoutError:
        raise TimeoutError(f"no {what} within {timeout_s}s") from None


async def _fill_outcome(
    outcome: ModeOutcome,
    source: ClusterRunner,
    destination: ClusterRunner,
    settings: ComparisonSettings,
) -> None:
    w = settings.workload
    source_map = await read_offsets_by_value(source.bootstrap, w.topic, w.partitions)
    target_map = await read_offsets_by_value(
        destination.bootstrap, outcome.target_topic, w.partitions
    )
    resume = await resume_offsets(
        destination.bootstrap, w.group, outcome.target_topic, w.partitions
    )
    outcome.offsets_preserved = all(
        target_map[p].get(v) == o for p in range(w.partitions) for v, o in source_map[p].items()
    )
    outcome.missing_records = sum(
        v not in target_map[p] for p in range(w.partitions) for v in source_map[p]
    )
    outcome.topic_name_preserved = outcome.target_topic == w.topic
    outcome.topic_id_preserved = await topic_id(source.bootstrap, w.topic) == await topic_id(
        destination.bootstrap, outcome.target_topic
    )
    by_offset = [{o: v for v, o in source_map[p].items()} for p in range(w.partitions)]
    for p in range(w.partitions):
        first_unconsumed = by_offset[p][w.committed_offset]
        outcome.partitions.append(
            PartitionOutcome(p, w.committed_offset, target_map[p][first_unconsumed], resume[p])
        )


async def _mirroring(
    source: ClusterRunner, destination: ClusterRunner, settings: ComparisonSettings
) -> ModeOutcome:
    w = settings.workload
    outcome = ModeOutcome("cluster mirroring", w.topic)
    started = time.monotonic()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [w.topic])).all()

        async def caught_up() -> bool:
            ends = await admin.list_offsets(
                {TopicPartition(w.topic, p): -1 for p in range(w.partitions)}
            )
            groups = await admin.list_consumer_group_offsets(w.group)
            return (
                all(i.offset == w.records_per_partition for i in ends.values())
                and len(groups) == w.partitions
            )

        await _until(caught_up, settings.timeout_s, "mirror caught up and group synced")
        outcome.replicate_seconds = time.monotonic() - started
        outcome.records_copied = w.partitions * (w.records_per_partition - w.log_start_offset)
        failover_started = time.monotonic()
        (await admin.remove_topics_from_mirror(MIRROR, [w.topic])).all()

        async def stopped() -> bool:
            described = (await admin.describe_mirrors([MIRROR]))[MIRROR].partitions
            return len(described) == w.partitions and all(d.state == "STOPPED" for d in described)

        await _until(stopped, settings.timeout_s, "mirror partitions STOPPED")
        outcome.failover_seconds = time.monotonic() - failover_started
    await _fill_outcome(outcome, source, destination, settings)
    await _write_after_failover(destination, w.topic, settings)
    outcome.failback_bytes = await _mirror_failback(source, destination, settings)
    outcome.failback_basis = "measured: bytes the old source appended while mirroring back"
    return outcome


async def _mirror_failback(
    old_source: ClusterRunner, new_source: ClusterRunner, settings: ComparisonSettings
) -> int:
    w = settings.workload
    logs = [_log(old_source, w.topic, p) for p in range(w.partitions)]
    ends_before = [log.log_end_offset for log in logs]
    wanted = [_log(new_source, w.topic, p).log_end_offset for p in range(w.partitions)]
    async with Admin(bootstrap=old_source.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": new_source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [w.topic])).all()

    async def converged() -> bool:
        return [log.log_end_offset for log in logs] == wanted

    await _until(converged, settings.timeout_s, "failback converged")
    return sum(
        b.size
        for log, end in zip(logs, ends_before, strict=True)
        for b in log.batches()
        if b.base_offset >= end - 1
    )


async def _mm2(
    source: ClusterRunner, destination: ClusterRunner, settings: ComparisonSettings
) -> ModeOutcome:
    config = MM2Config(
        source_alias=source.name,
        target_alias=destination.name,
        source_bootstrap=source.bootstrap,
        target_bootstrap=destination.bootstrap,
        topics=settings.workload.topic,
        offset_lag_max=settings.offset_lag_max,
        offset_translation=settings.offset_translation,
    )
    async with MM2Replicator(config) as mm2:
        outcome = ModeOutcome("MM2-style", mm2.remote_topic(settings.workload.topic))
        started = time.monotonic()
        stats = await mm2.replicate_until_caught_up(settings.timeout_s)
        outcome.replicate_seconds = time.monotonic() - started
        failover_started = time.monotonic()
        translated = await mm2.emit_checkpoints()
        outcome.failover_seconds = time.monotonic() - failover_started
        outcome.records_copied = stats.records
    await _rebuild_failback(outcome, source, destination, settings)
    log_starts = [
        _log(destination, outcome.target_topic, p).log_start_offset
        for p in range(settings.workload.partitions)
    ]
    by_method = {"offset-sync": translated.checkpoints}
    if settings.offset_translation == "timestamp":
        by_method["timestamp"] = translated.committed_by_timestamp
    outcome.translations = [
        _translation_outcome(
            method,
            found,
            outcome,
            log_starts,
            settings.workload.group,
            committed=method == settings.offset_translation,
        )
        for method, found in by_method.items()
    ]
    return outcome


def _translation_outcome(
    method: str,
    translated: list[Checkpoint],
    outcome: ModeOutcome,
    log_starts: list[int],
    group: str,
    *,
    committed: bool,
) -> TranslationOutcome:
    """The group resumes at its translated offset, or at the log start without one."""
    found = {c.partition: c.downstream_offset for c in translated if c.group == group}
    resume = [found.get(p.partition, log_starts[p.partition]) for p in outcome.partitions]
    expected = [p.expected_target_offset for p in outcome.partitions]
    return TranslationOutcome(
        method,
        resume,
        sum(max(0, e - r) for e, r in zip(expected, resume, strict=True)),
        sum(max(0, r - e) for e, r in zip(expected, resume, strict=True)),
        committed,
    )


async def _legacy(
    source: ClusterRunner, destination: ClusterRunner, settings: ComparisonSettings
) -> ModeOutcome:
    config = LegacyMirrorMakerConfig(
        source_bootstrap=source.bootstrap,
        target_bootstrap=destination.bootstrap,
        whitelist=settings.workload.topic,
    )
    outcome = ModeOutcome("legacy MirrorMaker", settings.workload.topic)
    async with LegacyMirrorMaker(config) as mm:
        started = time.monotonic()
        stats = await mm.mirror_until_caught_up(settings.timeout_s)
        outcome.replicate_seconds = time.monotonic() - started
        outcome.records_copied = stats.records
    return await _rebuild_failback(outcome, source, destination, settings)


async def _rebuild_failback(
    outcome: ModeOutcome,
    source: ClusterRunner,
    destination: ClusterRunner,
    settings: ComparisonSettings,
) -> ModeOutcome:
    await _fill_outcome(outcome, source, destination, settings)
    await _write_after_failover(destination, outcome.target_topic, settings)
    outcome.failback_bytes = sum(
        _log(destination, outcome.target_topic, p).size_in_bytes
        for p in range(settings.workload.partitions)
    )
    outcome.failback_basis = "size of the whole destination topic (full re-mirror)"
    return outcome


async def _write_after_failover(
    destination: ClusterRunner, topic: str, settings: ComparisonSettings
) -> None:
    """Applications now write to the destination: the delta a failback must carry back."""
    await produce_records(
        destination.bootstrap, topic, settings.workload, settings.failback_records
    )


def _log(cluster: ClusterRunner, topic: str, partition: int) -> PartitionLog:
    return cluster.brokers[0].replica_manager.partition(topic, partition).log
