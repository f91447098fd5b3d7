"""What a mirror's metadata sync may touch on its destination: only the resources of topics
it still mirrors. After a failover (remove) or a pause the topic is the destination's, and
what its operators grant or configure there survives every later sync cycle; during a
failback the two opposite mirrors never undo each other."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from helpers.metadata_sync import (
    DESTINATION_CONFIGS,
    SOURCE_CONFIGS,
    manager_of,
    mirror_topic,
    set_source_config,
    topic_configs,
)
from helpers.mirrors import MIRROR, mirror_state

from mirrorsim.broker.handlers.base import HANDLERS, RequestContext
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    ResourceType,
)
from mirrorsim.client.admin_types import TopicPartition as AdminTopicPartition

DESCRIBE_CONFIGS_KEY = 32
ALICE_READS_ORDERS = AclBinding(ResourceType.TOPIC, "orders", "User:alice", AclOperation.READ)
NEW_PRODUCER_WRITES_ORDERS = AclBinding(
    ResourceType.TOPIC, "orders", "User:new-producer", AclOperation.WRITE
)
ALICE_READS_GROUP = AclBinding(ResourceType.GROUP, "app", "User:alice", AclOperation.READ)
BOB_READS_GROUP = AclBinding(ResourceType.GROUP, "app", "User:bob", AclOperation.READ)
CYCLES = 3


async def acls_of(cluster: Any) -> set[AclBinding]:
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        return set(await admin.describe_acls())


async def create_acls(cluster: Any, *bindings: AclBinding) -> None:
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (await admin.create_acls(list(bindings))).all()


async def wait_for_cycles(cluster: Any, wait_for: Any, mirror: str = MIRROR) -> None:
    """Until ``CYCLES`` periodic sync cycles have started and ended after this call."""
    manager = manager_of(cluster)
    done = manager.completed_cycles(mirror)
    await wait_for(
        lambda: manager.completed_cycles(mirror) >= done + CYCLES + 1,
        timeout=30,
        message=f"{CYCLES} sync cycles of {mirror}",
    )


async def mirrored_with_acl(start_cluster: Any) -> tuple[Any, Any]:
    """orders mirrored from the source, whose ACL granting alice READ reached the
    destination through the sync."""
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders")
    await create_acls(source, ALICE_READS_ORDERS)
    await manager_of(destination).refresh_now(MIRROR)
    assert await acls_of(destination) == {ALICE_READS_ORDERS}
    return source, destination


async def test_an_acl_granted_on_the_destination_after_failover_survives(
    start_cluster: Any, wait_for: Any
) -> None:
    source, destination = await mirrored_with_acl(start_cluster)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()
    await wait_for(lambda: mirror_state(destination, "orders", 0) == "STOPPED", timeout=20)
    await create_acls(destination, NEW_PRODUCER_WRITES_ORDERS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        await admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, "orders")])

    await wait_for_cycles(destination, wait_for)
    report = await manager_of(destination).refresh_now(MIRROR)

    assert report.acl_operations == []
    assert await acls_of(destination) == {ALICE_READS_ORDERS, NEW_PRODUCER_WRITES_ORDERS}


async def test_an_acl_granted_on_the_destination_while_paused_survives(
    start_cluster: Any, wait_for: Any
) -> None:
    _, destination = await mirrored_with_acl(start_cluster)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.pause_mirror_topics(MIRROR, ["orders"])).all()
    await wait_for(lambda: mirror_state(destination, "orders", 0) == "PAUSED", timeout=20)
    await create_acls(destination, NEW_PRODUCER_WRITES_ORDERS)

    await wait_for_cycles(destination, wait_for)
    report = await manager_of(destination).refresh_now(MIRROR)

    assert report.acl_operations == []
    assert await acls_of(destination) == {ALICE_READS_ORDERS, NEW_PRODUCER_WRITES_ORDERS}


async def test_a_config_altered_on_the_destination_after_failover_survives(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders", **{"retention.ms": "3600000"})
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()
    await wait_for(lambda: mirror_state(destination, "orders", 0) == "STOPPED", timeout=20)
    await set_source_config(destination.bootstrap, "orders", "retention.ms", "60000")
    await set_source_config(destination.bootstrap, "orders", "segment.ms", "120000")

    await wait_for_cycles(destination, wait_for)
    report = await manager_of(destination).refresh_now(MIRROR)

    assert report.topic_operations == []
    configs = topic_configs(destination, "orders")
    assert (configs["retention.ms"], configs["segment.ms"]) == ("60000", "120000")
    assert configs["mirror.name"] == f"{MIRROR}.removed"


async def test_opposite_mirrors_of_a_failback_never_undo_each_other(
    start_cluster: Any, wait_for: Any
) -> None:
    """A→B mirror with orders failed over (STOPPED on B), B→A mirror of orders (failback,
    MIRRORING on A). B's operators change orders' and the group's ACLs; the A→B mirror's
    cycles run first each round, so any sync it still did would undo them on B."""
    a = await start_cluster("primary", configs=DESTINATION_CONFIGS)
    b = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(a.bootstrap, b, "orders")
    await create_acls(a, ALICE_READS_ORDERS, ALICE_READS_GROUP)
    await manager_of(b).refresh_now(MIRROR)
    assert await acls_of(b) == {ALICE_READS_ORDERS, ALICE_READS_GROUP}
    async with Admin(bootstrap=b.bootstrap) as admin:
        (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()
    await wait_for(lambda: mirror_state(b, "orders", 0) == "STOPPED", timeout=20)

    await create_acls(b, NEW_PRODUCER_WRITES_ORDERS, BOB_READS_GROUP)
    async with Admin(bootstrap=b.bootstrap) as admin:
        await admin.delete_acls(
            [AclBindingFilter(ResourceType.TOPIC, "orders", principal="User:alice")]
        )
    async with Admin(bootstrap=a.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": b.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()
    await wait_for(lambda: mirror_state(a, "orders", 0) == "MIRRORING", timeout=20)

    on_b = {NEW_PRODUCER_WRITES_ORDERS, BOB_READS_GROUP, ALICE_READS_GROUP}
    for _ in range(CYCLES):
        b_report = await manager_of(b).refresh_now(MIRROR)
        await manager_of(a).refresh_now(MIRROR)
        assert b_report.acl_operations == []
        assert await acls_of(b) == on_b
    assert await acls_of(a) == on_b
    await wait_for_cycles(b, wait_for)
    await wait_for_cycles(a, wait_for)
    assert await acls_of(b) == on_b
    assert await acls_of(a) == on_b


async def test_a_failover_during_a_cycle_is_not_undone_by_that_cycle(
    start_cluster: Any, wait_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remove and the operator's alter land while the cycle waits for the source's
    DescribeConfigs (the source's real handler answers after running them): the cycle
    that started with orders MIRRORING must not write its realignment over them."""
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster(
        "backup", configs={**DESTINATION_CONFIGS, "mirror.metadata.refresh.interval.ms": 3_600_000}
    )
    await mirror_topic(source.bootstrap, destination, "orders", **{"retention.ms": "3600000"})
    source_broker = source.brokers[0]
    registration = HANDLERS[DESCRIBE_CONFIGS_KEY]
    interleaved: list[str] = []

    async def fail_over_first(ctx: RequestContext, body: Any) -> Any:
        if ctx.broker is source_broker and not interleaved:
            interleaved.append("failover")
            async with Admin(bootstrap=destination.bootstrap) as admin:
                (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()
            await wait_for(lambda: mirror_state(destination, "orders", 0) == "STOPPED", timeout=20)
            await set_source_config(destination.bootstrap, "orders", "retention.ms", "60000")
        return await registration.handler(ctx, body)

    handler: Callable[[RequestContext, Any], Awaitable[Any]] = fail_over_first
    monkeypatch.setitem(
        HANDLERS, DESCRIBE_CONFIGS_KEY, dataclasses.replace(registration, handler=handler)
    )

    report = await manager_of(destination).refresh_now(MIRROR)

    assert interleaved == ["failover"]
    assert report.topic_operations == []
    configs = topic_configs(destination, "orders")
    assert (configs["retention.ms"], configs["mirror.name"]) == ("60000", f"{MIRROR}.removed")


async def test_group_offsets_of_a_failed_over_topic_stay_the_destinations(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=SOURCE_CONFIGS)
    destination = await start_cluster("backup", configs=DESTINATION_CONFIGS)
    await mirror_topic(source.bootstrap, destination, "orders")
    partition = AdminTopicPartition("orders", 0)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.alter_consumer_group_offsets("app", {partition: 3})).all()
    await manager_of(destination).refresh_now(MIRROR)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        assert (await admin.list_consumer_group_offsets("app"))[partition].offset == 3
        (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()
    await wait_for(lambda: mirror_state(destination, "orders", 0) == "STOPPED", timeout=20)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.alter_consumer_group_offsets("app", {partition: 9})).all()

    await wait_for_cycles(destination, wait_for)
    report = await manager_of(destination).refresh_now(MIRROR)

    assert report.group_commits == []
    async with Admin(bootstrap=destination.bootstrap) as admin:
        assert (await admin.list_consumer_group_offsets("app"))[partition].offset == 3
