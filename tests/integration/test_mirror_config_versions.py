"""DescribeConfigs v5 and IncrementalAlterConfigs v2, the versions KIP-1279 added so that a
client sees mirror config support in ApiVersions: advertised, serving MIRROR resources;
the older versions keep serving topics and refuse a MIRROR resource with INVALID_REQUEST
(a resource type they do not know), leaving the mirror's configs untouched. Real clients on
the older versions: ``test_broker_admin_kafka_python.py``, ``test_alter_configs_aiokafka.py``."""

from __future__ import annotations

from typing import Any

from helpers.mirrors import MIRROR

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.cluster import RequestSpec
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.messages.constants import (
    CONFIG_RESOURCE_TYPE_MIRROR,
    DESCRIBE_CONFIGS_MIRROR_VERSION,
    INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION,
)

DESCRIBE_CONFIGS = 32
INCREMENTAL_ALTER_CONFIGS = 44
TOPIC_TYPE = 2
GROUPS_INCLUDE = "mirror.groups.include"


def describe(version: int, resource_type: int, name: str) -> RequestSpec:
    resource = {"resource_type": resource_type, "resource_name": name, "configuration_keys": None}
    fields = {"resources": [resource], "include_synonyms": False, "include_documentation": False}
    return RequestSpec(DESCRIBE_CONFIGS, fields, versions=(version,))


def alter(version: int, resource_type: int, name: str, config: str, value: str) -> RequestSpec:
    op = {"name": config, "config_operation": 0, "value": value}
    resource = {"resource_type": resource_type, "resource_name": name, "configs": [op]}
    fields = {"resources": [resource], "validate_only": False}
    return RequestSpec(INCREMENTAL_ALTER_CONFIGS, fields, versions=(version,))


async def groups_include(admin: Admin) -> str:
    response = await admin.cluster.send_to_any(
        describe(DESCRIBE_CONFIGS_MIRROR_VERSION, CONFIG_RESOURCE_TYPE_MIRROR, MIRROR)
    )
    (result,) = response.results
    assert result.error_code == ErrorCode.NONE
    return str(next(c.value for c in result.configs if c.name == GROUPS_INCLUDE))


async def test_new_versions_are_advertised_and_gate_mirror_resources(
    start_cluster: Any,
) -> None:
    source = await start_cluster("source")
    destination = await start_cluster("backup")
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
        await admin.cluster.refresh_metadata([])
        node = next(iter(admin.cluster.brokers))
        advertised = (await admin.cluster.connection(node)).api_versions
        assert advertised[DESCRIBE_CONFIGS] == (1, DESCRIBE_CONFIGS_MIRROR_VERSION)
        assert advertised[INCREMENTAL_ALTER_CONFIGS] == (
            0,
            INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION,
        )
        before = await groups_include(admin)

        old_describe = await admin.cluster.send_to_any(
            describe(4, CONFIG_RESOURCE_TYPE_MIRROR, MIRROR)
        )
        assert [r.error_code for r in old_describe.results] == [ErrorCode.INVALID_REQUEST]
        old_alter = await admin.cluster.send_to_any(
            alter(1, CONFIG_RESOURCE_TYPE_MIRROR, MIRROR, GROUPS_INCLUDE, "orders-.*")
        )
        assert [r.error_code for r in old_alter.responses] == [ErrorCode.INVALID_REQUEST]
        assert await groups_include(admin) == before

        new_alter = await admin.cluster.send_to_any(
            alter(
                INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION,
                CONFIG_RESOURCE_TYPE_MIRROR,
                MIRROR,
                GROUPS_INCLUDE,
                "orders-.*",
            )
        )
        assert [r.error_code for r in new_alter.responses] == [ErrorCode.NONE]
        assert await groups_include(admin) == "orders-.*"

        for version in (1, 4, DESCRIBE_CONFIGS_MIRROR_VERSION):
            topic = await admin.cluster.send_to_any(describe(version, TOPIC_TYPE, "orders"))
            assert [r.error_code for r in topic.results] == [ErrorCode.NONE]
        for version in (0, 1, INCREMENTAL_ALTER_CONFIGS_MIRROR_VERSION):
            changed = await admin.cluster.send_to_any(
                alter(version, TOPIC_TYPE, "orders", "retention.ms", str(1000 + version))
            )
            assert [r.error_code for r in changed.responses] == [ErrorCode.NONE]
