"""Share group membership on the wire against an in-process broker: ShareGroupHeartbeat
and ShareGroupDescribe v1 (assignments by topic id, a partition shared once members
outnumber partitions, leaving), how ListGroups, DescribeGroups and DeleteGroups see a
share group, and the ACLs both APIs need."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any

import pytest

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import AclBinding, AclOperation, NewTopic, ResourceType
from mirrorsim.client.cluster import RequestSpec
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.acl import AclOperation as WireAclOperation
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode

METADATA, DESCRIBE_GROUPS, LIST_GROUPS, CREATE_TOPICS, DELETE_GROUPS = 3, 15, 16, 19, 42
SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE = 76, 77
GROUP, TOPIC = "share-app", "orders"
GROUP_OPERATIONS = ("READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS")
SECURED = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.users": "admin:admin-secret,alice:alice-secret",
    "authorizer.class.name": "mirrorsim.AclAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
}


@pytest.fixture
async def conn(start_cluster: Any) -> AsyncIterator[BrokerConnection]:
    cluster = await start_cluster(configs={"auto.create.topics.enable": False})
    broker = cluster.brokers[0]
    connection = BrokerConnection(broker.host, broker.port, client_id="share-test")
    await connection.connect()
    yield connection
    await connection.close()


async def send(
    conn: BrokerConnection, api_key: int, version: int, fields: Mapping[str, Any]
) -> Any:
    return await conn.send(build_request(api_key, version, fields))


async def heartbeat(
    conn: BrokerConnection, member_id: str, epoch: int, topics: list[str] | None = None
) -> Any:
    return await send(conn, SHARE_GROUP_HEARTBEAT, 1, heartbeat_fields(member_id, epoch, topics))


def heartbeat_fields(member_id: str, epoch: int, topics: list[str] | None) -> dict[str, Any]:
    return {
        "group_id": GROUP,
        "member_id": member_id,
        "member_epoch": epoch,
        "rack_id": None,
        "subscribed_topic_names": topics,
    }


async def describe(conn: BrokerConnection, group_id: str = GROUP) -> Any:
    fields = {"group_ids": [group_id], "include_authorized_operations": True}
    (group,) = (await send(conn, SHARE_GROUP_DESCRIBE, 1, fields)).groups
    return group


def assigned(response: Any) -> dict[uuid.UUID, set[int]]:
    return {t.topic_id: set(t.partitions) for t in response.assignment.topic_partitions}


async def create_topic(conn: BrokerConnection, wait_for: Any) -> uuid.UUID:
    """A two-partition topic, once the broker's metadata view has it and the broker
    coordinates the group."""
    topic = {
        "name": TOPIC,
        "num_partitions": 2,
        "replication_factor": 1,
        "assignments": [],
        "configs": [],
    }
    fields = {"topics": [topic], "timeout": timedelta(seconds=5), "validate_only": False}
    (created,) = (await send(conn, CREATE_TOPICS, 7, fields)).topics
    assert created.error_code == ErrorCode.NONE

    async def ready() -> bool:
        metadata = await send(
            conn,
            METADATA,
            12,
            {
                "topics": [{"topic_id": None, "name": TOPIC}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        described = await describe(conn)
        return (
            metadata.topics[0].error_code == ErrorCode.NONE
            and described.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        )

    await wait_for(ready, timeout=10.0, message="topic visible and group coordinated")
    return created.topic_id


async def test_members_join_share_partitions_and_leave(
    conn: BrokerConnection, wait_for: Any
) -> None:
    topic_id = await create_topic(conn, wait_for)
    a, b, c = (str(uuid.uuid4()) for _ in range(3))

    joined = await heartbeat(conn, a, 0, [TOPIC])
    assert joined.error_code == ErrorCode.NONE
    assert (joined.member_id, joined.member_epoch) == (a, 1)
    assert joined.heartbeat_interval == timedelta(milliseconds=5000)
    assert assigned(joined) == {topic_id: {0, 1}}
    unchanged = await heartbeat(conn, a, 1)
    assert (unchanged.member_epoch, unchanged.assignment) == (1, None)

    second = await heartbeat(conn, b, 0, [TOPIC])
    third = await heartbeat(conn, c, 0, [TOPIC])
    assert (second.member_epoch, third.member_epoch) == (2, 3)
    caught_up = {m: await heartbeat(conn, m, e) for m, e in ((a, 1), (b, 2))}
    assert all(r.member_epoch == 3 for r in caught_up.values())

    group = await describe(conn)
    assert group.error_code == ErrorCode.NONE
    assert (group.group_state, group.group_epoch, group.assignment_epoch) == ("Stable", 3, 3)
    assert group.assignor_name == "simple"
    assert group.authorized_operations == sum(
        1 << int(WireAclOperation[name]) for name in GROUP_OPERATIONS
    )  # no authorizer: everything a group supports
    holders: dict[int, int] = {}
    for member in group.members:
        assert member.member_epoch == 3 and member.subscribed_topic_names == (TOPIC,)
        assert member.client_id == "share-test"
        (partitions,) = member.assignment.topic_partitions
        assert (partitions.topic_id, partitions.topic_name) == (topic_id, TOPIC)
        for p in partitions.partitions:
            holders[p] = holders.get(p, 0) + 1
    assert holders == {0: 2, 1: 2}  # three members on two partitions: each shared by two

    for member in (a, b, c):
        left = await heartbeat(conn, member, -1)
        assert (left.error_code, left.member_epoch) == (ErrorCode.NONE, -1)
    empty = await describe(conn)
    assert (empty.group_state, empty.members) == ("Empty", ())
    assert (await heartbeat(conn, a, 3)).error_code == ErrorCode.UNKNOWN_MEMBER_ID


async def test_list_describe_and_delete_groups_see_a_share_group(
    conn: BrokerConnection, wait_for: Any
) -> None:
    await create_topic(conn, wait_for)
    member = str(uuid.uuid4())
    assert (await heartbeat(conn, member, 0, [TOPIC])).error_code == ErrorCode.NONE

    async def listed(types: list[str]) -> Any:
        fields = {"states_filter": [], "types_filter": types}
        return await send(conn, LIST_GROUPS, 5, fields)

    (share,) = (await listed(["share"])).groups
    assert (share.group_id, share.group_type, share.protocol_type, share.group_state) == (
        GROUP,
        "share",
        "share",
        "Stable",
    )
    assert (await listed(["consumer", "classic"])).groups == ()

    fields = {"groups": [GROUP], "include_authorized_operations": False}
    (classic,) = (await send(conn, DESCRIBE_GROUPS, 6, fields)).groups
    assert classic.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert classic.error_message == f"Group {GROUP} is not a classic group."

    async def delete() -> int:
        (result,) = (await send(conn, DELETE_GROUPS, 2, {"groups_names": [GROUP]})).results
        return int(result.error_code)

    assert await delete() == ErrorCode.NON_EMPTY_GROUP
    assert (await heartbeat(conn, member, -1)).error_code == ErrorCode.NONE
    assert await delete() == ErrorCode.NONE
    missing = await describe(conn)
    assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert missing.error_message == f"Group {GROUP} not found."


async def test_heartbeat_needs_read_on_the_group_and_describe_on_its_topics(
    start_cluster: Any,
) -> None:
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
            binding = AclBinding(resource, name, "User:alice", operation)
            (await root.create_acls([binding])).all()

    async with admin("admin") as root:
        (await root.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    join = RequestSpec(
        SHARE_GROUP_HEARTBEAT, heartbeat_fields(str(uuid.uuid4()), 0, [TOPIC]), versions=(1,)
    )
    describing = RequestSpec(
        SHARE_GROUP_DESCRIBE,
        {"group_ids": [GROUP], "include_authorized_operations": True},
        versions=(1,),
    )
    async with admin("alice") as alice:
        denied = await alice.cluster.send_to_any(describing)
        assert denied.groups[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        response = await alice.cluster.send_to_any(join)
        assert response.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        await grant(ResourceType.GROUP, GROUP, AclOperation.READ)
        response = await alice.cluster.send_to_any(join)
        assert response.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        await grant(ResourceType.TOPIC, TOPIC, AclOperation.DESCRIBE)
        response = await alice.cluster.send_to_any(join)
        assert (response.error_code, response.member_epoch) == (ErrorCode.NONE, 1)
        (group,) = (await alice.cluster.send_to_any(describing)).groups
        assert group.error_code == ErrorCode.NONE  # READ implies DESCRIBE
        read_and_describe = (1 << int(WireAclOperation.READ)) | (
            1 << int(WireAclOperation.DESCRIBE)
        )
        assert group.authorized_operations == read_and_describe
