"""Mirror management RPCs against a real destination: validation and error codes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.mirrors import (
    MIRROR,
    MIRROR_CONFIGS,
    broker_of,
    mirror_state,
    mirrored_up_to,
    partition_log,
    produce,
)

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import MirrorApiKey


@pytest.fixture
async def clusters(start_cluster: Any) -> tuple[Any, Any]:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 2, 1), NewTopic("audit", 1, 1)])).all()
    return source, destination


async def _code(call: Any) -> ErrorCode:
    with pytest.raises(KafkaError) as raised:
        await call
    return raised.value.code


async def test_api_versions_advertise_the_mirror_rpcs(clusters: tuple[Any, Any]) -> None:
    _, destination = clusters
    broker = broker_of(destination)
    connection = BrokerConnection(broker.host, broker.port, client_id="mirror-test")
    await connection.connect()
    try:
        advertised = connection.api_versions
    finally:
        await connection.close()
    for key in MirrorApiKey:
        if key is not MirrorApiKey.BUMP_LEADER_EPOCHS:
            assert advertised[int(key)] == (0, 0), key.name


@pytest.mark.parametrize("name", ["bad name", "x.removed", "x.paused", "", ".", "a" * 250, "ü"])
async def test_create_mirror_refuses_invalid_names(clusters: tuple[Any, Any], name: str) -> None:
    source, destination = clusters
    async with Admin(bootstrap=destination.bootstrap) as admin:
        code = await _code(admin.create_mirror(name, {"bootstrap.servers": source.bootstrap}))
    assert code == ErrorCode.INVALID_MIRROR_NAME


async def test_create_mirror_rules(clusters: tuple[Any, Any]) -> None:
    source, destination = clusters
    secret = {"sasl.jaas.config": "user=alice password=s3cret", "ssl.key.password": "pw"}
    async with Admin(bootstrap=destination.bootstrap) as admin:
        assert await _code(admin.create_mirror(MIRROR, secret)) == ErrorCode.INVALID_CONFIG
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        duplicate = admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        assert await _code(duplicate) == ErrorCode.INVALID_MIRROR_NAME
        (listing,) = await admin.list_mirrors()
    assert (listing.name, listing.source_bootstrap, listing.topic_count) == (
        MIRROR,
        source.bootstrap,
        0,
    )
    assert "__mirror_state" in broker_of(destination).snapshot.topics
    assert len(broker_of(destination).snapshot.topics["__mirror_state"].partitions) == 3


async def test_create_mirror_never_echoes_secrets(clusters: tuple[Any, Any]) -> None:
    source, destination = clusters
    configs = {"bootstrap.servers": source.bootstrap, "sasl.jaas.config": "password=s3cret"}
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, configs)
        with pytest.raises(KafkaError) as raised:
            await admin.create_mirror(MIRROR, configs)
        listings = await admin.list_mirrors()
    assert "s3cret" not in str(raised.value) and "s3cret" not in repr(listings)


async def test_topic_rpc_errors(clusters: tuple[Any, Any], wait_for: Any) -> None:
    source, destination = clusters
    async with Admin(bootstrap=destination.bootstrap) as admin:
        unknown = admin.add_topics_to_mirror("nope", ["orders"])
        assert await _code(unknown) == ErrorCode.UNKNOWN_MIRROR
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        await admin.create_mirror("other", {"bootstrap.servers": source.bootstrap})
        added = await admin.add_topics_to_mirror(MIRROR, ["orders", "missing"])
        assert added["orders"] is None
        assert added["missing"].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        await wait_for(lambda: mirror_state(destination, "orders", 1) == "MIRRORING", timeout=20)

        again = await admin.add_topics_to_mirror(MIRROR, ["orders"])
        assert again["orders"].code == ErrorCode.TOPIC_ALREADY_IN_MIRROR
        elsewhere = await admin.add_topics_to_mirror("other", ["orders"])
        assert elsewhere["orders"].code == ErrorCode.TOPIC_ALREADY_IN_MIRROR

        await admin.create_topics([NewTopic("local", 1, 1)])
        wrong = await admin.remove_topics_from_mirror("other", ["orders", "local", "ghost"])
        assert {t: e.code for t, e in wrong.items() if e is not None} == {
            "orders": ErrorCode.TOPIC_NOT_IN_MIRROR,
            "local": ErrorCode.UNKNOWN_MIRROR,
            "ghost": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        resumed = await admin.resume_mirror_topics(MIRROR, ["orders"])
        assert resumed["orders"].code == ErrorCode.MIRROR_TOPIC_NOT_PAUSED
        (await admin.pause_mirror_topics(MIRROR, ["orders"])).all()
        paused = await admin.pause_mirror_topics(MIRROR, ["orders"])
        assert paused["orders"].code == ErrorCode.MIRROR_TOPIC_ALREADY_PAUSED
        (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()
        removed = await admin.resume_mirror_topics(MIRROR, ["orders"])
        assert removed["orders"].code == ErrorCode.MIRROR_TOPIC_BEING_REMOVED


async def test_delete_mirror_rules(clusters: tuple[Any, Any], wait_for: Any) -> None:
    source, destination = clusters
    async with Admin(bootstrap=destination.bootstrap) as admin:
        assert await _code(admin.delete_mirror(MIRROR)) == ErrorCode.UNKNOWN_MIRROR
        await admin.create_mirror("empty", {"bootstrap.servers": source.bootstrap})
        await admin.delete_mirror("empty")
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders"])).all()
        assert await _code(admin.delete_mirror(MIRROR)) == ErrorCode.MIRROR_NOT_EMPTY
        (await admin.remove_topics_from_mirror(MIRROR, ["orders"])).all()
        for p in range(2):
            await wait_for(lambda p=p: mirror_state(destination, "orders", p) == "STOPPED", 20)
        await admin.delete_mirror(MIRROR)
        assert await admin.list_mirrors() == []
        described = await admin.describe_topics(["orders"])
    assert described["orders"].name == "orders"
    assert "mirror.name" not in broker_of(destination).snapshot.topics["orders"].configs


async def test_pause_and_resume_without_truncation(
    clusters: tuple[Any, Any], wait_for: Any
) -> None:
    source, destination = clusters
    await produce(source.bootstrap, "audit", 4)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["audit"])).all()
        await wait_for(lambda: mirrored_up_to(source, destination, "audit", 0), timeout=20)
        (await admin.pause_mirror_topics(MIRROR, ["audit"])).all()
        await wait_for(lambda: mirror_state(destination, "audit", 0) == "PAUSED", timeout=20)
        mirrors = broker_of(destination).mirrors
        assert not mirrors.fetchers.is_fetching(("audit", 0))
        await wait_for(lambda: mirrors.fetchers.fetchers == {}, timeout=5)

        truncations: list[tuple[str, int, int]] = []
        manager = broker_of(destination).replica_manager
        real_truncate, real_restart = manager.truncate_to, manager.truncate_fully_and_start_at

        def spy_truncate(topic: str, partition: int, offset: int) -> bool:
            truncations.append((topic, partition, offset))
            return real_truncate(topic, partition, offset)

        def spy_restart(topic: str, partition: int, offset: int) -> None:
            truncations.append((topic, partition, offset))
            real_restart(topic, partition, offset)

        manager.truncate_to, manager.truncate_fully_and_start_at = spy_truncate, spy_restart
        await produce(source.bootstrap, "audit", 3, tag="while-paused")
        assert partition_log(destination, "audit", 0).log_end_offset == 4
        (await admin.resume_mirror_topics(MIRROR, ["audit"])).all()
        await wait_for(lambda: mirrored_up_to(source, destination, "audit", 0), timeout=20)
        (described,) = (await admin.describe_mirrors([MIRROR]))[MIRROR].partitions
    assert truncations == []
    assert mirror_state(destination, "audit", 0) == "MIRRORING"
    assert (described.topic, described.state, described.destination_offset) == (
        "audit",
        "MIRRORING",
        7,
    )
    assert described.source_offset == 7 and described.lag == 0


async def test_list_and_describe_mirrors(clusters: tuple[Any, Any], wait_for: Any) -> None:
    source, destination = clusters
    await produce(source.bootstrap, "orders", 6, partitions=2)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, ["orders", "audit"])).all()
        for p in range(2):
            await wait_for(lambda p=p: mirrored_up_to(source, destination, "orders", p), 20)
        (listing,) = await admin.list_mirrors()
        assert (listing.topic_count, listing.source_cluster_id) == (2, source.cluster_id)
        with pytest.raises(KafkaError) as raised:
            await admin.describe_mirrors(["nope"])
        assert raised.value.code == ErrorCode.UNKNOWN_MIRROR
        await wait_for(lambda: mirror_state(destination, "audit", 0) == "MIRRORING", timeout=20)
        described = (await admin.describe_mirrors())[MIRROR]
    by_partition = {(p.topic, p.partition): p for p in described.partitions}
    assert sorted(by_partition) == [("audit", 0), ("orders", 0), ("orders", 1)]
    for p in range(2):
        detail = by_partition[("orders", p)]
        assert detail.state == "MIRRORING" and detail.last_mirror_epoch == -1
        assert detail.destination_offset == 3 and detail.lag == 0


async def test_mirror_rpcs_need_cluster_mirror_permissions(start_cluster: Any) -> None:
    """With an authorizer and no ACLs the anonymous principal may not manage mirrors."""
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster(
        "backup",
        configs={**MIRROR_CONFIGS, "authorizer.class.name": "StandardAuthorizer"},
    )
    async with Admin(bootstrap=destination.bootstrap) as admin:
        create = admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        assert await _code(create) == ErrorCode.MIRROR_AUTHORIZATION_FAILED
        add = admin.add_topics_to_mirror(MIRROR, ["orders"])
        assert await _code(add) == ErrorCode.MIRROR_AUTHORIZATION_FAILED
        assert await _code(admin.delete_mirror(MIRROR)) == ErrorCode.MIRROR_AUTHORIZATION_FAILED
        assert await admin.list_mirrors() == []
    assert await asyncio.to_thread(broker_of(destination).store.mirrors) == {}
