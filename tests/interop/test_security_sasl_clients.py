"""SASL with real clients: aiokafka (PLAIN, SCRAM-SHA-256) and confluent-kafka (PLAIN,
SCRAM-SHA-512) produce and consume on a SASL_PLAINTEXT listener; a wrong password is an
authentication error on the client; a consumer group needs READ on the group."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.conn import create_conn
from aiokafka.errors import GroupAuthorizationFailedError, SaslAuthenticationFailed
from confluent_kafka import Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka import KafkaError as ConfluentError
from confluent_kafka.admin import AdminClient

from mirrorsim.broker.auth.credentials import upsert_scram_credential
from mirrorsim.broker.auth.scram import scram_credential
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import AclBinding, AclOperation, NewTopic, ResourceType

pytestmark = pytest.mark.interop
TOPIC = "sasl-orders"
RECORDS = 20
TIMEOUT_S = 20
PASSWORD = "alice-secret"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_BROKER = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.users": f"alice:{PASSWORD}",
    "group.initial.rebalance.delay.ms": 0,
}
AUTHORIZER = {
    "authorizer.class.name": "mirrorsim.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}


@dataclass(frozen=True, slots=True)
class SaslBroker:
    plaintext: str
    sasl: str


async def start_sasl_broker(start_cluster: Any, configs: dict[str, Any]) -> SaslBroker:
    cluster = await start_cluster("primary", brokers=1, configs=configs)
    broker = cluster.brokers[0]
    for mechanism in SCRAM_MECHANISMS:
        credential = scram_credential(mechanism, PASSWORD, iterations=4096)
        upsert_scram_credential(broker.store, "alice", mechanism, credential)
    endpoints = broker.server.endpoints()
    started = SaslBroker(
        f"127.0.0.1:{endpoints['PLAINTEXT'][1]}", f"127.0.0.1:{endpoints['SASL_PLAINTEXT'][1]}"
    )
    async with Admin(bootstrap=started.plaintext) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    return started


@pytest.fixture
async def sasl_broker(start_cluster: Any) -> AsyncIterator[SaslBroker]:
    yield await start_sasl_broker(start_cluster, SASL_BROKER)


def values(count: int) -> list[bytes]:
    return [f"record-{i}".encode() for i in range(count)]


def aiokafka_sasl(mechanism: str, password: str = PASSWORD) -> dict[str, Any]:
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": password,
    }


async def aiokafka_produce(bootstrap: str, security: dict[str, Any]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", **security)
    await producer.start()
    try:
        for value in values(RECORDS):
            await producer.send_and_wait(TOPIC, value)
    finally:
        await producer.stop()


async def aiokafka_consume(
    bootstrap: str, security: dict[str, Any], group: str | None = None
) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        **security,
    )
    await consumer.start()
    received: list[bytes] = []
    try:
        while len(received) < RECORDS:
            batches = await asyncio.wait_for(consumer.getmany(timeout_ms=500), TIMEOUT_S)
            received += [m.value for batch in batches.values() for m in batch]
    finally:
        await consumer.stop()
    return received


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
async def test_aiokafka_produces_and_consumes_with_sasl(
    sasl_broker: SaslBroker, mechanism: str
) -> None:
    security = aiokafka_sasl(mechanism)
    await aiokafka_produce(sasl_broker.sasl, security)
    assert await aiokafka_consume(sasl_broker.sasl, security) == values(RECORDS)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
async def test_aiokafka_wrong_password_is_an_authentication_error(
    sasl_broker: SaslBroker, mechanism: str
) -> None:
    host, port = sasl_broker.sasl.split(":")
    with pytest.raises(SaslAuthenticationFailed):
        conn = await create_conn(host, int(port), **aiokafka_sasl(mechanism, "wrong"))
        conn.close()


def confluent_sasl(bootstrap: str, mechanism: str, password: str = PASSWORD) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": password,
    }


def confluent_round_trip(config: dict[str, str]) -> list[bytes]:
    """Blocking librdkafka calls; the test runs this in a thread beside the broker."""
    producer = Producer({**config, "acks": "all"})
    for value in values(RECORDS):
        producer.produce(TOPIC, value)
    assert producer.flush(TIMEOUT_S) == 0, "records left undelivered"
    consumer = Consumer({**config, "group.id": "sasl-check", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    received: list[bytes] = []
    try:
        while len(received) < RECORDS:
            message = consumer.poll(TIMEOUT_S)
            assert message is not None, "no record within the timeout"
            assert message.error() is None, message.error()
            received.append(message.value())
    finally:
        consumer.close()
    return received


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
async def test_confluent_kafka_produces_and_consumes_with_sasl(
    sasl_broker: SaslBroker, mechanism: str
) -> None:
    config = confluent_sasl(sasl_broker.sasl, mechanism)
    assert await asyncio.to_thread(confluent_round_trip, config) == values(RECORDS)


def confluent_first_error(config: dict[str, str]) -> int:
    """The first error librdkafka reports through ``error_cb`` while it tries to log in."""
    errors: list[ConfluentError] = []
    producer = Producer({**config, "error_cb": errors.append, "log_level": 0})
    deadline = time.monotonic() + TIMEOUT_S
    while not errors and time.monotonic() < deadline:
        producer.poll(0.1)
    assert errors, "librdkafka reported no error"
    return int(errors[0].code())


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
async def test_confluent_kafka_wrong_password_is_an_authentication_error(
    sasl_broker: SaslBroker, mechanism: str
) -> None:
    config = confluent_sasl(sasl_broker.sasl, mechanism, "wrong")
    code = await asyncio.to_thread(confluent_first_error, config)
    assert code == ConfluentError._AUTHENTICATION


async def test_aiokafka_group_consumer_needs_read_on_the_group(start_cluster: Any) -> None:
    broker = await start_sasl_broker(start_cluster, {**SASL_BROKER, **AUTHORIZER})
    security = aiokafka_sasl("SCRAM-SHA-256")
    async with Admin(bootstrap=broker.plaintext) as root:
        grants = [
            AclBinding(ResourceType.TOPIC, TOPIC, "User:alice", op)
            for op in (AclOperation.WRITE, AclOperation.READ)
        ]
        (await root.create_acls(grants)).all()
    await aiokafka_produce(broker.sasl, security)
    with pytest.raises(GroupAuthorizationFailedError):
        await aiokafka_consume(broker.sasl, security, group="billing")

    async with Admin(bootstrap=broker.plaintext) as root:
        grant = AclBinding(ResourceType.GROUP, "billing", "User:alice", AclOperation.READ)
        (await root.create_acls([grant])).all()
    assert await aiokafka_consume(broker.sasl, security, group="billing") == values(RECORDS)


def _confluent_sasl(bootstrap: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": PASSWORD,
    }


def _authorized_operations(config: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(alice's operations on TOPIC, on the cluster) as confluent-kafka reports them."""
    admin = AdminClient(config)
    (topic_future,) = admin.describe_topics(
        TopicCollection([TOPIC]), include_authorized_operations=True
    ).values()
    cluster = admin.describe_cluster(include_authorized_operations=True).result(TIMEOUT_S)
    topic = topic_future.result(TIMEOUT_S)
    return (
        {op.name for op in topic.authorized_operations or []},
        {op.name for op in cluster.authorized_operations or []},
    )


