"""A mirror topic partition won by an unclean election logs the spec's warning on its new
leader, unless the topic sets ``mirror.support.unclean.leader.election``."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from helpers.mirrors import MIRROR, produce
from helpers.replication import broker, restart, stop

from mirrorsim.broker.metadata.models import PartitionAssignment, TopicRecord
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import ElectionType, NewTopic, TopicPartition
from mirrorsim.coordinator.unclean_elections import UncleanElection, unclean_mirror_elections

TOPIC = "orders"
CONFIGS = {
    "mirror.topic.num.partitions": 1,
    "mirror.fetch.max.wait.ms": 50,
    "default.replication.factor": 2,
    "replica.fetch.wait.max.ms": 50,
    "replica.fetch.backoff.ms": 50,
    "replica.lag.time.max.ms": 1500,
    "broker.heartbeat.interval.ms": 200,
    "broker.session.timeout.ms": 1000,
    "metadata.refresh.interval.ms": 100,
    "controlled.shutdown.enable": "false",
}


def _row(cluster: Any) -> PartitionAssignment:
    return cluster.brokers[0].snapshot.topics[TOPIC].partitions[0]


async def test_an_unclean_election_of_a_mirror_partition_is_logged(
    start_cluster: Any, wait_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    source = await start_cluster("primary")
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    await produce(source.bootstrap, TOPIC, 5)
    destination = await start_cluster("backup", brokers=2, configs=CONFIGS)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
    await wait_for(lambda: TOPIC in destination.brokers[0].snapshot.topics, timeout=20)
    await wait_for(lambda: len(_row(destination).isr) == 2, timeout=20)
    leader = _row(destination).leader
    follower = next(r for r in _row(destination).replicas if r != leader)

    await stop(destination, follower)
    await wait_for(lambda: _row(destination).isr == (leader,), timeout=15)
    await stop(destination, leader)
    survivor = await restart(destination, follower)
    await wait_for(lambda: survivor.snapshot.topics[TOPIC].partitions[0].leader == -1, timeout=15)
    caplog.set_level(logging.WARNING, logger="mirrorsim.coordinator.mirror_coordinator")
    async with Admin(bootstrap=destination.bootstrap) as admin:
        elected = await admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition(TOPIC, 0)])
        elected.all()
    assert broker(destination, follower) is survivor

    def warned() -> bool:
        return any(
            "unclean leader election of mirror topic partition orders-0" in r.getMessage()
            for r in caplog.records
        )

    await wait_for(warned, timeout=15, message="the unclean election warning")


def _topic(leader: int, isr: tuple[int, ...], **configs: str) -> TopicRecord:
    return TopicRecord(
        TOPIC,
        TOPIC_ID,
        {"mirror.name": MIRROR, **configs},
        (PartitionAssignment(0, (1, 2), leader, 5 if leader == 1 else 6, isr),),
    )


TOPIC_ID = uuid.UUID(int=7)


@pytest.mark.parametrize(
    ("before", "after", "found"),
    [
        (_topic(1, (1,)), _topic(2, (2,)), [UncleanElection(TOPIC, 0, 2, (1,))]),
        (_topic(-1, (1,)), _topic(2, (2,)), [UncleanElection(TOPIC, 0, 2, (1,))]),
        (_topic(1, (1, 2)), _topic(2, (2,)), []),
        (_topic(1, (1,)), _topic(-1, (1,)), []),
        (
            _topic(1, (1,), **{"mirror.support.unclean.leader.election": "true"}),
            _topic(2, (2,), **{"mirror.support.unclean.leader.election": "true"}),
            [],
        ),
    ],
)
def test_an_election_is_unclean_when_the_new_leader_was_outside_the_isr(
    before: TopicRecord, after: TopicRecord, found: list[UncleanElection]
) -> None:
    assert unclean_mirror_elections({TOPIC: before}, {TOPIC: after}) == found


def test_topics_that_are_not_mirrored_are_not_reported() -> None:
    plain = TopicRecord(TOPIC, TOPIC_ID, {}, _topic(2, (2,)).partitions)
    assert unclean_mirror_elections({TOPIC: _topic(1, (1,))}, {TOPIC: plain}) == []
