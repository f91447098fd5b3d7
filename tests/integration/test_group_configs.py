"""GROUP config resources (type 32) as Kafka 4.x serves them: DescribeConfigs lists every
group config with its default for any group id, IncrementalAlterConfigs sets and deletes
per-group values that another broker then describes (GROUP_CONFIG source), and Kafka's
checks answer INVALID_CONFIG (unknown name, out of bounds, not a value of the type)
or INVALID_REQUEST (empty group id) without storing anything; a principal without
DESCRIBE_CONFIGS / ALTER_CONFIGS on the group gets GROUP_AUTHORIZATION_FAILED;
``mirrorsim configs --entity-type groups`` manages them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from click.testing import CliRunner

from mirrorsim.cli.main import cli
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AclBinding,
    AclOperation,
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ResourceType,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError

GROUP = ConfigResource(ConfigResourceType.GROUP, "orders-app")


async def test_group_configs_are_described_set_and_deleted(start_cluster: Any) -> None:
    cluster = await start_cluster(brokers=2)
    first, second = (b.bootstrap for b in cluster.brokers)
    async with Admin(bootstrap=first) as admin:
        described = (await admin.describe_configs([GROUP]))[GROUP]
        assert described["consumer.session.timeout.ms"].value == "45000"
        assert described["consumer.session.timeout.ms"].source == ConfigSource.DEFAULT_CONFIG
        assert described["share.auto.offset.reset"].value == "latest"
        assert len(described) == 10
        ops = [
            AlterConfigOp("consumer.session.timeout.ms", "50000"),
            AlterConfigOp("share.isolation.level", "read_committed"),
        ]
        (await admin.incremental_alter_configs({GROUP: ops})).all()
    async with Admin(bootstrap=second) as admin:
        described = (await admin.describe_configs([GROUP]))[GROUP]
        entry = described["consumer.session.timeout.ms"]
        assert (entry.value, entry.source) == ("50000", ConfigSource.GROUP_CONFIG)
        assert described["share.isolation.level"].value == "read_committed"
        delete = AlterConfigOp("share.isolation.level", None, AlterConfigOpType.DELETE)
        (await admin.incremental_alter_configs({GROUP: [delete]})).all()
        described = (await admin.describe_configs([GROUP]))[GROUP]
    assert described["share.isolation.level"].source == ConfigSource.DEFAULT_CONFIG
    assert described["consumer.session.timeout.ms"].value == "50000"


@pytest.mark.parametrize(
    ("name", "value", "code"),
    [
        ("no.such.config", "1", ErrorCode.INVALID_CONFIG),
        ("consumer.session.timeout.ms", "1000", ErrorCode.INVALID_CONFIG),
        ("consumer.heartbeat.interval.ms", "many", ErrorCode.INVALID_CONFIG),
        ("share.session.timeout.ms", "45000", None),
        ("share.heartbeat.interval.ms", "15000", None),
        ("share.isolation.level", "serializable", ErrorCode.INVALID_CONFIG),
    ],
)
async def test_refused_values_store_nothing(
    start_cluster: Any, name: str, value: str, code: ErrorCode | None
) -> None:
    cluster = await start_cluster()
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        outcome = await admin.incremental_alter_configs({GROUP: [AlterConfigOp(name, value)]})
        error = outcome[GROUP]
        assert (None if error is None else error.code) == code
        described = (await admin.describe_configs([GROUP]))[GROUP]
    own = {n for n, e in described.items() if e.source == ConfigSource.GROUP_CONFIG}
    assert own == (set() if code else {name})


async def test_the_bounds_are_inclusive_and_an_empty_group_id_is_refused(
    start_cluster: Any,
) -> None:
    cluster = await start_cluster()
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        ops = [
            AlterConfigOp("consumer.session.timeout.ms", "45000"),
            AlterConfigOp("consumer.heartbeat.interval.ms", "15000"),
        ]
        assert (await admin.incremental_alter_configs({GROUP: ops}))[GROUP] is None
        too_long = [AlterConfigOp("streams.heartbeat.interval.ms", "15000")]
        fine = await admin.incremental_alter_configs({GROUP: too_long})
        assert fine[GROUP] is None
        empty = ConfigResource(ConfigResourceType.GROUP, "")
        refused = await admin.incremental_alter_configs({empty: ops})
        assert refused[empty] is not None and refused[empty].code == ErrorCode.INVALID_REQUEST


async def test_group_configs_need_the_groups_config_permissions(start_cluster: Any) -> None:
    users = "admin:admin-secret,reader:reader-secret"
    cluster = await start_cluster(
        configs={
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.users": users,
            "authorizer.class.name": "mirrorsim.AclAuthorizer",
            "super.users": "User:admin;User:ANONYMOUS",
        }
    )
    port = cluster.brokers[0].server.endpoints()["SASL_PLAINTEXT"][1]
    sasl = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "reader",
        "sasl.password": "reader-secret",
    }
    async with Admin(bootstrap=f"127.0.0.1:{port}", config=sasl) as reader:
        with pytest.raises(KafkaError) as denied:
            await reader.describe_configs([GROUP])
        assert denied.value.code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        async with Admin(bootstrap=cluster.bootstrap) as root:
            grant = AclBinding(
                ResourceType.GROUP, GROUP.name, "User:reader", AclOperation.DESCRIBE_CONFIGS
            )
            (await root.create_acls([grant])).all()
        assert "consumer.session.timeout.ms" in (await reader.describe_configs([GROUP]))[GROUP]
        refused = await reader.incremental_alter_configs(
            {GROUP: [AlterConfigOp("consumer.session.timeout.ms", "50000")]}
        )
        assert refused[GROUP] is not None
        assert refused[GROUP].code == ErrorCode.GROUP_AUTHORIZATION_FAILED


async def test_mirrorsim_configs_manages_a_groups_configs(start_cluster: Any) -> None:
    cluster = await start_cluster()
    group = ["configs", "--bootstrap-server", cluster.bootstrap, "--entity-type", "groups"]
    named = [*group, "--entity-name", "orders-app"]
    runner = CliRunner()
    altered = await asyncio.to_thread(
        runner.invoke,
        cli,
        [*named, "--alter", "--add-config", "consumer.session.timeout.ms=50000"],
    )
    assert altered.output == "Completed updating config for group orders-app.\n"
    described = await asyncio.to_thread(runner.invoke, cli, [*named, "--describe"])
    assert described.output == (
        "Dynamic configs for group orders-app are:\n"
        "  consumer.session.timeout.ms=50000 sensitive=false\n"
    )
    refused = await asyncio.to_thread(
        runner.invoke, cli, [*named, "--alter", "--add-config", "consumer.session.timeout.ms=1"]
    )
    assert refused.exit_code == 1
    assert len(refused.output.strip().splitlines()) == 1
