"""Mirror steps: create a mirror and add topics, pause, resume, wait for lag or state,
fail over (remove topics from the mirror) and fail back (the reverse mirror with the same
name on the old source).

Failover records what the report needs at that instant: each partition's stop offset
(where the MIRROR_PID_RESET batch of the new epoch starts), its last mirrored epoch, and
the RPO: acknowledged source records at or past the stop offset. Failback records the
bytes its fetchers appended and, per partition, where the old source's log was truncated
(the first batch that is not the same bytes any more).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

from mirrorsim.broker.config import BROKER_CONFIGS
from mirrorsim.client.admin_types import MirrorPartitionDescription
from mirrorsim.drills.clusters import DrillCluster
from mirrorsim.drills.context import Ack, DrillContext, MirrorLink
from mirrorsim.drills.polling import wait_until
from mirrorsim.drills.steps.topics import partition_offsets
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records import RawBatch

SYNC_INTERVAL = "mirror.metadata.refresh.interval.ms"


class AppendedBytes:
    """Bytes the mirror fetchers of a cluster's running brokers hand to their logs.

    Counted where the fetcher appends (the coordinator's ``append``), so that, unlike a
    log size, it also sees a log truncated and copied again byte for byte. Only brokers
    in this process can be counted this way (``counted`` says whether there were any).
    """

    def __init__(self, cluster: DrillCluster) -> None:
        self.bytes = 0
        brokers = cluster.in_process_brokers
        self.counted = bool(brokers)
        for broker in brokers:
            broker.mirrors.append = self._counting(broker.mirrors.append)

    def _counting(self, append: Callable[[str, int, list[RawBatch]], None]) -> Any:
        def counting(topic: str, partition: int, batches: list[RawBatch]) -> None:
            append(topic, partition, batches)
            self.bytes += sum(b.size for b in batches)

        return counting


async def describe_partitions(
    ctx: DrillContext, cluster: str, mirror: str
) -> dict[str, MirrorPartitionDescription]:
    async with ctx.cluster(cluster).admin() as admin:
        described = await admin.describe_mirrors([mirror])
    if mirror not in described:
        return {}
    return {f"{p.topic}-{p.partition}": p for p in described[mirror].partitions}


async def create_mirror(
    ctx: DrillContext,
    cluster: str,
    mirror: str,
    source: str,
    topics: list[str] | None = None,
    configs: dict[str, Any] | None = None,
) -> None:
    """Create ``mirror`` on ``cluster`` pulling from ``source``, then add ``topics``."""
    destination = ctx.cluster(cluster)
    properties = {"bootstrap.servers": ctx.cluster(source).bootstrap}
    properties.update({k: str(v) for k, v in (configs or {}).items()})
    async with destination.admin() as admin:
        await admin.create_mirror(mirror, properties)
    ctx.mirrors[(cluster, mirror)] = MirrorLink(
        mirror, cluster, source, [], AppendedBytes(destination)
    )
    ctx.mark("mirror created", f"{mirror} on {cluster} from {source}")
    if topics:
        await add_topics(ctx, cluster, mirror, topics)


async def add_topics(
    ctx: DrillContext, cluster: str, mirror: str, topics: list[str], timeout: float = 30.0
) -> None:
    """Retried until every topic is in the mirror: a broker that has not yet seen the new
    mirror refuses, and an attempt that timed out on a loaded machine may have added its
    topics all the same, so a retry's TOPIC_ALREADY_IN_MIRROR counts as added once
    DescribeMirrors lists the topic in this mirror (not in another)."""
    pending = list(topics)

    async def added() -> bool:
        async with ctx.cluster(cluster).admin() as admin:
            refused = (await admin.add_topics_to_mirror(mirror, pending)).failed
            if any(e.code == ErrorCode.TOPIC_ALREADY_IN_MIRROR for e in refused.values()):
                described = await admin.describe_mirrors([mirror])
                here = {p.topic for m in described.values() for p in m.partitions}
                refused = {t: e for t, e in refused.items() if t not in here}
        pending[:] = list(refused)
        if refused:
            raise next(iter(refused.values()))
        return True

    await wait_until(added, timeout, f"topics added to {mirror} on {cluster}")
    link = ctx.mirrors[(cluster, mirror)]
    link.topics = sorted(set(link.topics) | set(topics))
    ctx.mark("topics added", f"{mirror} on {cluster}: {', '.join(topics)}")


async def pause(
    ctx: DrillContext,
    cluster: str,
    mirror: str,
    topics: list[str] | None = None,
    timeout: float = 30.0,
) -> None:
    chosen = topics or ctx.mirrors[(cluster, mirror)].topics
    async with ctx.cluster(cluster).admin() as admin:
        (await admin.pause_mirror_topics(mirror, chosen)).all()
    await _wait_states(ctx, cluster, mirror, chosen, {"PAUSED"}, timeout)
    ctx.mark("mirror paused", f"{mirror} on {cluster}: {', '.join(chosen)}")


async def resume(
    ctx: DrillContext,
    cluster: str,
    mirror: str,
    topics: list[str] | None = None,
    timeout: float = 30.0,
) -> None:
    chosen = topics or ctx.mirrors[(cluster, mirror)].topics
    async with ctx.cluster(cluster).admin() as admin:
        (await admin.resume_mirror_topics(mirror, chosen)).all()
    await _wait_states(ctx, cluster, mirror, chosen, {"MIRRORING"}, timeout)
    ctx.mark("mirror resumed", f"{mirror} on {cluster}: {', '.join(chosen)}")


async def _wait_states(
    ctx: DrillContext,
    cluster: str,
    mirror: str,
    topics: Iterable[str],
    states: set[str],
    timeout: float,
) -> dict[str, MirrorPartitionDescription]:
    wanted = set(topics)

    async def reached() -> dict[str, MirrorPartitionDescription] | None:
        partitions = {
            k: p
            for k, p in (await describe_partitions(ctx, cluster, mirror)).items()
            if p.topic in wanted
        }
        covered = {p.topic for p in partitions.values()}
        if covered == wanted and all(p.state in states for p in partitions.values()):
            return partitions
        return None

    return await wait_until(
        reached, timeout, f"{mirror} on {cluster}: {sorted(wanted)} in {sorted(states)}"
    )


async def remove_topics(
    ctx: DrillContext, cluster: str, mirror: str, topics: list[str], timeout: float = 60.0
) -> None:
    """Remove topics from the mirror and wait for STOPPED, without the failover's
    measurements: the spec's restart path for a FAILED partition is to remove the topic
    and add it back."""
    async with ctx.cluster(cluster).admin() as admin:
        (await admin.remove_topics_from_mirror(mirror, topics)).all()
    await _wait_states(ctx, cluster, mirror, topics, {"STOPPED"}, timeout)
    ctx.mark("topics removed", f"{mirror} on {cluster}: {', '.join(topics)}")


async def wait_mirror(
    ctx: DrillContext,
    cluster: str,
    mirror: str,
    max_lag: int = 0,
    state: str = "MIRRORING",
    timeout: float = 60.0,
) -> None:
    """Wait until every partition is in ``state`` and its destination log end is within
    ``max_lag`` of the source's (both read with ListOffsets). Records
    ``mirror_bytes.<cluster>`` and ``lme_while_mirroring.<cluster>.<topic-partition>``
    (the last mirrored epoch DescribeMirrors reports while the partition mirrors)."""
    link = ctx.mirrors[(cluster, mirror)]

    async def caught_up() -> bool:
        source = await partition_offsets(ctx, link.source, link.topics)
        destination = await partition_offsets(ctx, cluster, link.topics)
        return all(
            key in destination and end["log_end"] - destination[key]["log_end"] <= max_lag
            for key, end in source.items()
        )

    partitions = await _wait_states(ctx, cluster, mirror, link.topics, {state}, timeout)
    await wait_until(caught_up, timeout, f"{mirror} on {cluster}: lag <= {max_lag}")
    ctx.record_in("mirror_bytes", cluster, link.appended.bytes if link.appended else 0)
    for key, p in partitions.items():
        ctx.record_in("lme_while_mirroring", cluster, key, p.last_mirror_epoch)
    ctx.mark("mirror caught up", f"{mirror} on {cluster}: lag <= {max_lag}")


async def wait_log_end(
    ctx: DrillContext,
    cluster: str,
    topic: str,
    offset: int,
    partition: int = 0,
    timeout: float = 60.0,
) -> None:
    """Wait until ``topic-partition`` on ``cluster`` ends at ``offset`` or beyond."""
    key = f"{topic}-{partition}"

    async def reached() -> bool:
        offsets = await partition_offsets(ctx, cluster, [topic])
        return offsets[key]["log_end"] >= offset

    await wait_until(reached, timeout, f"{key} on {cluster} reaching offset {offset}")


async def _stop_offset(cluster: DrillCluster, topic: str, partition: int) -> int:
    """Base offset of the MIRROR_PID_RESET batch that opened the writable epoch."""
    log = await cluster.log_view(topic, partition)
    last = log.batches[-1] if log.batches else None
    if last is not None and last.is_control:
        return last.base_offset
    return log.log_end_offset


async def failover(
    ctx: DrillContext,
    cluster: str,
    mirror: str,
    topics: list[str] | None = None,
    move_producers: list[str] | None = None,
    move_consumers: list[str] | None = None,
    probe: bool = False,
    timeout: float = 60.0,
) -> None:
    """Remove the topics from the mirror on ``cluster`` (the destination) and wait for
    STOPPED; then move the named workloads to ``cluster``. ``probe`` writes one record
    per topic to time the first successful produce (RTO) without a moved producer."""
    link = ctx.mirrors[(cluster, mirror)]
    chosen = topics or list(link.topics)
    destination = ctx.cluster(cluster)
    started = ctx.mark("failover", f"{mirror} on {cluster}: {', '.join(chosen)}").time
    async with destination.admin() as admin:
        (await admin.remove_topics_from_mirror(mirror, chosen)).all()
    partitions = await _wait_states(ctx, cluster, mirror, chosen, {"STOPPED"}, timeout)
    ctx.mark("mirror stopped", f"{mirror} on {cluster}")
    stops = {}
    for key, p in partitions.items():
        stops[key] = await _stop_offset(destination, p.topic, p.partition)
        ctx.record_in("stop_offsets", key, stops[key])
        ctx.record_in("last_mirrored_epoch", key, p.last_mirror_epoch)
    lost = [
        a
        for a in ctx.acks
        if a.cluster == link.source
        and a.topic in chosen
        and a.offset >= stops.get(f"{a.topic}-{a.partition}", 0)
    ]
    ctx.record("rpo_records", len(lost))
    ctx.record("rpo_seconds", round(started - min(a.time for a in lost), 3) if lost else 0.0)
    ctx.record("failover_time", round(started, 3))
    ctx.results.setdefault("_failover", {})["moved"] = list(move_producers or [])
    ctx.results["_failover"]["sync_interval_s"] = sync_interval_s(destination)
    for name in move_producers or []:
        ctx.producers[name].move(cluster)
        ctx.mark("producer moved", f"{name} -> {cluster}")
    for name in move_consumers or []:
        ctx.consumers[name].move(cluster)
        ctx.mark("consumer moved", f"{name} -> {cluster}")
    if probe:
        await _probe(ctx, cluster, chosen, started, timeout)


def sync_interval_s(cluster: DrillCluster) -> float:
    """The cluster's ``mirror.metadata.refresh.interval.ms`` in seconds, as the drill
    configured it (or the broker's default)."""
    definition = BROKER_CONFIGS[SYNC_INTERVAL]
    configured = cluster.definition.configs.get(SYNC_INTERVAL, definition.default)
    return float(definition.parse(str(configured))) / 1000


async def _probe(
    ctx: DrillContext, cluster: str, topics: list[str], started: float, timeout: float
) -> None:
    from aiokafka import AIOKafkaProducer

    async def attempt() -> bool:
        producer = AIOKafkaProducer(
            bootstrap_servers=ctx.cluster(cluster).bootstrap, acks="all", request_timeout_ms=2000
        )
        await producer.start()
        try:
            for topic in topics:
                value = f"probe-{topic}"
                meta = await producer.send_and_wait(topic, value.encode(), partition=0)
                ctx.acks.append(
                    Ack("probe", value, cluster, topic, meta.partition, meta.offset, ctx.now())
                )
        finally:
            await producer.stop()
        return True

    await wait_until(attempt, timeout, f"a produce accepted on {cluster}")
    ctx.results.setdefault("_failover", {})["probe_ack"] = ctx.now()
    ctx.record("rto_seconds", round(ctx.now() - started, 3))


async def _fingerprints(
    cluster: DrillCluster, topic: str, partition: int
) -> dict[int, tuple[bytes, int]]:
    """Per batch base offset: a digest of the batch bytes and their size."""
    log = await cluster.log_view(topic, partition)
    return {
        b.base_offset: (hashlib.blake2b(b.data, digest_size=16).digest(), b.size)
        for b in log.batches
    }


async def failback(
    ctx: DrillContext,
    cluster: str,
    mirror: str,
    source: str,
    topics: list[str],
    configs: dict[str, Any] | None = None,
    timeout: float = 120.0,
) -> None:
    """On ``cluster`` (the old source) create ``mirror`` from ``source`` (the cluster
    that took over) and add ``topics``; wait until both logs end at the same offset.

    Broker processes cannot count their fetchers' appends here; for them the failback
    bytes are those of the batches the logs hold afterwards that were not there before
    (a batch cut and copied again with the same bytes is not seen)."""
    old = ctx.cluster(cluster)
    new_source = ctx.cluster(source)
    offsets = await partition_offsets(ctx, cluster, topics)
    before = {}
    for key in offsets:
        topic, _, partition = key.rpartition("-")
        before[key] = await _fingerprints(old, topic, int(partition))
    ctx.mark("failback", f"{mirror} on {cluster} from {source}")
    await create_mirror(ctx, cluster, mirror, source, topics, configs)
    await wait_mirror(ctx, cluster, mirror, max_lag=0, timeout=timeout)
    appended = ctx.mirrors[(cluster, mirror)].appended
    counted = appended is not None and appended.counted
    copied = appended.bytes if appended is not None and counted else 0
    full = 0
    for key, old_batches in before.items():
        topic, _, partition = key.rpartition("-")
        full += (await new_source.log_view(topic, int(partition))).size_in_bytes
        after = await _fingerprints(old, topic, int(partition))
        changed = [o for o, batch in sorted(old_batches.items()) if after.get(o) != batch]
        cut = changed[0] if changed else offsets[key]["log_end"]
        ctx.record_in("failback_truncation", key, cut)
        ctx.record_in("failback_dropped_offsets", key, offsets[key]["log_end"] - cut)
        if not counted:
            copied += sum(size for o, (_, size) in after.items() if old_batches.get(o) != after[o])
    ctx.record("failback_bytes", copied)
    ctx.record("full_log_bytes", full)
    ctx.mark("failback converged", f"{copied} of {full} bytes copied")


STEPS = {
    "create_mirror": create_mirror,
    "add_topics": add_topics,
    "remove_topics": remove_topics,
    "pause": pause,
    "resume": resume,
    "wait_mirror": wait_mirror,
    "wait_log_end": wait_log_end,
    "failover": failover,
    "failback": failback,
}
