"""kafka-mirrors with ``--command-config`` SASL credentials against a destination whose
authorizer holds the spec's ``kafka-acls --cluster-mirror`` example grants: mirror-admin
manages my-mirror only, monitor may only look at every mirror."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers.mirror_cli_security import DESTINATION, USERS, properties

from mirrorsim.broker.handlers.base import HANDLERS
from mirrorsim.cli.kafka_mirrors import main as kafka_mirrors
from mirrorsim.cli.main import cli as mirrorsim_cli
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.messages.constants import MirrorApiKey

pytestmark = pytest.mark.skipif(
    MirrorApiKey.ADD_TOPICS_TO_MIRROR not in HANDLERS,
    reason="the broker does not serve the mirror RPCs yet",
)

DENIED = "Error: MIRROR_AUTHORIZATION_FAILED"


async def run_cli(command: Any, argv: list[str]) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, command, argv)


async def test_cluster_mirror_grants_allow_and_deny_kafka_mirrors_commands(
    start_cluster: Callable[..., Any], tmp_path: Path
) -> None:
    source = await start_cluster("primary")
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic("my-topic", 1, 1)])).all()
    destination = await start_cluster("backup", configs=DESTINATION)
    bootstrap = f"127.0.0.1:{destination.brokers[0].server.endpoints()['EXTERNAL'][1]}"
    mirror_config = tmp_path / "mirror.properties"
    mirror_config.write_text(f"bootstrap.servers={source.bootstrap}\n")
    config = {user: str(properties(tmp_path, user)) for user in USERS}

    async def acls(*args: str) -> None:
        argv = ["acls", "--bootstrap-server", bootstrap, "--command-config", config["admin"]]
        result = await run_cli(mirrorsim_cli, [*argv, "--add", *args])
        assert result.exit_code == 0, result.output

    async def mirrors(user: str, *args: str) -> Result:
        argv = ["--bootstrap-server", bootstrap, "--command-config", config[user], *args]
        return await run_cli(kafka_mirrors, argv)

    await acls(
        "--cluster-mirror", "my-mirror",
        "--operation", "Create", "--operation", "Alter", "--operation", "Describe",
        "--operation", "Delete", "--operation", "AlterConfigs", "--operation", "DescribeConfigs",
        "--allow-principal", "User:mirror-admin",
    )  # fmt: skip
    await acls(
        "--cluster-mirror", "*",
        "--operation", "Describe", "--operation", "DescribeConfigs",
        "--allow-principal", "User:monitor",
    )  # fmt: skip

    create = ["--create", "--mirror-config", str(mirror_config), "--mirror"]
    result = await mirrors("monitor", *create, "my-mirror")
    assert result.exit_code == 1
    assert result.stderr.startswith(DENIED)
    result = await mirrors("mirror-admin", *create, "other-mirror")
    assert result.exit_code == 1
    assert result.stderr.startswith(DENIED)
    result = await mirrors("mirror-admin", *create, "my-mirror")
    assert (result.exit_code, result.output) == (0, "Created mirror my-mirror\n")

    for user in ("monitor", "mirror-admin"):
        result = await mirrors(user, "--list")
        assert result.exit_code == 0, result.stderr
        assert [line.split()[0] for line in result.output.splitlines()[1:]] == ["my-mirror"]
        result = await mirrors(user, "--describe", "--mirror", "my-mirror")
        assert result.exit_code == 0, result.stderr

    alter = ["--alter", "--mirror-config", str(mirror_config), "--mirror", "my-mirror"]
    result = await mirrors("monitor", *alter)
    assert result.exit_code == 1
    assert result.stderr.startswith(DENIED)

    result = await mirrors("monitor", "--delete", "--mirror", "my-mirror")
    assert result.exit_code == 1
    assert result.stderr.startswith(DENIED)
    result = await mirrors("mirror-admin", "--delete", "--mirror", "my-mirror")
    assert (result.exit_code, result.stderr) == (0, "")
