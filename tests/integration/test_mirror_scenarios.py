"""The spec's mirroring scenarios on two 3-broker clusters with RF=3 mirror topics.

Every assertion compares the mirrored prefix batch for batch (base offset, last offset,
leader epoch, bytes) on every replica of the destination, and the exact offsets a
truncation removed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.mirror_scenarios import (
    CONFIGS,
    TOPIC,
    every_replica_equals,
    fail_over,
    leader_of,
    mirrored_then_failed_over,
    partition_mirror_state,
    replica_logs,
    source_with_records,
    start_mirror,
)
from helpers.mirrors import MIRROR, produce
from helpers.replication import restart, stop

from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import TopicPartition


async def test_first_mirroring_copies_every_replica_byte_for_byte(
    start_cluster: Any, wait_for: Any
) -> None:
    """Scenario A: no LME on the source, so the destination takes everything from scratch."""
    source = await source_with_records(start_cluster, 12)
    destination = await start_cluster("backup", brokers=3, configs=CONFIGS)
    expected = replica_logs(source)[leader_of(source).broker_id]
    await start_mirror(destination, source, wait_for)
    await wait_for(lambda: every_replica_equals(destination, expected), timeout=30)
    assert partition_mirror_state(destination) == "MIRRORING"
    await produce(source.bootstrap, TOPIC, 5, tag="more")
    expected = replica_logs(source)[leader_of(source).broker_id]
    await wait_for(lambda: every_replica_equals(destination, expected), timeout=30)


async def test_failback_cuts_the_old_sources_tail_on_every_replica(
    start_cluster: Any, wait_for: Any
) -> None:
    """Scenario B on RF=3: the LME cut reaches the followers of the old source too, and
    only then does the partition mirror (every replica ends as the new source's log)."""
    a = await source_with_records(start_cluster, 6)
    b = await start_cluster("backup", brokers=3, configs=CONFIGS)
    shared = replica_logs(a)[leader_of(a).broker_id]
    await start_mirror(b, a, wait_for)
    await wait_for(lambda: every_replica_equals(b, shared), timeout=30)
    await fail_over(b, wait_for)
    await produce(b.bootstrap, TOPIC, 2, tag="written-on-b")

    leader_a = leader_of(a)
    row = leader_a.snapshot.topics[TOPIC].partitions[0]
    bumped = PartitionAssignment(0, row.replicas, row.leader, row.leader_epoch + 1, row.isr)
    await asyncio.to_thread(leader_a.store.update_partition, TOPIC, bumped)
    await asyncio.gather(*(x.refresh_metadata() for x in a.brokers))
    await produce(a.bootstrap, TOPIC, 3, tag="lost-on-a")
    await wait_for(lambda: len({len(x) for x in replica_logs(a).values()}) == 1, timeout=10)
    lost = replica_logs(a)[leader_a.broker_id][len(shared) :]
    assert lost and lost[0][0] == shared[-1][1] + 1

    await start_mirror(a, b, wait_for)
    on_b = replica_logs(b)[leader_of(b).broker_id]
    await wait_for(lambda: every_replica_equals(a, on_b), timeout=30)
    assert on_b[: len(shared)] == shared
    assert all(not set(lost) & set(log) for log in replica_logs(a).values())


async def test_a_new_destination_leader_resumes_without_copying_again(
    start_cluster: Any, wait_for: Any
) -> None:
    """A stored MIRRORING state is resumed by the next leader: no LME cut from -1."""
    source = await source_with_records(start_cluster, 10)
    destination = await start_cluster("backup", brokers=3, configs=CONFIGS)
    expected = replica_logs(source)[leader_of(source).broker_id]
    await start_mirror(destination, source, wait_for)
    await wait_for(lambda: every_replica_equals(destination, expected), timeout=30)

    cut_from_scratch: list[int] = []
    for b in destination.brokers:
        manager = b.replica_manager
        real = manager.truncate_fully_and_start_at

        def spying(topic: str, partition: int, offset: int, _real: Any = real) -> None:
            cut_from_scratch.append(offset)
            _real(topic, partition, offset)

        manager.truncate_fully_and_start_at = spying
    old_leader = leader_of(destination).broker_id
    await stop(destination, old_leader)
    await wait_for(
        lambda: (
            destination.brokers[0].snapshot.topics[TOPIC].partitions[0].leader
            not in (old_leader, -1)
        ),
        timeout=15,
        message="a new destination leader",
    )
    await wait_for(lambda: partition_mirror_state(destination) == "MIRRORING", timeout=15)
    await produce(source.bootstrap, TOPIC, 4, tag="after-move")
    expected = replica_logs(source)[leader_of(source).broker_id]
    await wait_for(lambda: every_replica_equals(destination, expected, replicas=2), timeout=30)
    assert cut_from_scratch == []
    await restart(destination, old_leader)
    await wait_for(lambda: every_replica_equals(destination, expected), timeout=30)


async def test_unclean_support_waits_for_every_replica_and_fails_without_one(
    start_cluster: Any, wait_for: Any
) -> None:
    """mirror.support.unclean.leader.election: the LME cut must reach every replica; one
    that is down keeps the partition PREPARING until replica.lag.time.max.ms, then FAILED.
    Without the config the ISR alone (two live brokers) completes it."""
    source, destination, expected = await mirrored_then_failed_over(start_cluster, wait_for)
    follower = next(r for r in (1, 2, 3) if r != leader_of(destination).broker_id)
    await stop(destination, follower)
    await wait_for(
        lambda: follower not in destination.brokers[0].snapshot.topics[TOPIC].partitions[0].isr,
        timeout=10,
        message="the stopped follower out of the ISR",
    )

    configs = dict(destination.brokers[0].snapshot.topics[TOPIC].configs)
    configs["mirror.support.unclean.leader.election"] = "true"
    await destination.brokers[0].controller.set_topic_configs(TOPIC, configs)
    await start_mirror(destination, source, wait_for, create=False)
    # the add is answered once the partition left STOPPED: PREPARING, or already FAILED
    await wait_for(
        lambda: partition_mirror_state(destination) in ("PREPARING", "FAILED"), timeout=10
    )
    await wait_for(lambda: partition_mirror_state(destination) == "FAILED", timeout=15)
    status = leader_of(destination).mirrors.partitions[(TOPIC, 0)]
    assert status.failure is not None and str(follower) in status.failure

    await fail_over(destination, wait_for)
    configs = dict(destination.brokers[0].snapshot.topics[TOPIC].configs)
    configs["mirror.support.unclean.leader.election"] = "false"
    await destination.brokers[0].controller.set_topic_configs(TOPIC, configs)
    await start_mirror(destination, source, wait_for, create=False)
    await wait_for(lambda: partition_mirror_state(destination) == "MIRRORING", timeout=15)
    await wait_for(lambda: every_replica_equals(destination, expected, replicas=2), timeout=30)


async def test_retention_on_the_source_while_paused_restarts_every_replica_at_its_log_start(
    start_cluster: Any, wait_for: Any
) -> None:
    """Paused at 50 while the source's log start moves to 100 (DeleteRecords, possibly
    inside a batch): the resumed mirror restarts at 100, never fails, and every replica
    ends with exactly the source's batches from the one holding offset 100."""
    source = await source_with_records(start_cluster, 50)
    destination = await start_cluster("backup", brokers=3, configs=CONFIGS)
    await start_mirror(destination, source, wait_for)
    early = replica_logs(source)[leader_of(source).broker_id]
    await wait_for(lambda: every_replica_equals(destination, early), timeout=30)

    restarts: dict[int, list[int]] = {}
    for b in destination.brokers:
        manager = b.replica_manager
        real = manager.truncate_fully_and_start_at

        def spying(
            topic: str, partition: int, offset: int, _real: Any = real, _id: int = b.broker_id
        ) -> None:
            restarts.setdefault(_id, []).append(offset)
            _real(topic, partition, offset)

        manager.truncate_fully_and_start_at = spying
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.pause_mirror_topics(MIRROR, [TOPIC])).all()
        await wait_for(lambda: partition_mirror_state(destination) == "PAUSED", timeout=15)
        await produce(source.bootstrap, TOPIC, 51, tag="late")
        async with Admin(bootstrap=source.bootstrap) as source_admin:
            low = await source_admin.delete_records({TopicPartition(TOPIC, 0): 100})
        assert low[TopicPartition(TOPIC, 0)] == 100
        (await admin.resume_mirror_topics(MIRROR, [TOPIC])).all()

    retained = [b for b in replica_logs(source)[leader_of(source).broker_id] if b[1] >= 100]
    await wait_for(lambda: every_replica_equals(destination, retained), timeout=30)
    await wait_for(
        lambda: all(
            b.replica_manager.partition(TOPIC, 0).log_start_offset == 100
            for b in destination.brokers
        ),
        timeout=15,
        message="log start 100 on every replica",
    )
    assert partition_mirror_state(destination) == "MIRRORING"
    assert restarts[leader_of(destination).broker_id] == [100]


