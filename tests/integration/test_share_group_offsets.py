"""DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets against an
in-process broker, with share state made by confluent-kafka's ``ShareConsumer``: start
offsets and lag after consumption, a reset to the earliest offset re-read by the next
consumer, both refused while the group has a member, deleted offsets starting over from
``share.auto.offset.reset``, DeleteGroups taking the state with the group, the group types
that are refused, the ACLs each API needs and the coordinator that serves them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from helpers.mirrors import produce
from helpers.share_consumers import SHARE_CONFIGS, ShareReader, read_from_earliest

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AclBinding,
    AclOperation,
    NewTopic,
    ResourceType,
    SharePartitionOffsetInfo,
    TopicPartition,
)
from mirrorsim.client.cluster import RequestSpec
from mirrorsim.protocol.errors import ErrorCode, KafkaError

TOPIC, GROUP = "orders", "billing"
PARTITIONS, RECORDS = 2, 10
TIMEOUT_S = 60.0
DESCRIBE, ALTER, DELETE = 90, 91, 92
SECURED = {
    **SHARE_CONFIGS,
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.users": "admin:admin-secret,alice:alice-secret",
    "authorizer.class.name": "mirrorsim.AclAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
}


@pytest.fixture
async def readers() -> AsyncIterator[list[ShareReader]]:
    """Share consumers still running when the test ends, closed off the event loop."""
    started: list[ShareReader] = []
    yield started
    for reader in started:
        await asyncio.to_thread(reader.close)


async def setup(bootstrap: str) -> None:
    async with Admin(bootstrap=bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, PARTITIONS)])).all()
    await read_from_earliest(bootstrap, GROUP)
    await produce(bootstrap, TOPIC, RECORDS, partitions=PARTITIONS)


async def read_all(
    bootstrap: str, wait_for: Any, readers: list[ShareReader], count: int = RECORDS
) -> set[tuple[int, int]]:
    """A member reads ``count`` records and leaves, its acknowledgements sent."""
    reader = ShareReader(bootstrap, GROUP, TOPIC)
    readers.append(reader)
    await wait_for(lambda: len(reader.seen()) >= count, timeout=TIMEOUT_S, message="all read")
    await asyncio.to_thread(reader.close)
    readers.remove(reader)
    return set(reader.seen())


def everything(per_partition: int = RECORDS // PARTITIONS) -> set[tuple[int, int]]:
    return {(p, o) for p in range(PARTITIONS) for o in range(per_partition)}


async def offsets(bootstrap: str) -> dict[TopicPartition, SharePartitionOffsetInfo]:
    async with Admin(bootstrap=bootstrap) as admin:
        return await admin.list_share_group_offsets(GROUP)


def starts(start: int, lag: int | None) -> dict[TopicPartition, SharePartitionOffsetInfo]:
    return {
        TopicPartition(TOPIC, p): SharePartitionOffsetInfo(start, None, lag)
        for p in range(PARTITIONS)
    }


async def test_describe_shows_start_offsets_and_lag(
    start_cluster: Any, wait_for: Any, readers: list[ShareReader]
) -> None:
    cluster = await start_cluster(configs=SHARE_CONFIGS)
    await setup(cluster.bootstrap)
    assert await offsets(cluster.bootstrap) == {}
    assert await read_all(cluster.bootstrap, wait_for, readers) == everything()
    assert await offsets(cluster.bootstrap) == starts(5, 0)
    await produce(cluster.bootstrap, TOPIC, 4, partitions=PARTITIONS)
    assert await offsets(cluster.bootstrap) == starts(5, 2)
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        named = await admin.list_share_group_offsets(GROUP, [TOPIC, "missing"])
        assert named == starts(5, 2)
        response = await admin.cluster.send_to_any(
            RequestSpec(
                DESCRIBE,
                {"groups": [{"group_id": GROUP, "topics": [{"topic_name": "missing"}]}]},
                versions=(0,),
            )
        )
    (group,) = response.groups
    ((missing),) = group.topics
    assert (group.error_code, missing.topic_name, missing.partitions) == (0, "missing", ())


async def test_a_reset_to_earliest_is_read_again_by_the_next_member(
    start_cluster: Any, wait_for: Any, readers: list[ShareReader]
) -> None:
    cluster = await start_cluster(configs=SHARE_CONFIGS)
    await setup(cluster.bootstrap)
    await read_all(cluster.bootstrap, wait_for, readers)
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        altered = await admin.alter_share_group_offsets(
            GROUP,
            {TopicPartition(TOPIC, 0): 0, TopicPartition(TOPIC, 1): 0, TopicPartition(TOPIC, 9): 0},
        )
    assert altered.failed.keys() == {TopicPartition(TOPIC, 9)}
    assert altered.failed[TopicPartition(TOPIC, 9)].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert await offsets(cluster.bootstrap) == starts(0, 5)
    assert await read_all(cluster.bootstrap, wait_for, readers) == everything()
    assert await offsets(cluster.bootstrap) == starts(5, 0)


async def test_offsets_are_not_changed_while_the_group_has_a_member(
    start_cluster: Any, wait_for: Any, readers: list[ShareReader]
) -> None:
    cluster = await start_cluster(configs=SHARE_CONFIGS)
    await setup(cluster.bootstrap)
    reader = ShareReader(cluster.bootstrap, GROUP, TOPIC)
    readers.append(reader)
    await wait_for(lambda: len(reader.seen()) >= RECORDS, timeout=TIMEOUT_S, message="all read")
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        with pytest.raises(KafkaError) as altering:
            await admin.alter_share_group_offsets(GROUP, {TopicPartition(TOPIC, 0): 0})
        with pytest.raises(KafkaError) as deleting:
            await admin.delete_share_group_offsets(GROUP, [TOPIC])
        deleted_group = await admin.delete_share_groups([GROUP])
    assert altering.value.code == deleting.value.code == ErrorCode.NON_EMPTY_GROUP
    assert deleted_group.failed[GROUP].code == ErrorCode.NON_EMPTY_GROUP


async def test_deleted_offsets_start_over_from_the_auto_offset_reset(
    start_cluster: Any, wait_for: Any, readers: list[ShareReader]
) -> None:
    cluster = await start_cluster(configs=SHARE_CONFIGS)
    await setup(cluster.bootstrap)
    await read_all(cluster.bootstrap, wait_for, readers)
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        deleted = await admin.delete_share_group_offsets(GROUP, [TOPIC, "missing"])
        again = await admin.delete_share_group_offsets(GROUP, [TOPIC])
    assert deleted.failed.keys() == {"missing"}
    assert deleted.failed["missing"].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert again.failed[TOPIC].message == "There is no offset information to delete."
    assert await offsets(cluster.bootstrap) == {}
    assert await read_all(cluster.bootstrap, wait_for, readers) == everything()


async def test_deleting_the_group_deletes_its_share_state(
    start_cluster: Any, wait_for: Any, readers: list[ShareReader]
) -> None:
    cluster = await start_cluster(configs=SHARE_CONFIGS)
    await setup(cluster.bootstrap)
    await read_all(cluster.bootstrap, wait_for, readers)
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        assert [g.group_id for g in await admin.list_share_groups()] == [GROUP]
        (await admin.delete_share_groups([GROUP])).all()
        assert await admin.list_share_groups() == []
        assert await admin.list_share_group_offsets(GROUP) == {}
    assert await read_all(cluster.bootstrap, wait_for, readers) == everything()


async def test_other_group_types_are_refused_and_an_unknown_group_is_created(
    start_cluster: Any,
) -> None:
    cluster = await start_cluster()
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, PARTITIONS)])).all()
        (await admin.alter_consumer_group_offsets("classic", {TopicPartition(TOPIC, 0): 1})).all()
        with pytest.raises(KafkaError) as altering:
            await admin.alter_share_group_offsets("classic", {TopicPartition(TOPIC, 0): 0})
        with pytest.raises(KafkaError) as deleting:
            await admin.delete_share_group_offsets("nobody", [TOPIC])
        (await admin.alter_share_group_offsets("fresh", {TopicPartition(TOPIC, 1): 3})).all()
        listed = await admin.list_share_groups()
        fresh = await admin.list_share_group_offsets("fresh")
    assert altering.value.code == ErrorCode.GROUP_ID_NOT_FOUND
    assert altering.value.message == "Group classic is not a share group."
    assert (deleting.value.code, deleting.value.message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nobody not found.",
    )
    assert [(g.group_id, g.state) for g in listed] == [("fresh", "Empty")]
    assert fresh == {TopicPartition(TOPIC, 1): SharePartitionOffsetInfo(3, None, 0)}


async def test_each_api_needs_its_acls(start_cluster: Any) -> None:
    cluster = await start_cluster(configs=SECURED)
    port = cluster.brokers[0].server.endpoints()["SASL_PLAINTEXT"][1]

    def admin(user: str) -> Admin:
        config = {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": f"{user}-secret",
        }
        return Admin(bootstrap=f"127.0.0.1:{port}", config=config)

    async def grant(resource: ResourceType, name: str, operation: AclOperation) -> None:
        async with admin("admin") as root:
            (await root.create_acls([AclBinding(resource, name, "User:alice", operation)])).all()

    async with admin("admin") as root:
        (await root.create_topics([NewTopic(TOPIC, 1, 1)])).all()
        (await root.alter_share_group_offsets(GROUP, {TopicPartition(TOPIC, 0): 0})).all()

    async def codes(alice: Admin) -> Mapping[str, int]:
        """Each API's first error code (the group's, else the first partition's/topic's)."""
        described = (await alice.cluster.send_to_any(_describe_spec([TOPIC]))).groups[0]
        every = (await alice.cluster.send_to_any(_describe_spec(None))).groups[0]
        altered = await alice.cluster.send_to_any(
            RequestSpec(
                ALTER,
                {
                    "group_id": GROUP,
                    "topics": [
                        {
                            "topic_name": TOPIC,
                            "partitions": [{"partition_index": 0, "start_offset": 0}],
                        }
                    ],
                },
            )
        )
        deleted = await alice.cluster.send_to_any(
            RequestSpec(DELETE, {"group_id": GROUP, "topics": [{"topic_name": TOPIC}]})
        )
        return {
            "describe": described.error_code or described.topics[0].partitions[0].error_code,
            "describe all": every.error_code or len(every.topics),
            "alter": altered.error_code or altered.responses[0].partitions[0].error_code,
            "delete": deleted.error_code or deleted.responses[0].error_code,
        }

    group_denied = dict.fromkeys(
        ("describe", "describe all", "alter", "delete"), ErrorCode.GROUP_AUTHORIZATION_FAILED
    )
    async with admin("alice") as alice:
        assert await codes(alice) == group_denied
        await grant(ResourceType.GROUP, GROUP, AclOperation.READ)
        assert await codes(alice) == {
            "describe": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "describe all": 0,  # the topic is left out
            "alter": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "delete": ErrorCode.GROUP_AUTHORIZATION_FAILED,
        }
        await grant(ResourceType.GROUP, GROUP, AclOperation.DELETE)
        await grant(ResourceType.TOPIC, TOPIC, AclOperation.DESCRIBE)
        assert await codes(alice) == {
            "describe": 0,
            "describe all": 1,
            "alter": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "delete": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }
        await grant(ResourceType.TOPIC, TOPIC, AclOperation.READ)
        assert await codes(alice) == {"describe": 0, "describe all": 1, "alter": 0, "delete": 0}


def _describe_spec(topics: list[str] | None) -> RequestSpec:
    wanted = None if topics is None else [{"topic_name": t, "partitions": [0]} for t in topics]
    return RequestSpec(DESCRIBE, {"groups": [{"group_id": GROUP, "topics": wanted}]})


async def test_only_the_group_coordinator_answers(start_cluster: Any) -> None:
    cluster = await start_cluster(brokers=2)
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        await admin.cluster.refresh_metadata([])
        answers = {
            node: await admin.cluster.send_to_node(node, _describe_spec(None))
            for node in admin.cluster.brokers
        }
    codes = sorted(int(response.groups[0].error_code) for response in answers.values())
    assert codes == [ErrorCode.NONE, ErrorCode.NOT_COORDINATOR]
