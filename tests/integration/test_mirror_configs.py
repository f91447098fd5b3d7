"""The MIRROR config resource (type 64) through DescribeConfigs/IncrementalAlterConfigs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers.mirrors import MIRROR, MIRROR_CONFIGS

from mirrorsim.cli.main import cli
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
)
from mirrorsim.coordinator.sync.topics import DEFAULT_TOPIC_PROPERTIES_EXCLUDE
from mirrorsim.protocol.errors import ErrorCode, KafkaError

RESOURCE = ConfigResource(ConfigResourceType.MIRROR, MIRROR)
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required password="s3cret";'


@pytest.fixture
async def clusters(start_cluster: Any) -> tuple[Any, Any]:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
    return source, destination


async def invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, cli, list(args))


async def _describe(admin: Admin) -> dict[str, Any]:
    return (await admin.describe_configs([RESOURCE]))[RESOURCE]


async def _alter_error(admin: Admin, *ops: AlterConfigOp) -> ErrorCode | None:
    error = (await admin.incremental_alter_configs({RESOURCE: list(ops)}))[RESOURCE]
    return None if error is None else error.code


async def test_describe_shows_the_spec_defaults(clusters: tuple[Any, Any]) -> None:
    source, destination = clusters
    async with Admin(bootstrap=destination.bootstrap) as admin:
        entries = await _describe(admin)
    assert list(entries) == [
        "bootstrap.servers",
        "mirror.topic.properties.exclude",
        "mirror.groups.include",
        "mirror.acl.include",
        "security.protocol",
    ]
    assert entries["bootstrap.servers"].value == source.bootstrap
    assert entries["bootstrap.servers"].source != ConfigSource.DEFAULT_CONFIG
    defaults = {n: e.value for n, e in entries.items() if e.source == ConfigSource.DEFAULT_CONFIG}
    assert defaults == {
        "mirror.topic.properties.exclude": DEFAULT_TOPIC_PROPERTIES_EXCLUDE,
        "mirror.groups.include": ".*",
        "mirror.acl.include": "*",
        "security.protocol": None,
    }


async def test_alter_set_append_and_delete(clusters: tuple[Any, Any]) -> None:
    _, destination = clusters
    async with Admin(bootstrap=destination.bootstrap) as admin:
        assert (
            await _alter_error(
                admin,
                AlterConfigOp("mirror.groups.include", "app-.*"),
                AlterConfigOp("request.timeout.ms", "15000"),
            )
            is None
        )
        assert (
            await _alter_error(
                admin, AlterConfigOp("mirror.groups.include", "ops-.*", AlterConfigOpType.APPEND)
            )
            is None
        )
        entries = await _describe(admin)
        assert entries["mirror.groups.include"].value == "app-.*,ops-.*"
        assert entries["mirror.groups.include"].source != ConfigSource.DEFAULT_CONFIG
        assert entries["request.timeout.ms"].value == "15000"

        deleted = AlterConfigOp("mirror.groups.include", None, AlterConfigOpType.DELETE)
        assert await _alter_error(admin, deleted) is None
        entries = await _describe(admin)
    assert entries["mirror.groups.include"].value == ".*"
    assert entries["mirror.groups.include"].source == ConfigSource.DEFAULT_CONFIG


async def test_sensitive_values_are_never_described(clusters: tuple[Any, Any]) -> None:
    _, destination = clusters
    secrets = {"sasl.jaas.config": JAAS, "ssl.key.password": "pw", "sasl.password": "pw"}
    async with Admin(bootstrap=destination.bootstrap) as admin:
        ops = [AlterConfigOp(k, v) for k, v in secrets.items()]
        ops.append(AlterConfigOp("sasl.mechanism", "PLAIN"))
        assert await _alter_error(admin, *ops) is None
        entries = await _describe(admin)
    for name in secrets:
        assert (entries[name].value, entries[name].is_sensitive) == (None, True), name
    assert (entries["sasl.mechanism"].value, entries["sasl.mechanism"].is_sensitive) == (
        "PLAIN",
        False,
    )
    stored = broker_configs(destination)
    assert stored["sasl.jaas.config"] == JAAS


def broker_configs(cluster: Any) -> dict[str, str]:
    return dict(cluster.brokers[0].store.mirrors()[MIRROR].configs)


@pytest.mark.parametrize(
    "op",
    [
        AlterConfigOp("no.such.config", "x"),
        AlterConfigOp("bootstrap.servers", ""),
        AlterConfigOp("bootstrap.servers", "no-port"),
        AlterConfigOp("bootstrap.servers", None, AlterConfigOpType.DELETE),
        AlterConfigOp("security.protocol", "CARRIER_PIGEON"),
        AlterConfigOp("mirror.groups.include", "app-(.*"),
        AlterConfigOp("mirror.topic.properties.exclude", "[unclosed"),
        AlterConfigOp("mirror.acl.include", "NoSuchType;*"),
        AlterConfigOp("request.timeout.ms", "soon"),
        AlterConfigOp("security.protocol", "SSL", AlterConfigOpType.APPEND),
        AlterConfigOp("sasl.mechanism", None),
    ],
    ids=lambda op: f"{op.name}-{op.op.name}-{op.value}",
)
async def test_invalid_changes_are_refused_and_change_nothing(
    clusters: tuple[Any, Any], op: AlterConfigOp
) -> None:
    _, destination = clusters
    before = broker_configs(destination)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        assert await _alter_error(admin, op) is ErrorCode.INVALID_CONFIG
    assert broker_configs(destination) == before


async def test_validate_only_changes_nothing(clusters: tuple[Any, Any]) -> None:
    _, destination = clusters
    before = broker_configs(destination)
    change = {RESOURCE: [AlterConfigOp("mirror.groups.include", "app-.*")]}
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.incremental_alter_configs(change, validate_only=True)).all()
        bad = {RESOURCE: [AlterConfigOp("no.such.config", "x")]}
        refused = (await admin.incremental_alter_configs(bad, validate_only=True))[RESOURCE]
    assert refused is not None and refused.code is ErrorCode.INVALID_CONFIG
    assert broker_configs(destination) == before


async def test_unknown_mirror(clusters: tuple[Any, Any]) -> None:
    _, destination = clusters
    unknown = ConfigResource(ConfigResourceType.MIRROR, "nope")
    async with Admin(bootstrap=destination.bootstrap) as admin:
        with pytest.raises(KafkaError) as raised:
            await admin.describe_configs([unknown])
        altered = await admin.incremental_alter_configs(
            {unknown: [AlterConfigOp("mirror.groups.include", "x")]}
        )
    assert raised.value.code is ErrorCode.UNKNOWN_MIRROR
    assert altered[unknown] is not None and altered[unknown].code is ErrorCode.UNKNOWN_MIRROR


async def test_configs_cli_alters_and_describes_a_mirror(clusters: tuple[Any, Any]) -> None:
    source, destination = clusters
    common = ["--bootstrap-server", destination.bootstrap, "--entity-type", "mirrors"]
    common += ["--entity-name", MIRROR]
    altered = await invoke(
        "configs", *common, "--alter", "--add-config", f"bootstrap.servers={source.bootstrap}"
    )
    assert altered.exit_code == 0, altered.output
    assert altered.output == f"Completed updating config for mirror {MIRROR}.\n"

    altered = await invoke(
        "configs", *common, "--alter", "--add-config", f"sasl.jaas.config={JAAS}"
    )
    assert altered.exit_code == 0, altered.output
    described = await invoke("configs", *common, "--describe")
    assert described.exit_code == 0, described.output
    assert described.output.splitlines() == [
        f"Dynamic configs for mirror {MIRROR} are:",
        f"  bootstrap.servers={source.bootstrap} sensitive=false",
        "  sasl.jaas.config=null sensitive=true",
    ]

    deleted = await invoke("configs", *common, "--alter", "--delete-config", "sasl.jaas.config")
    assert deleted.output == f"Completed updating config for mirror {MIRROR}.\n"
    assert "sasl.jaas.config" not in broker_configs(destination)

    refused = await invoke("configs", *common, "--alter", "--add-config", "bogus=1")
    assert refused.exit_code != 0
    assert "INVALID_CONFIG" in refused.output