async def test_preparing_with_an_isr_below_min_insync_replicas_waits_instead_of_failing(
    start_cluster: Any, wait_for: Any
) -> None:
    """Spec: "If less than min ISR are available, we will skip and retry". A follower is
    down and min.insync.replicas=3: PREPARING outlasts replica.lag.time.max.ms several
    times without going FAILED, and completes once the follower is back in the ISR."""
    source, destination, expected = await mirrored_then_failed_over(start_cluster, wait_for)
    follower = next(r for r in (1, 2, 3) if r != leader_of(destination).broker_id)
    await stop(destination, follower)
    await wait_for(
        lambda: follower not in destination.brokers[0].snapshot.topics[TOPIC].partitions[0].isr,
        timeout=10,
        message="the stopped follower out of the ISR",
    )
    configs = dict(destination.brokers[0].snapshot.topics[TOPIC].configs)
    configs["min.insync.replicas"] = "3"
    await destination.brokers[0].controller.set_topic_configs(TOPIC, configs)

    await start_mirror(destination, source, wait_for, create=False)
    await wait_for(lambda: partition_mirror_state(destination) == "PREPARING", timeout=10)
    lag_ms = CONFIGS["replica.lag.time.max.ms"]
    assert isinstance(lag_ms, int)
    leader = leader_of(destination)
    started = leader.replica_manager.partition(TOPIC, 0).clock()

    def still_preparing_long_after_the_timeout() -> bool:
        assert partition_mirror_state(destination) == "PREPARING"
        return leader.replica_manager.partition(TOPIC, 0).clock() - started > 3 * lag_ms

    await wait_for(still_preparing_long_after_the_timeout, timeout=30)
    await restart(destination, follower)
    await wait_for(lambda: partition_mirror_state(destination) == "MIRRORING", timeout=30)
    await wait_for(lambda: every_replica_equals(destination, expected), timeout=30)


