"""Mirror fetcher placement and source leadership changes."""

from __future__ import annotations

import asyncio
from typing import Any

from helpers.mirrors import (
    MIRROR,
    MIRROR_CONFIGS,
    broker_of,
    mirror_state,
    mirrored_up_to,
    produce,
)

from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.errors import KafkaError


async def test_fetchers_are_keyed_by_fetcher_id_source_broker_and_mirror(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster(
        "backup", configs={**MIRROR_CONFIGS, "mirror.num.replica.fetchers": 4}
    )
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 8, 1)])).all()
    await produce(source.bootstrap, "orders", 16, partitions=8)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()
    for p in range(8):
        await wait_for(lambda p=p: mirrored_up_to(source, destination, "orders", p), timeout=20)
    fetchers = broker_of(destination).mirrors.fetchers.fetchers
    assert 1 < len(fetchers) <= 4
    owned = sorted(key for task in fetchers.values() for key in task.partitions)
    assert owned == [("orders", p) for p in range(8)]
    for key, task in fetchers.items():
        assert (key.source_broker, key.mirror) == (1, MIRROR)
        assert task.client.client_id == f"broker-1-fetcher-{key.fetcher_id}-mirror-{MIRROR}"


async def test_a_new_source_leader_epoch_moves_the_partition_without_truncation(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
    await produce(source.bootstrap, "orders", 3)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()
    await wait_for(lambda: mirrored_up_to(source, destination, "orders", 0), timeout=20)

    broker = broker_of(source)
    current = broker.snapshot.topics["orders"].partitions[0]
    bumped = PartitionAssignment(0, current.replicas, current.leader, 3, current.isr)
    await asyncio.to_thread(broker.store.update_partition, "orders", bumped)
    await broker.refresh_metadata()
    await produce(source.bootstrap, "orders", 2, tag="epoch-3")

    await wait_for(lambda: mirrored_up_to(source, destination, "orders", 0), timeout=20)
    mirrors = broker_of(destination).mirrors
    fetcher = mirrors.fetchers.fetcher_of(("orders", 0))
    assert fetcher is not None
    assert fetcher.partitions[("orders", 0)].source_leader_epoch == 3
    assert mirror_state(destination, "orders", 0) == "MIRRORING"
    epochs = [
        b.partition_leader_epoch
        for b in broker_of(destination).replica_manager.partition("orders", 0).log.batches()
    ]
    assert epochs[0] == 0 and epochs[-1] == 3


async def test_two_destination_brokers_route_states_to_their_coordinators(
    start_cluster: Any, wait_for: Any
) -> None:
    """Partition states live at the leader of their ``__mirror_state`` partition; with two
    brokers some are on the other broker and go through ReadMirrorStates/WriteMirrorStates.
    """
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", brokers=2, configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 6, 1)])).all()
    await produce(source.bootstrap, "orders", 12, partitions=6)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()

        def copied(p: int) -> bool:
            topic = destination.brokers[0].snapshot.topics.get("orders")
            if topic is None:
                return False
            leader = next(
                b for b in destination.brokers if b.broker_id == topic.partitions[p].leader
            )
            try:
                ours = leader.replica_manager.partition("orders", p).log.log_end_offset
            except KafkaError:
                return False
            theirs = broker_of(source).replica_manager.partition("orders", p).log.log_end_offset
            return ours == theirs == 2

        for p in range(6):
            await wait_for(lambda p=p: copied(p), timeout=20)
        leaders = {p.leader for p in destination.brokers[0].snapshot.topics["orders"].partitions}
        coordinators = {
            p.leader for p in destination.brokers[0].snapshot.topics["__mirror_state"].partitions
        }
        assert leaders == coordinators == {1, 2}
        (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()

        async def all_stopped() -> bool:
            described = (await admin.describe_mirrors([MIRROR]))[MIRROR].partitions
            return len(described) == 6 and {d.state for d in described} == {"STOPPED"}

        await wait_for(all_stopped, timeout=20)
        described = (await admin.describe_mirrors([MIRROR]))[MIRROR].partitions
    assert {d.last_mirror_epoch for d in described} == {0}
