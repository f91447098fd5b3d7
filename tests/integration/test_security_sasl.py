"""SASL PLAIN and SCRAM on a SASL_PLAINTEXT listener, through the project's client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kio.schema.metadata.v12.request import MetadataRequest

from mirrorsim.broker.auth.credentials import upsert_scram_credential
from mirrorsim.broker.auth.scram import scram_credential
from mirrorsim.client import Admin
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.client.sasl import SaslAuthenticationError, SaslSettings

SASL_CONFIGS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.users": "alice:alice-secret,admin:admin-secret",
}


async def sasl_broker(start_cluster: Any, configs: dict[str, str] | None = None) -> Any:
    cluster = await start_cluster("primary", brokers=1, configs={**SASL_CONFIGS, **(configs or {})})
    return cluster.brokers[0]


def sasl_port(broker: Any) -> int:
    return broker.server.endpoints()["SASL_PLAINTEXT"][1]


def add_scram_user(broker: Any, user: str, password: str) -> None:
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        upsert_scram_credential(
            broker.store, user, mechanism, scram_credential(mechanism, password)
        )


async def connect(port: int, mechanism: str, user: str, password: str) -> BrokerConnection:
    conn = BrokerConnection(
        "127.0.0.1", port, client_id="t", sasl=SaslSettings(mechanism, user, password)
    )
    await conn.connect()
    return conn


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_valid_credentials_authenticate(start_cluster: Any, mechanism: str) -> None:
    broker = await sasl_broker(start_cluster)
    add_scram_user(broker, "alice", "alice-secret")
    conn = await connect(sasl_port(broker), mechanism, "alice", "alice-secret")
    try:
        assert conn.api_versions
    finally:
        await conn.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_wrong_password_is_refused(start_cluster: Any, mechanism: str) -> None:
    broker = await sasl_broker(start_cluster)
    add_scram_user(broker, "alice", "alice-secret")
    with pytest.raises(SaslAuthenticationError):
        await connect(sasl_port(broker), mechanism, "alice", "wrong")


async def test_unknown_scram_user_is_refused(start_cluster: Any) -> None:
    broker = await sasl_broker(start_cluster)
    with pytest.raises(SaslAuthenticationError):
        await connect(sasl_port(broker), "SCRAM-SHA-256", "mallory", "x")


async def test_request_before_authentication_closes_the_connection(start_cluster: Any) -> None:
    broker = await sasl_broker(start_cluster)
    conn = BrokerConnection("127.0.0.1", sasl_port(broker), client_id="t")
    await conn.connect()
    try:
        with pytest.raises(ConnectionError):
            await conn.send(
                MetadataRequest(
                    topics=None,
                    allow_auto_topic_creation=False,
                    include_topic_authorized_operations=False,
                )
            )
        await asyncio.wait_for(conn.wait_closed(), 5)
    finally:
        await conn.close()


async def test_admin_reaches_the_sasl_listener_and_is_advertised_it(start_cluster: Any) -> None:
    broker = await sasl_broker(start_cluster)
    config = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
    }
    async with Admin(bootstrap=f"127.0.0.1:{sasl_port(broker)}", config=config) as admin:
        cluster = await admin.describe_cluster()
        assert [(n.host, n.port) for n in cluster.brokers] == [("127.0.0.1", sasl_port(broker))]
