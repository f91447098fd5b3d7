"""Admin requests that the stock clients do not send, built version by version with the
project's own connection (topic ids, cluster-wide broker defaults, key types)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any

import pytest
from helpers.live_clusters import produce

from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode

METADATA, FIND_COORDINATOR, CREATE_TOPICS, DELETE_TOPICS = 3, 10, 19, 20
CREATE_ACLS, DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 30, 32, 44
ALTER_REPLICA_LOG_DIRS, DESCRIBE_LOG_DIRS, LIST_PARTITION_REASSIGNMENTS = 34, 35, 46
DESCRIBE_TOPIC_PARTITIONS = 75
TOPIC, BROKER = 2, 4
TIMEOUT = timedelta(seconds=5)


@pytest.fixture
async def conn(start_cluster: Any) -> AsyncIterator[BrokerConnection]:
    cluster = await start_cluster(configs={"auto.create.topics.enable": False})
    broker = cluster.brokers[0]
    connection = BrokerConnection(broker.host, broker.port, client_id="wire-test")
    await connection.connect()
    yield connection
    await connection.close()


async def send(
    conn: BrokerConnection, api_key: int, version: int, fields: Mapping[str, Any]
) -> Any:
    return await conn.send(build_request(api_key, version, fields))


async def create(conn: BrokerConnection, name: str, partitions: int = 1) -> Any:
    response = await send(
        conn,
        CREATE_TOPICS,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout": TIMEOUT,
            "validate_only": False,
        },
    )
    (result,) = response.topics
    assert result.error_code == ErrorCode.NONE
    return result


async def test_create_topics_v7_returns_topic_id_and_configs(conn: BrokerConnection) -> None:
    result = await create(conn, "ids", partitions=2)
    assert isinstance(result.topic_id, uuid.UUID) and result.topic_id.int != 0
    assert result.num_partitions == 2
    assert {c.name for c in result.configs} >= {"retention.ms", "cleanup.policy"}
    assert "mirror.name" not in {c.name for c in result.configs}


@pytest.mark.parametrize("version", [12, 13])
async def test_metadata_by_topic_id_and_unknown_topics(
    conn: BrokerConnection, version: int
) -> None:
    """v13 is Kafka 4.0's (a top-level error code, KIP-1102): a client pinned to 4.0's
    versions sends it without asking ApiVersions first."""
    created = await create(conn, "by-id")
    response = await send(
        conn,
        METADATA,
        version,
        {
            "topics": [
                {"topic_id": created.topic_id, "name": None},
                {"topic_id": None, "name": "missing"},
                {"topic_id": uuid.uuid4(), "name": None},
            ],
            "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": False,
        },
    )
    found, missing, unknown_id = response.topics
    assert getattr(response, "error_code", ErrorCode.NONE) == ErrorCode.NONE
    assert (found.name, found.error_code) == ("by-id", ErrorCode.NONE)
    assert found.partitions[0].leader_epoch == 0
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert unknown_id.error_code == ErrorCode.UNKNOWN_TOPIC_ID


async def test_delete_topics_by_id(conn: BrokerConnection) -> None:
    created = await create(conn, "doomed")
    response = await send(
        conn,
        DELETE_TOPICS,
        6,
        {
            "topics": [
                {"name": None, "topic_id": created.topic_id},
                {"name": None, "topic_id": uuid.uuid4()},
            ],
            "timeout": TIMEOUT,
        },
    )
    deleted, unknown = response.responses
    assert (deleted.name, deleted.error_code) == ("doomed", ErrorCode.NONE)
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_ID


async def test_cluster_wide_broker_default_applies_to_topics(conn: BrokerConnection) -> None:
    await create(conn, "inherits")
    response = await send(
        conn,
        INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": BROKER,
                    "resource_name": "",
                    "configs": [{"name": "log.retention.ms", "config_operation": 0, "value": "42"}],
                },
                {
                    "resource_type": BROKER,
                    "resource_name": "",
                    "configs": [{"name": "broker.id", "config_operation": 0, "value": "7"}],
                },
            ],
            "validate_only": False,
        },
    )
    assert [r.error_code for r in response.responses] == [ErrorCode.NONE, ErrorCode.INVALID_CONFIG]
    described = await send(
        conn,
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": "inherits",
                    "configuration_keys": ["retention.ms"],
                },
                {"resource_type": BROKER, "resource_name": "", "configuration_keys": None},
                {"resource_type": BROKER, "resource_name": "99", "configuration_keys": None},
            ],
            "include_synonyms": True,
            "include_documentation": False,
        },
    )
    topic, defaults, other_broker = described.results
    (retention,) = topic.configs
    assert (retention.value, retention.config_source) == ("42", 3)
    assert [(s.name, s.source) for s in retention.synonyms] == [
        ("log.retention.ms", 3),
        ("log.retention.ms", 5),
    ]
    assert [(c.name, c.value) for c in defaults.configs] == [("log.retention.ms", "42")]
    assert other_broker.error_code == ErrorCode.INVALID_REQUEST


async def test_find_coordinator_batches_and_key_types(conn: BrokerConnection) -> None:
    response = await send(
        conn, FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["a", "b"]}
    )
    assert [(c.key, c.node_id, c.error_code) for c in response.coordinators] == [
        ("a", 1, ErrorCode.NONE),
        ("b", 1, ErrorCode.NONE),
    ]
    bad = await send(conn, FIND_COORDINATOR, 4, {"key_type": 7, "coordinator_keys": ["a"]})
    assert bad.coordinators[0].error_code == ErrorCode.INVALID_REQUEST


async def test_create_acls_rejects_invalid_bindings(conn: BrokerConnection) -> None:
    def creation(**overrides: Any) -> dict[str, Any]:
        return {
            "resource_type": TOPIC,
            "resource_name": "t",
            "resource_pattern_type": 3,
            "principal": "User:a",
            "host": "*",
            "operation": 3,
            "permission_type": 3,
            **overrides,
        }

    response = await send(
        conn,
        CREATE_ACLS,
        3,
        {
            "creations": [
                creation(),
                creation(principal="nobody"),
                creation(operation=1),
                creation(resource_pattern_type=2),
            ]
        },
    )
    assert [r.error_code for r in response.results] == [
        ErrorCode.NONE,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
    ]


async def _describe_partitions(
    conn: BrokerConnection, names: list[str], limit: int, cursor: dict[str, Any] | None = None
) -> Any:
    return await send(
        conn,
        DESCRIBE_TOPIC_PARTITIONS,
        0,
        {
            "topics": [{"name": n} for n in names],
            "response_partition_limit": limit,
            "cursor": cursor,
        },
    )


async def test_describe_topic_partitions_pages_through_topics_in_name_order(
    conn: BrokerConnection,
) -> None:
    """Kafka 3.7's DescribeTopicPartitions (KIP-966): Kafka's Admin client describes
    topics with it, a page of at most ``response_partition_limit`` partitions at a time."""
    await create(conn, "pages-b", partitions=2)
    await create(conn, "pages-a", partitions=3)
    first = await _describe_partitions(conn, ["pages-b", "pages-a", "pages-missing"], 4)
    assert [(t.name, t.error_code) for t in first.topics] == [
        ("pages-a", ErrorCode.NONE),
        ("pages-b", ErrorCode.NONE),
    ]
    assert [len(t.partitions) for t in first.topics] == [3, 1]
    assert first.topics[0].partitions[0].leader_id == 1
    assert first.topics[0].topic_authorized_operations > 0
    assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("pages-b", 1)
    cursor = {"topic_name": "pages-b", "partition_index": 1}
    second = await _describe_partitions(conn, ["pages-b", "pages-a", "pages-missing"], 4, cursor)
    assert [(t.name, t.error_code) for t in second.topics] == [
        ("pages-b", ErrorCode.NONE),
        ("pages-missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert [p.partition_index for p in second.topics[0].partitions] == [1]
    assert second.next_cursor is None
    everything = await _describe_partitions(conn, [], 2000)
    names = [t.name for t in everything.topics]
    assert names == sorted(names) and {"pages-a", "pages-b", "__consumer_offsets"} <= set(names)


@pytest.mark.parametrize("version", [1, 4])
async def test_describe_log_dirs_reports_each_replica_with_its_size_on_disk(
    conn: BrokerConnection, version: int
) -> None:
    """``kafka-log-dirs.sh --describe``: one log directory per broker here, each hosted
    partition with its size; v4 adds the file system's total and usable bytes."""
    await create(conn, "sized", partitions=2)
    await produce(f"{conn.host}:{conn.port}", "sized", 10, tag="sized", partitions=1)
    everything = await send(conn, DESCRIBE_LOG_DIRS, version, {"topics": None})
    (result,) = everything.results
    assert result.error_code == ErrorCode.NONE and result.log_dir.startswith("/")
    sizes = {
        p.partition_index: p.partition_size
        for t in result.topics
        if t.name == "sized"
        for p in t.partitions
    }
    assert sizes[0] > 100 and sizes[1] == 0
    if version >= 4:
        assert result.total_bytes >= result.usable_bytes > 0
    one = await send(
        conn, DESCRIBE_LOG_DIRS, version, {"topics": [{"topic": "sized", "partitions": [1]}]}
    )
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in one.results[0].topics] == [
        ("sized", [1])
    ]


async def test_a_replica_stays_in_the_one_log_dir_and_no_reassignment_is_ever_listed(
    conn: BrokerConnection,
) -> None:
    """AlterReplicaLogDirs to the directory a replica already lives in is Kafka's no-op;
    any other path is LOG_DIR_NOT_FOUND. ListPartitionReassignments lists none."""
    await create(conn, "placed")
    described = await send(conn, DESCRIBE_LOG_DIRS, 4, {"topics": None})
    here = described.results[0].log_dir

    async def moved_to(path: str) -> int:
        response = await send(
            conn,
            ALTER_REPLICA_LOG_DIRS,
            2,
            {"dirs": [{"path": path, "topics": [{"name": "placed", "partitions": [0]}]}]},
        )
        return int(response.results[0].partitions[0].error_code)

    assert await moved_to(here) == ErrorCode.NONE
    assert await moved_to("/elsewhere") == ErrorCode.LOG_DIR_NOT_FOUND
    listed = await send(
        conn,
        LIST_PARTITION_REASSIGNMENTS,
        0,
        {"timeout": TIMEOUT, "topics": [{"name": "placed", "partition_indexes": [0]}]},
    )
    assert (listed.error_code, listed.topics) == (ErrorCode.NONE, ())
