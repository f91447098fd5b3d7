"""A config altered through one broker is described by every other broker at once.

Brokers re-read the metadata store twice a second; a DescribeConfigs answered from a
snapshot taken before the alter showed the old value to a script (or the chaos explorer)
that altered and then described through another broker."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode

CREATE_TOPICS, DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 19, 32, 44
TOPIC, BROKER = 2, 4
ROUNDS = 10


async def _send(
    conn: BrokerConnection, api_key: int, version: int, fields: Mapping[str, Any]
) -> Any:
    return await conn.send(build_request(api_key, version, fields))


async def _alter(conn: BrokerConnection, resource: tuple[int, str], name: str, value: str) -> None:
    response = await _send(
        conn,
        INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": resource[0],
                    "resource_name": resource[1],
                    "configs": [{"name": name, "config_operation": 0, "value": value}],
                }
            ],
            "validate_only": False,
        },
    )
    assert [r.error_code for r in response.responses] == [ErrorCode.NONE]


async def _described(conn: BrokerConnection, resource: tuple[int, str], name: str) -> str:
    response = await _send(
        conn,
        DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {
                    "resource_type": resource[0],
                    "resource_name": resource[1],
                    "configuration_keys": [name],
                }
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    (result,) = response.results
    assert result.error_code == ErrorCode.NONE
    (entry,) = result.configs
    return str(entry.value)


async def test_an_alter_through_one_broker_is_described_by_another_at_once(
    start_cluster: Any,
) -> None:
    cluster = await start_cluster(brokers=2)
    first, second = (
        BrokerConnection(b.host, b.port, client_id="read-your-writes") for b in cluster.brokers
    )
    await first.connect()
    await second.connect()
    try:
        created = await _send(
            first,
            CREATE_TOPICS,
            7,
            {
                "topics": [
                    {
                        "name": "ryw",
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": timedelta(seconds=5),
                "validate_only": False,
            },
        )
        assert created.topics[0].error_code == ErrorCode.NONE
        seen = []
        for i in range(ROUNDS):
            topic_value = str(3_600_000 + i)
            await _alter(first, (TOPIC, "ryw"), "retention.ms", topic_value)
            default_value = str(7_200_000 + i)
            await _alter(first, (BROKER, ""), "log.retention.ms", default_value)
            seen.append(
                (
                    await _described(second, (TOPIC, "ryw"), "retention.ms") == topic_value,
                    await _described(second, (BROKER, ""), "log.retention.ms") == default_value,
                )
            )
        assert seen == [(True, True)] * ROUNDS
    finally:
        await first.close()
        await second.close()
