"""Every API the broker checks, from one table: a principal without the permission gets
Kafka's error code, and once granted the very same request succeeds.

Each row has its own principal (``row<N>``), so the grants of one row never help another;
``given`` is granted before the first attempt (what the request needs besides the
permission under test), ``needed`` between the two attempts. The table is the one in
docs/security.md.
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import AclBinding, AclOperation, NewTopic, ResourceType
from mirrorsim.client.cluster import RequestSpec
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records import Record, build_batch

TOPIC = "table"
CLUSTER = "kafka-cluster"
Grant = tuple[ResourceType, str, AclOperation]


@dataclass(frozen=True)
class Row:
    name: str
    api_key: int
    version: int
    fields: Callable[[str], dict[str, Any]]
    """The request for a row's own resources (``suffix`` names its topic, group, ...)."""
    code: Callable[[Any], int]
    denial: ErrorCode
    needed: Callable[[str], list[Grant]]
    given: Callable[[str], list[Grant]] = field(default=lambda s: [])
    success: ErrorCode = ErrorCode.NONE


def _topic(suffix: str) -> str:
    return f"{TOPIC}-{suffix}"


def _produce(suffix: str) -> dict[str, Any]:
    batch = build_batch([Record(0, 1_000, b"k", b"v")])
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout": datetime.timedelta(seconds=10),
        "topic_data": [
            {"name": _topic(suffix), "partition_data": [{"index": 0, "records": batch.data}]}
        ],
    }


def _fetch(suffix: str) -> dict[str, Any]:
    partition = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}
    return {
        "max_wait": datetime.timedelta(milliseconds=10),
        "min_bytes": 0,
        "topics": [{"topic": _topic(suffix), "partitions": [partition]}],
        "forgotten_topics_data": [],
    }