async def test_a_follower_that_stops_fetching_while_preparing_leaves_the_isr_not_the_mirror(
    start_cluster: Any, wait_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live follower that stops fetching (a stall, a stuck disk) during PREPARING does
    not fail the partition: the leader's ISR shrink takes it out of the ISR after
    replica.lag.time.max.ms, as Kafka's does, and the cut is then complete on every ISR
    member. Only with mirror.support.unclean.leader.election does a replica that does not
    truncate in time fail the partition (the test above)."""
    source, destination, _ = await mirrored_then_failed_over(start_cluster, wait_for)
    leader = leader_of(destination)
    stuck = next(b for b in destination.brokers if b is not leader)
    fetchers = stuck.replica_manager.fetchers
    assert fetchers is not None
    follow = fetchers.follow
    monkeypatch.setattr(
        fetchers, "follow", lambda p: None if (p.topic, p.index) == (TOPIC, 0) else follow(p)
    )
    fetchers.unfollow(TOPIC, 0)

    await start_mirror(destination, source, wait_for, create=False)
    await wait_for(
        lambda: partition_mirror_state(destination) in ("MIRRORING", "FAILED"),
        timeout=20,
        message="PREPARING over",
    )
    assert partition_mirror_state(destination) == "MIRRORING"
    row = destination.brokers[0].snapshot.topics[TOPIC].partitions[0]
    assert stuck.broker_id not in row.isr
