"""Mirror scenarios on in-process clusters: sources with records, failover and replica checks."""

from __future__ import annotations

from typing import Any

from helpers.mirrors import MIRROR, produce
from helpers.replication import broker, create_topic
from mirrorsim.client import Admin
from mirrorsim.protocol.errors import KafkaError
from mirrorsim.protocol.records import RawBatch

TOPIC = "orders"


CONFIGS = {
    "mirror.topic.num.partitions": 3,
    "mirror.fetch.max.wait.ms": 50,
    "default.replication.factor": 3,
    "replica.fetch.wait.max.ms": 50,
    "replica.fetch.backoff.ms": 50,
    "replica.lag.time.max.ms": 1500,
    "broker.heartbeat.interval.ms": 200,
    "broker.session.timeout.ms": 3000,
    "metadata.refresh.interval.ms": 100,
    "controlled.shutdown.enable": "false",
}
"""Fast intervals for two in-process clusters of three brokers. The session is 3 s: the
six brokers share one event loop, and under the full suite's load a stall once made one
heartbeat more than a 1 s session late, so the controller dropped a live broker."""


Fingerprint = tuple[int, int, int, bytes]


def fingerprint(batch: RawBatch) -> Fingerprint:
    return batch.base_offset, batch.last_offset, batch.partition_leader_epoch, bytes(batch.data)


def replica_logs(cluster: Any, topic: str = TOPIC) -> dict[int, list[Fingerprint]]:
    """Every broker's copy of partition 0, batch by batch."""
    logs = {}
    for b in cluster.brokers:
        try:
            log = b.replica_manager.partition(topic, 0).log
        except Exception:
            continue
        logs[b.broker_id] = [fingerprint(x) for x in log.batches()]
    return logs


def leader_of(cluster: Any, topic: str = TOPIC) -> Any:
    row = cluster.brokers[0].snapshot.topics[topic].partitions[0]
    return broker(cluster, row.leader)


def every_replica_equals(cluster: Any, expected: list[Fingerprint], replicas: int = 3) -> bool:
    logs = replica_logs(cluster)
    return len(logs) == replicas and all(log == expected for log in logs.values())


def partition_mirror_state(cluster: Any, topic: str = TOPIC) -> str | None:
    try:
        leader = leader_of(cluster, topic)
    except StopIteration:
        return None
    status = leader.mirrors.partitions.get((topic, 0))
    return None if status is None else status.state.name


async def start_mirror(
    destination: Any, source: Any, wait_for: Any, *, create: bool = True
) -> None:
    """Create the mirror and add the topic, retrying retriable errors: a ``__mirror_state``
    partition whose leader was just stopped answers COORDINATOR_NOT_AVAILABLE until the
    next leader has loaded it."""
    async with Admin(bootstrap=destination.bootstrap) as admin:
        if create:
            await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})

        async def added() -> bool:
            try:
                (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
            except KafkaError as exc:
                if not exc.code.retriable:
                    raise
                return False
            return True

        await wait_for(added, timeout=15, message="AddTopicsToMirror to succeed")


async def fail_over(cluster: Any, wait_for: Any) -> None:
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()
    await wait_for(
        lambda: partition_mirror_state(cluster) == "STOPPED", timeout=20, message="STOPPED"
    )


async def source_with_records(start_cluster: Any, count: int) -> Any:
    source = await start_cluster("primary", brokers=3, configs=CONFIGS)
    await create_topic(source, TOPIC)
    await produce(source.bootstrap, TOPIC, count, tag="a")
    return source


async def mirrored_then_failed_over(
    start_cluster: Any, wait_for: Any, records: int = 4
) -> tuple[Any, Any, list[Fingerprint]]:
    """(source, destination, the source's log): a 3-broker destination that mirrored
    ``records`` records onto every replica, then failed over (STOPPED), ready to be
    added to the mirror again."""
    source = await source_with_records(start_cluster, records)
    destination = await start_cluster("backup", brokers=3, configs=CONFIGS)
    await start_mirror(destination, source, wait_for)
    expected = replica_logs(source)[leader_of(source).broker_id]
    await wait_for(lambda: every_replica_equals(destination, expected), timeout=30)
    await fail_over(destination, wait_for)
    return source, destination, expected
