"""``mirrorsim configs --entity-type users|clients`` manages client quotas as
kafka-configs.sh does: set, describe (one entity, every entity of a type, defaults, the
user and client-id pair), delete; quotas and SCRAM credentials of one user side by side;
bad input is one line and exit 1."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mirrorsim.cli.main import cli
from mirrorsim.client import Admin, quota_entity


async def _invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, cli, list(args))


async def test_quotas_are_set_described_and_deleted(start_cluster: Any) -> None:
    cluster = await start_cluster()
    common = ["configs", "--bootstrap-server", cluster.bootstrap]
    alice = [*common, "--entity-type", "users", "--entity-name", "alice"]
    app = [*common, "--entity-type", "clients", "--entity-name", "app"]
    pair = [*alice, "--entity-type", "clients", "--entity-name", "app"]
    default_client = [*common, "--entity-type", "clients", "--entity-default"]

    set_alice = await _invoke(
        *alice, "--alter", "--add-config", "producer_byte_rate=1024,request_percentage=12.5"
    )
    assert set_alice.exit_code == 0, set_alice.output
    assert set_alice.output == "Completed updating config for user alice.\n"
    for command, config in (
        (app, "consumer_byte_rate=2048"),
        (pair, "producer_byte_rate=4096"),
        (default_client, "producer_byte_rate=512"),
    ):
        result = await _invoke(*command, "--alter", "--add-config", config)
        assert result.exit_code == 0, result.output

    described = await _invoke(*alice, "--describe")
    assert described.output == (
        "Quota configs for user-principal 'alice' are "
        "producer_byte_rate=1024.0, request_percentage=12.5\n"
    )
    both = await _invoke(*pair, "--describe")
    assert both.output == (
        "Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=4096.0\n"
    )
    every_client = await _invoke(*common, "--entity-type", "clients", "--describe")
    assert sorted(every_client.output.splitlines()) == [
        "Quota configs for client-id 'app' are consumer_byte_rate=2048.0",
        "Quota configs for the default client-id are producer_byte_rate=512.0",
    ]

    deleted = await _invoke(*alice, "--alter", "--delete-config", "request_percentage")
    assert deleted.exit_code == 0, deleted.output
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        quotas = await admin.describe_client_quotas()
    assert quotas[quota_entity(user="alice")] == {"producer_byte_rate": 1024.0}
    assert quotas[quota_entity(client_id=None)] == {"producer_byte_rate": 512.0}


async def test_a_user_shows_its_quotas_and_its_scram_credentials(start_cluster: Any) -> None:
    cluster = await start_cluster()
    user = ["configs", "--bootstrap-server", cluster.bootstrap, "--entity-type", "users"]
    created = await _invoke(
        *user,
        "--entity-name",
        "bob",
        "--alter",
        "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=bob-secret],consumer_byte_rate=100",
    )
    assert created.exit_code == 0, created.output
    assert created.output == "Completed updating config for user bob.\n"
    described = await _invoke(*user, "--entity-name", "bob", "--describe")
    assert described.output == (
        "Quota configs for user-principal 'bob' are consumer_byte_rate=100.0\n"
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=8192\n"
    )
    default_user = await _invoke(
        *user, "--entity-default", "--alter", "--add-config", "producer_byte_rate=10"
    )
    assert default_user.output == "Completed updating config for the default user.\n"
    shown = await _invoke(*user, "--entity-default", "--describe")
    assert (
        shown.output == "Quota configs for the default user-principal are producer_byte_rate=10.0\n"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--entity-type", "clients", "--entity-name", "a", "--alter", "--add-config", "x_rate=1"],
        [
            "--entity-type",
            "clients",
            "--entity-name",
            "a",
            "--alter",
            "--add-config",
            "producer_byte_rate=fast",
        ],
        [
            "--entity-type",
            "clients",
            "--entity-name",
            "a",
            "--alter",
            "--add-config",
            "producer_byte_rate=-1",
        ],
        [
            "--entity-type",
            "clients",
            "--entity-name",
            "a",
            "--alter",
            "--add-config",
            "producer_byte_rate=1.5",
        ],
        ["--entity-type", "clients", "--entity-type", "topics", "--describe"],
        [
            "--entity-type",
            "users",
            "--entity-default",
            "--alter",
            "--add-config",
            "SCRAM-SHA-256=[password=x]",
        ],
    ],
)
async def test_bad_quota_input_is_one_line_and_exit_1(start_cluster: Any, args: list[str]) -> None:
    cluster = await start_cluster()
    result = await _invoke("configs", "--bootstrap-server", cluster.bootstrap, *args)
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert "Traceback" not in result.output