async def test_authorized_operations_are_the_callers(start_cluster: Any) -> None:
    """DescribeTopics and DescribeCluster with IncludeAuthorizedOperations answer what
    the principal may do: alice may read the topic (which implies describe) and describe
    the cluster, and nothing else."""
    started = await start_sasl_broker(start_cluster, {**SASL_BROKER, **AUTHORIZER})
    async with Admin(bootstrap=started.plaintext) as root:
        grants = [
            AclBinding(ResourceType.TOPIC, TOPIC, "User:alice", AclOperation.READ),
            AclBinding(ResourceType.CLUSTER, "kafka-cluster", "User:alice", AclOperation.DESCRIBE),
        ]
        (await root.create_acls(grants)).all()
    topic_ops, cluster_ops = await asyncio.to_thread(
        _authorized_operations, _confluent_sasl(started.sasl)
    )
    assert topic_ops == {"READ", "DESCRIBE"}
    assert cluster_ops == {"DESCRIBE"}


async def test_without_an_authorizer_every_supported_operation_is_authorized(
    sasl_broker: SaslBroker,
) -> None:
    topic_ops, cluster_ops = await asyncio.to_thread(
        _authorized_operations, _confluent_sasl(sasl_broker.sasl)
    )
    assert topic_ops == {
        "READ",
        "WRITE",
        "CREATE",
        "DELETE",
        "ALTER",
        "DESCRIBE",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
    }
    assert cluster_ops == {
        "CREATE",
        "ALTER",
        "DESCRIBE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
    }
