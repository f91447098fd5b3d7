"""A stopping mirror partition becomes writable only once its ISR has the MIRROR_PID_RESET.

The reset clears the source's producers from the partition's producer state. A follower
that took over without it would keep them, and a local producer given one of their ids
would be refused or deduplicated against the source's batches. So STOPPING waits until
every in-sync replica has the reset; a leader lost meanwhile leaves the partition
STOPPING, and the new leader resumes the sequence and writes a reset of its own.
"""

from __future__ import annotations

from typing import Any

from helpers.mirrors import MIRROR, produce
from helpers.replication import broker, stop

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.errors import KafkaError
from mirrorsim.protocol.records import MirrorPidReset, decode_control_batch

TOPIC = "orders"
CONFIGS = {
    "mirror.topic.num.partitions": 1,
    "mirror.fetch.max.wait.ms": 50,
    "mirror.topic.replication.factor": 2,
    "default.replication.factor": 2,
    "replica.fetch.wait.max.ms": 50,
    "replica.fetch.backoff.ms": 50,
    # a follower that stopped fetching stays in the ISR for the whole test
    "replica.lag.time.max.ms": 60_000,
    "broker.heartbeat.interval.ms": 100,
    "broker.session.timeout.ms": 1500,
    "metadata.refresh.interval.ms": 100,
    "controlled.shutdown.enable": "false",
}


def resets(replica: Any) -> int:
    """MIRROR_PID_RESET batches in the replica's log of the mirror topic."""
    log = replica.replica_manager.partition(TOPIC, 0).log
    return sum(
        isinstance(decode_control_batch(batch), MirrorPidReset)
        for batch in log.batches()
        if batch.is_control
    )


def log_end(replica: Any) -> int:
    try:
        return int(replica.replica_manager.partition(TOPIC, 0).log_end_offset)
    except KafkaError:
        return -1


def state_on(replica: Any) -> str | None:
    """The partition's mirror state as the replica's coordinator holds it."""
    status = replica.mirrors.partitions.get((TOPIC, 0))
    return None if status is None else status.state.name


async def test_a_reset_only_the_old_leader_had_is_written_again_by_the_new_one(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary")
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    await produce(source.bootstrap, TOPIC, 5)
    destination = await start_cluster("backup", brokers=2, configs=CONFIGS)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()

    def row() -> Any:
        return destination.brokers[0].snapshot.topics[TOPIC].partitions[0]

    await wait_for(lambda: TOPIC in destination.brokers[0].snapshot.topics, timeout=20)
    await wait_for(lambda: len(row().isr) == 2, timeout=20)
    leader = broker(destination, row().leader)
    follower = broker(destination, next(r for r in row().replicas if r != row().leader))
    await wait_for(lambda: log_end(follower) == 5, timeout=20, message="the follower caught up")
    # the follower stops fetching (cut off from the leader) but stays in the ISR
    assert follower.replica_manager.fetchers is not None
    follower.replica_manager.fetchers.unfollow(TOPIC, 0)

    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, [TOPIC])).all()
    await wait_for(lambda: resets(leader) == 1, timeout=20, message="the leader's reset")
    # the reset waits for the ISR: the partition stays STOPPING, closed to producers
    await wait_for(
        lambda: leader.replica_manager._purgatory.watcher_count((TOPIC, 0)) > 0,
        message="STOPPING waiting for the ISR to have the reset",
    )
    assert state_on(leader) == "STOPPING"

    await stop(destination, leader.broker_id)
    await wait_for(
        lambda: state_on(follower) == "STOPPED",
        timeout=30,
        message="the new leader's STOPPED",
    )
    assert follower.replica_manager.partition(TOPIC, 0).is_leader
    assert resets(follower) == 1