def _list_offsets(suffix: str) -> dict[str, Any]:
    partition = {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
    return {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": _topic(suffix), "partitions": [partition]}],
    }


def _metadata(topic: str) -> dict[str, Any]:
    return {
        "topics": [{"name": topic, "topic_id": None}],
        "allow_auto_topic_creation": True,
        "include_topic_authorized_operations": False,
    }


def _config_resource(suffix: str, configs: list[dict[str, Any]]) -> dict[str, Any]:
    resource = {"resource_type": 2, "resource_name": _topic(suffix), "configs": configs}
    return {"resources": [resource], "validate_only": False}


def _acl(suffix: str) -> dict[str, Any]:
    return {
        "resource_type": int(ResourceType.TOPIC),
        "resource_name": f"other-{suffix}",
        "resource_pattern_type": 3,
        "principal": "User:nobody",
        "host": "*",
        "operation": int(AclOperation.READ),
        "permission_type": 3,
    }


def _topic_grant(op: AclOperation) -> Callable[[str], list[Grant]]:
    return lambda s: [(ResourceType.TOPIC, _topic(s), op)]


def _group_grant(op: AclOperation) -> Callable[[str], list[Grant]]:
    return lambda s: [(ResourceType.GROUP, f"group-{s}", op)]


def _cluster_grant(op: AclOperation) -> Callable[[str], list[Grant]]:
    return lambda s: [(ResourceType.CLUSTER, CLUSTER, op)]


TABLE = [
    Row(
        "Produce",
        0,
        9,
        _produce,
        lambda r: int(r.responses[0].partition_responses[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        _topic_grant(AclOperation.WRITE),
    ),
    Row(
        "Fetch",
        1,
        12,
        _fetch,
        lambda r: int(r.responses[0].partitions[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        _topic_grant(AclOperation.READ),
    ),
    Row(
        "ListOffsets",
        2,
        7,
        _list_offsets,
        lambda r: int(r.topics[0].partitions[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        _topic_grant(AclOperation.DESCRIBE),
    ),
    Row(
        "Metadata",
        3,
        12,
        lambda s: _metadata(_topic(s)),
        lambda r: int(r.topics[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        _topic_grant(AclOperation.DESCRIBE),
    ),
    Row(
        "Metadata (auto-create)",
        3,
        12,
        lambda s: _metadata(f"auto-{s}"),
        lambda r: int(r.topics[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        lambda s: [(ResourceType.TOPIC, f"auto-{s}", AclOperation.CREATE)],
        given=lambda s: [(ResourceType.TOPIC, f"auto-{s}", AclOperation.DESCRIBE)],
    ),
    Row(
        "CreateTopics",
        19,
        7,
        lambda s: {
            "topics": [
                {
                    "name": f"new-{s}",
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout": datetime.timedelta(seconds=10),
            "validate_only": False,
        },
        lambda r: int(r.topics[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        lambda s: [(ResourceType.TOPIC, f"new-{s}", AclOperation.CREATE)],
    ),
    Row(
        "DeleteTopics",
        20,
        6,
        lambda s: {
            "topics": [{"name": _topic(s), "topic_id": None}],
            "timeout": datetime.timedelta(seconds=10),
        },
        lambda r: int(r.responses[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        _topic_grant(AclOperation.DELETE),
    ),
    Row(
        "CreatePartitions",
        37,
        3,
        lambda s: {
            "topics": [{"name": _topic(s), "count": 2, "assignments": None}],
            "timeout": datetime.timedelta(seconds=10),
            "validate_only": False,
        },
        lambda r: int(r.results[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        _topic_grant(AclOperation.ALTER),
    ),
    Row(
        "DeleteRecords",
        21,
        2,
        lambda s: {
            "topics": [{"name": _topic(s), "partitions": [{"partition_index": 0, "offset": 0}]}],
            "timeout": datetime.timedelta(seconds=10),
        },
        lambda r: int(r.topics[0].partitions[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        _topic_grant(AclOperation.DELETE),
    ),
    Row(
        "DescribeConfigs",
        32,
        4,
        lambda s: {
            "resources": [
                {"resource_type": 2, "resource_name": _topic(s), "configuration_keys": None}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
        lambda r: int(r.results[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        _topic_grant(AclOperation.DESCRIBE_CONFIGS),
    ),
    Row(
        "IncrementalAlterConfigs",
        44,
        1,
        lambda s: _config_resource(
            s, [{"name": "retention.ms", "config_operation": 0, "value": "1000"}]
        ),
        lambda r: int(r.responses[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        _topic_grant(AclOperation.ALTER_CONFIGS),
    ),
    Row(
        "AlterConfigs",
        33,
        2,
        lambda s: _config_resource(s, [{"name": "retention.ms", "value": "1000"}]),
        lambda r: int(r.responses[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        _topic_grant(AclOperation.ALTER_CONFIGS),
    ),
    Row(
        "FindCoordinator (group)",
        10,
        4,
        lambda s: {"key_type": 0, "coordinator_keys": [f"group-{s}"]},
        lambda r: int(r.coordinators[0].error_code),
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        _group_grant(AclOperation.DESCRIBE),
    ),
    Row(
        "FindCoordinator (transaction)",
        10,
        4,
        lambda s: {"key_type": 1, "coordinator_keys": [f"txn-{s}"]},
        lambda r: int(r.coordinators[0].error_code),
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        lambda s: [(ResourceType.TRANSACTIONAL_ID, f"txn-{s}", AclOperation.DESCRIBE)],
    ),
    Row(
        "FindCoordinator (mirror)",
        10,
        4,
        lambda s: {"key_type": 3, "coordinator_keys": [f"mirror-{s}"]},
        lambda r: int(r.coordinators[0].error_code),
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        _cluster_grant(AclOperation.CLUSTER_ACTION),
    ),
    Row(
        "OffsetFetch",
        9,
        7,
        lambda s: {"group_id": f"group-{s}", "topics": None, "require_stable": False},
        lambda r: int(r.error_code),
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        _group_grant(AclOperation.DESCRIBE),
    ),
    Row(
        "DescribeGroups",
        15,
        5,
        lambda s: {"groups": [f"group-{s}"], "include_authorized_operations": False},
        lambda r: int(r.groups[0].error_code),
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        _group_grant(AclOperation.DESCRIBE),
    ),
    Row(
        "OffsetCommit",
        8,
        8,
        lambda s: {
            "group_id": f"group-{s}",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": _topic(s),
                    "partitions": [
                        {"partition_index": 0, "committed_offset": 0, "committed_metadata": ""}
                    ],
                }
            ],
        },
        lambda r: int(r.topics[0].partitions[0].error_code),
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        _group_grant(AclOperation.READ),
        given=_topic_grant(AclOperation.READ),
    ),
    Row(
        "DeleteGroups",
        42,
        2,
        lambda s: {"groups_names": [f"group-{s}"]},
        lambda r: int(r.results[0].error_code),
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        _group_grant(AclOperation.DELETE),
        success=ErrorCode.GROUP_ID_NOT_FOUND,
    ),
    Row(
        "InitProducerId (transactional)",
        22,
        4,
        lambda s: {
            "transactional_id": f"txn-{s}",
            "transaction_timeout": datetime.timedelta(seconds=60),
            "producer_id": -1,
            "producer_epoch": -1,
        },
        lambda r: int(r.error_code),
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        lambda s: [(ResourceType.TRANSACTIONAL_ID, f"txn-{s}", AclOperation.WRITE)],
    ),
    Row(
        "CreateAcls",
        30,
        3,
        lambda s: {"creations": [_acl(s)]},
        lambda r: int(r.results[0].error_code),
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        _cluster_grant(AclOperation.ALTER),
    ),
    Row(
        "DescribeAcls",
        29,
        3,
        lambda s: {
            "resource_type_filter": int(ResourceType.ANY),
            "resource_name_filter": None,
            "pattern_type_filter": 1,
            "principal_filter": None,
            "host_filter": None,
            "operation": int(AclOperation.ANY),
            "permission_type": 1,
        },
        lambda r: int(r.error_code),
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        _cluster_grant(AclOperation.DESCRIBE),
    ),
    Row(
        "DescribeUserScramCredentials",
        50,
        0,
        lambda s: {"users": [{"name": f"user-{s}"}]},
        lambda r: int(r.error_code) or int(r.results[0].error_code),
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        _cluster_grant(AclOperation.DESCRIBE),
        success=ErrorCode.RESOURCE_NOT_FOUND,
    ),
    Row(
        "AlterUserScramCredentials",
        51,
        0,
        lambda s: {"deletions": [{"name": f"user-{s}", "mechanism": 1}], "upsertions": []},
        lambda r: int(r.results[0].error_code),
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        _cluster_grant(AclOperation.ALTER),
        success=ErrorCode.RESOURCE_NOT_FOUND,
    ),
    Row(
        "DescribeClientQuotas",
        48,
        1,
        lambda s: {
            "components": [{"entity_type": "user", "match_type": 0, "match": f"user-{s}"}],
            "strict": False,
        },
        lambda r: int(r.error_code),
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        _cluster_grant(AclOperation.DESCRIBE_CONFIGS),
    ),
    Row(
        "AlterClientQuotas",
        49,
        1,
        lambda s: {
            "entries": [
                {
                    "entity": [{"entity_type": "user", "entity_name": f"user-{s}"}],
                    "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}],
                }
            ],
            "validate_only": False,
        },
        lambda r: int(r.entries[0].error_code),
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        _cluster_grant(AclOperation.ALTER_CONFIGS),
    ),
    Row(
        "DescribeTopicPartitions",
        75,
        0,
        lambda s: {
            "topics": [{"name": _topic(s)}],
            "response_partition_limit": 100,
            "cursor": None,
        },
        lambda r: int(r.topics[0].error_code),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        _topic_grant(AclOperation.DESCRIBE),
    ),
    Row(
        "DescribeLogDirs",
        35,
        4,
        lambda s: {"topics": [{"topic": _topic(s), "partitions": [0]}]},
        lambda r: int(r.error_code),
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        _cluster_grant(AclOperation.DESCRIBE),
    ),
    Row(
        "ListPartitionReassignments",
        46,
        0,
        lambda s: {"timeout": datetime.timedelta(seconds=10), "topics": None},
        lambda r: int(r.error_code),
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        _cluster_grant(AclOperation.DESCRIBE),
    ),
    Row(
        "AlterReplicaLogDirs",
        34,
        2,
        lambda s: {
            "dirs": [{"path": "/nowhere", "topics": [{"name": _topic(s), "partitions": [0]}]}]
        },
        lambda r: int(r.results[0].partitions[0].error_code),
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        _cluster_grant(AclOperation.ALTER),
        success=ErrorCode.LOG_DIR_NOT_FOUND,
    ),
]
USERS = [f"row{i}" for i in range(len(TABLE))]
SECURED = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.users": ",".join(f"{u}:{u}-secret" for u in ["admin", *USERS]),
    "authorizer.class.name": "mirrorsim.AclAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
    "group.initial.rebalance.delay.ms": 0,
}
FAST = {"retry.backoff.ms": "10", "retry.backoff.max.ms": "50", "default.api.timeout.ms": "3000"}


def _sasl(user: str) -> dict[str, str]:
    return {
        **FAST,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": f"{user}-secret",
    }


@pytest.fixture
async def secured(start_cluster: Any) -> AsyncIterator[str]:
    cluster = await start_cluster("primary", brokers=1, configs=SECURED)
    endpoints = cluster.brokers[0].server.endpoints()
    bootstrap = f"127.0.0.1:{endpoints['SASL_PLAINTEXT'][1]}"
    async with Admin(bootstrap=bootstrap, config=_sasl("admin")) as root:
        topics = [NewTopic(_topic(str(i)), 1, 1) for i in range(len(TABLE))]
        (await root.create_topics(topics)).all()
    yield bootstrap


async def _grant(bootstrap: str, user: str, grants: list[Grant]) -> None:
    if grants:
        async with Admin(bootstrap=bootstrap, config=_sasl("admin")) as root:
            bindings = [AclBinding(t, n, f"User:{user}", op) for t, n, op in grants]
            (await root.create_acls(bindings)).all()


@pytest.mark.parametrize("index", range(len(TABLE)), ids=[row.name for row in TABLE])
async def test_denied_without_the_permission_and_allowed_with_it(secured: str, index: int) -> None:
    row, user, suffix = TABLE[index], USERS[index], str(index)
    await _grant(secured, user, row.given(suffix))
    request = RequestSpec(row.api_key, row.fields(suffix), versions=(row.version,))
    async with Admin(bootstrap=secured, config=_sasl(user)) as admin:
        denied = await admin.cluster.send_to_any(request)
        assert row.code(denied) == row.denial
        await _grant(secured, user, row.needed(suffix))
        allowed = await admin.cluster.send_to_any(request)
        assert row.code(allowed) == row.success
