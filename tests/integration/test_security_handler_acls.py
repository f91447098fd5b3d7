"""The ACL checks of the group, offset, config, partition and transaction APIs: each is
denied with Kafka's error code, then allowed by the ACL Kafka asks for."""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AclBinding,
    AclOperation,
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
    OffsetSpec,
    ResourceType,
    TopicPartition,
)
from mirrorsim.client.cluster import RequestSpec
from mirrorsim.protocol.errors import ErrorCode, KafkaError

SECURED = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.users": "admin:admin-secret,alice:alice-secret,bob:bob-secret",
    "authorizer.class.name": "mirrorsim.AclAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
    "group.initial.rebalance.delay.ms": 0,
}
FAST = {"retry.backoff.ms": "10", "retry.backoff.max.ms": "50", "default.api.timeout.ms": "3000"}
TOPIC = "orders"
TP = TopicPartition(TOPIC, 0)
LIST_OFFSETS = 2
OFFSET_FOR_LEADER_EPOCH = 23


def sasl(user: str) -> dict[str, str]:
    return {
        **FAST,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": f"{user}-secret",
    }


class Secured:
    def __init__(self, bootstrap: str, plaintext: str) -> None:
        self.bootstrap = bootstrap
        self.plaintext = plaintext

    def admin(self, user: str) -> Admin:
        return Admin(bootstrap=self.bootstrap, config=sasl(user))

    async def grant(self, user: str, rtype: ResourceType, name: str, op: AclOperation) -> None:
        async with self.admin("admin") as root:
            (await root.create_acls([AclBinding(rtype, name, f"User:{user}", op)])).all()


