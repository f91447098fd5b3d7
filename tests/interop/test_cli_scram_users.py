"""``mirrorsim configs --entity-type users`` as kafka-configs.sh takes it: a SCRAM user is
created from the command line, described, and then logs in with a real client
(aiokafka, SASL/SCRAM-SHA-256); bad input is one line and exit 1."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from click.testing import CliRunner, Result

from mirrorsim.cli.main import cli

pytestmark = pytest.mark.interop
BROKER = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"}


async def _invoke(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, cli, list(args))


async def test_a_user_created_on_the_command_line_logs_in(start_cluster: Any) -> None:
    cluster = await start_cluster(configs=BROKER)
    endpoints = cluster.brokers[0].server.endpoints()
    plaintext = f"127.0.0.1:{endpoints['PLAINTEXT'][1]}"
    sasl = f"127.0.0.1:{endpoints['SASL_PLAINTEXT'][1]}"
    common = ["configs", "--bootstrap-server", plaintext, "--entity-type", "users"]
    created = await _invoke(
        *common,
        "--entity-name",
        "dave",
        "--alter",
        "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=dave-secret]",
    )
    assert created.exit_code == 0, created.output
    assert created.output == "Completed updating config for user dave.\n"
    described = await _invoke(*common, "--entity-name", "dave", "--describe")
    assert described.output == (
        "SCRAM credential configs for user-principal 'dave' are SCRAM-SHA-256=iterations=8192\n"
    )
    producer = AIOKafkaProducer(
        bootstrap_servers=sasl,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="dave",
        sasl_plain_password="dave-secret",
    )
    await producer.start()
    try:
        sent = await producer.send_and_wait("dave-topic", b"hello")
    finally:
        await producer.stop()
    assert sent.offset == 0

    deleted = await _invoke(
        *common, "--entity-name", "dave", "--alter", "--delete-config", "SCRAM-SHA-256"
    )
    assert deleted.exit_code == 0, deleted.output
    gone = await _invoke(*common, "--entity-name", "dave", "--describe")
    assert gone.exit_code == 1
    assert "Traceback" not in gone.output


@pytest.mark.parametrize(
    "add_config",
    [
        "SCRAM-SHA-1=[password=x]",
        "SCRAM-SHA-256=[iterations=8192]",
        "SCRAM-SHA-256=[iterations=many,password=x]",
        "SCRAM-SHA-256=[iterations=100,password=x]",
    ],
)
async def test_bad_credentials_are_one_line_and_exit_1(start_cluster: Any, add_config: str) -> None:
    cluster = await start_cluster()
    result = await _invoke(
        "configs",
        "--bootstrap-server",
        cluster.bootstrap,
        "--entity-type",
        "users",
        "--entity-name",
        "erin",
        "--alter",
        "--add-config",
        add_config,
    )
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert "Traceback" not in result.output