@pytest.fixture
async def secured(start_cluster: Any) -> AsyncIterator[Secured]:
    cluster = await start_cluster("primary", brokers=1, configs=SECURED)
    endpoints = cluster.brokers[0].server.endpoints()
    env = Secured(
        f"127.0.0.1:{endpoints['SASL_PLAINTEXT'][1]}", f"127.0.0.1:{endpoints['PLAINTEXT'][1]}"
    )
    async with env.admin("admin") as root:
        (await root.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    yield env


async def raised_code(call: Any) -> ErrorCode:
    with pytest.raises(KafkaError) as raised:
        await call
    return raised.value.code


def partition_request(api_key: int, version: int, partition: dict[str, Any]) -> RequestSpec:
    """ListOffsets and OffsetForLeaderEpoch for partition 0, sent as a consumer would."""
    epochs = api_key == OFFSET_FOR_LEADER_EPOCH
    fields = {
        "replica_id": -1,
        "topics": [{"topic" if epochs else "name": TOPIC, "partitions": [partition]}],
    }
    if not epochs:
        fields["isolation_level"] = 0
    return RequestSpec(api_key, fields, versions=(version,))


async def test_list_offsets_and_offset_for_leader_epoch_need_describe_topic(
    secured: Secured,
) -> None:
    requests = [
        partition_request(
            LIST_OFFSETS,
            7,
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": OffsetSpec.LATEST},
        ),
        partition_request(
            OFFSET_FOR_LEADER_EPOCH,
            4,
            {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0},
        ),
    ]
    async with secured.admin("alice") as alice:
        for request in requests:
            response = await alice.cluster.send_to_any(request)
            code = response.topics[0].partitions[0].error_code
            assert code == ErrorCode.TOPIC_AUTHORIZATION_FAILED

        await secured.grant("alice", ResourceType.TOPIC, TOPIC, AclOperation.DESCRIBE)
        for request in requests:
            response = await alice.cluster.send_to_any(request)
            assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
        assert (await alice.list_offsets({TP: OffsetSpec.LATEST}))[TP].offset == 0


async def test_offset_for_leader_epoch_also_accepts_cluster_action(secured: Secured) -> None:
    """Replicas ask with CLUSTER_ACTION on the cluster and no topic grant, as in Kafka."""
    epoch_request = partition_request(
        OFFSET_FOR_LEADER_EPOCH, 4, {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}
    )
    await secured.grant("bob", ResourceType.CLUSTER, "kafka-cluster", AclOperation.CLUSTER_ACTION)
    async with secured.admin("bob") as bob:
        response = await bob.cluster.send_to_any(epoch_request)
        assert response.topics[0].partitions[0].error_code == ErrorCode.NONE


async def test_create_partitions_needs_alter_and_delete_records_needs_delete(
    secured: Secured,
) -> None:
    async with secured.admin("alice") as alice:
        await secured.grant("alice", ResourceType.TOPIC, TOPIC, AclOperation.DESCRIBE)
        denied = await alice.create_partitions({TOPIC: 2})
        assert denied[TOPIC] is not None
        assert denied[TOPIC].code is ErrorCode.TOPIC_AUTHORIZATION_FAILED
        code = await raised_code(alice.delete_records({TP: 0}))
        assert code is ErrorCode.TOPIC_AUTHORIZATION_FAILED

        await secured.grant("alice", ResourceType.TOPIC, TOPIC, AclOperation.ALTER)
        await secured.grant("alice", ResourceType.TOPIC, TOPIC, AclOperation.DELETE)
        (await alice.create_partitions({TOPIC: 2})).all()
        assert await alice.delete_records({TP: 0}) == {TP: 0}


async def test_configs_need_describe_configs_and_alter_configs(secured: Secured) -> None:
    topic = ConfigResource(ConfigResourceType.TOPIC, TOPIC)
    broker = ConfigResource(ConfigResourceType.BROKER, "1")
    retention = {topic: [AlterConfigOp("retention.ms", "60000")]}
    async with secured.admin("alice") as alice:
        assert (
            await raised_code(alice.describe_configs([topic]))
            is ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
        assert (
            await raised_code(alice.describe_configs([broker]))
            is ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        )
        await secured.grant("alice", ResourceType.TOPIC, TOPIC, AclOperation.DESCRIBE_CONFIGS)
        assert "retention.ms" in (await alice.describe_configs([topic]))[topic]
        denied = await alice.incremental_alter_configs(retention)
        assert denied[topic] is not None
        assert denied[topic].code is ErrorCode.TOPIC_AUTHORIZATION_FAILED

        await secured.grant("alice", ResourceType.TOPIC, TOPIC, AclOperation.ALTER_CONFIGS)
        (await alice.incremental_alter_configs(retention)).all()
        assert (await alice.describe_configs([topic]))[topic]["retention.ms"].value == "60000"


async def test_mirror_configs_follow_the_cluster_mirror_acls(secured: Secured) -> None:
    mirror = ConfigResource(ConfigResourceType.MIRROR, "my-mirror")
    change = {mirror: [AlterConfigOp("bootstrap.servers", "127.0.0.1:1")]}
    async with secured.admin("bob") as bob:
        assert (
            await raised_code(bob.describe_configs([mirror]))
            is ErrorCode.MIRROR_AUTHORIZATION_FAILED
        )
        denied = await bob.incremental_alter_configs(change)
        assert denied[mirror] is not None
        assert denied[mirror].code is ErrorCode.MIRROR_AUTHORIZATION_FAILED

        await secured.grant("bob", ResourceType.CLUSTER_MIRROR, "*", AclOperation.DESCRIBE_CONFIGS)
        await secured.grant(
            "bob", ResourceType.CLUSTER_MIRROR, "my-mirror", AclOperation.ALTER_CONFIGS
        )
        described = await described_code(bob, mirror)
        assert described is not ErrorCode.MIRROR_AUTHORIZATION_FAILED
        altered = (await bob.incremental_alter_configs(change))[mirror]
        assert altered is None or altered.code is not ErrorCode.MIRROR_AUTHORIZATION_FAILED


async def described_code(admin: Admin, resource: ConfigResource) -> ErrorCode:
    try:
        await admin.describe_configs([resource])
    except KafkaError as exc:
        return exc.code
    return ErrorCode.NONE


async def test_offset_commit_needs_read_on_group_and_topic(secured: Secured) -> None:
    async with secured.admin("alice") as alice:
        # without DESCRIBE on the group even FindCoordinator is refused, as in Kafka
        code = await raised_code(alice.alter_consumer_group_offsets("billing", {TP: 0}))
        assert code is ErrorCode.GROUP_AUTHORIZATION_FAILED

        await secured.grant("alice", ResourceType.GROUP, "billing", AclOperation.READ)
        denied = await alice.alter_consumer_group_offsets("billing", {TP: 0})
        assert denied[TP] is not None
        assert denied[TP].code is ErrorCode.TOPIC_AUTHORIZATION_FAILED

        await secured.grant("alice", ResourceType.TOPIC, TOPIC, AclOperation.READ)
        (await alice.alter_consumer_group_offsets("billing", {TP: 0})).all()
        assert (await alice.list_consumer_group_offsets("billing", [TP]))[TP].offset == 0


async def test_group_describe_list_and_delete_follow_group_acls(secured: Secured) -> None:
    async with secured.admin("admin") as root:
        for group in ("billing", "audit"):
            (await root.alter_consumer_group_offsets(group, {TP: 0})).all()
    await secured.grant("alice", ResourceType.GROUP, "billing", AclOperation.READ)
    async with secured.admin("alice") as alice, secured.admin("bob") as bob:
        for call in (
            bob.list_consumer_group_offsets("billing", [TP]),
            bob.describe_consumer_groups(["billing"]),
        ):
            assert await raised_code(call) is ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert [g.group_id for g in await bob.list_consumer_groups()] == []
        # READ implies DESCRIBE, not DELETE
        assert [g.group_id for g in await alice.list_consumer_groups()] == ["billing"]
        assert (await alice.describe_consumer_groups(["billing"]))["billing"].group_id == "billing"
        denied = (await alice.delete_consumer_groups(["billing"]))["billing"]
        assert denied is not None
        assert denied.code is ErrorCode.GROUP_AUTHORIZATION_FAILED

        await secured.grant("alice", ResourceType.GROUP, "billing", AclOperation.DELETE)
        (await alice.delete_consumer_groups(["billing"])).all()
        await secured.grant("bob", ResourceType.CLUSTER, "kafka-cluster", AclOperation.DESCRIBE)
        assert [g.group_id for g in await bob.list_consumer_groups()] == ["audit"]


def init_producer_id(transactional_id: str) -> RequestSpec:
    return RequestSpec(
        22,
        {
            "transactional_id": transactional_id,
            "transaction_timeout": datetime.timedelta(seconds=10),
            "producer_id": -1,
            "producer_epoch": -1,
        },
        versions=(4,),
    )


async def test_transactions_need_write_on_the_transactional_id(
    secured: Secured, wait_for: Any
) -> None:
    add_partitions = RequestSpec(
        24,
        {
            "v3_and_below_transactional_id": "tx",
            "v3_and_below_producer_id": 0,
            "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}],
        },
        versions=(3,),
    )
    end_txn = RequestSpec(
        26,
        {"transactional_id": "tx", "producer_id": 0, "producer_epoch": 0, "committed": True},
        versions=(3,),
    )
    denied = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    async with secured.admin("alice") as alice:
        assert (await alice.cluster.send_to_any(init_producer_id("tx"))).error_code == denied
        response = await alice.cluster.send_to_any(add_partitions)
        result = response.results_by_topic_v3_and_below[0].results_by_partition[0]
        assert result.partition_error_code == denied
        assert (await alice.cluster.send_to_any(end_txn)).error_code == denied

        await secured.grant("alice", ResourceType.TRANSACTIONAL_ID, "tx", AclOperation.WRITE)

        async def initialized() -> bool:
            response = await alice.cluster.send_to_any(init_producer_id("tx"))
            assert response.error_code != denied
            return bool(response.error_code == ErrorCode.NONE)

        await wait_for(initialized, message="InitProducerId allowed")
        assert (await alice.cluster.send_to_any(end_txn)).error_code != denied


async def test_transactional_offsets_need_the_transactional_id_then_the_group(
    secured: Secured,
) -> None:
    add_offsets = RequestSpec(
        25,
        {"transactional_id": "tx", "producer_id": 0, "producer_epoch": 0, "group_id": "billing"},
        versions=(3,),
    )
    offset_commit = RequestSpec(
        28,
        {
            "transactional_id": "tx",
            "group_id": "billing",
            "producer_id": 0,
            "producer_epoch": 0,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 0,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
        versions=(3,),
    )

    async def codes(admin: Admin) -> tuple[int, int]:
        added = await admin.cluster.send_to_any(add_offsets)
        committed = await admin.cluster.send_to_any(offset_commit)
        return added.error_code, committed.topics[0].partitions[0].error_code

    async with secured.admin("alice") as alice:
        denied_id = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert await codes(alice) == (denied_id, denied_id)
        await secured.grant("alice", ResourceType.TRANSACTIONAL_ID, "tx", AclOperation.WRITE)
        denied_group = ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert await codes(alice) == (denied_group, denied_group)
        await secured.grant("alice", ResourceType.GROUP, "billing", AclOperation.READ)
        authorization_codes = {denied_id, denied_group}
        assert not set(await codes(alice)) & authorization_codes


async def test_write_txn_markers_need_cluster_action(secured: Secured) -> None:
    markers = RequestSpec(
        27,
        {
            "markers": [
                {
                    "producer_id": 7,
                    "producer_epoch": 0,
                    "transaction_result": True,
                    "topics": [{"name": TOPIC, "partition_indexes": [0]}],
                    "coordinator_epoch": 0,
                }
            ]
        },
        versions=(1,),
    )
    async with secured.admin("alice") as alice:
        response = await alice.cluster.send_to_any(markers)
        code = response.markers[0].topics[0].partitions[0].error_code
        assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    async with Admin(bootstrap=secured.plaintext, config=FAST) as broker_principal:
        response = await broker_principal.cluster.send_to_any(markers)
        assert response.markers[0].topics[0].partitions[0].error_code == ErrorCode.NONE
