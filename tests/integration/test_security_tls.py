"""TLS listeners with real clients: aiokafka, confluent-kafka and the project's client over
SSL and SASL_SSL, and mutual TLS where the certificate subject is the principal the ACLs
name. The certificates are a throwaway CA made with ``openssl`` for this module."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import TopicAuthorizationFailedError
from confluent_kafka import Consumer, Producer, TopicPartition
from helpers.tls import issue, openssl

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import AclBinding, AclOperation, NewTopic, ResourceType

CLIENT_SUBJECT = "/O=Acme/OU=eng/CN=client"
CLIENT_PRINCIPAL = "User:CN=client,OU=eng,O=Acme"
TOPIC = "secure-orders"
RECORDS = 20
TIMEOUT_S = 20
FAST = {"retry.backoff.ms": "10", "retry.backoff.max.ms": "50", "default.api.timeout.ms": "5000"}


@dataclass(frozen=True, slots=True)
class Certificates:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    directory = tmp_path_factory.mktemp("tls")
    openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=mirrorsim-test-ca",
        cwd=directory,
    )  # fmt: skip
    issue(directory, "server", "/CN=localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    issue(directory, "client", CLIENT_SUBJECT)
    return Certificates(
        directory / "ca.pem",
        directory / "server.pem",
        directory / "server.key",
        directory / "client.pem",
        directory / "client.key",
    )


def broker_tls(certs: Certificates, client_auth: str = "none") -> dict[str, Any]:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.keystore.location": str(certs.server_cert),
        "ssl.key.location": str(certs.server_key),
        "ssl.truststore.location": str(certs.ca),
        "ssl.client.auth": client_auth,
        "sasl.users": "alice:alice-secret",
    }


@dataclass(frozen=True, slots=True)
class TlsBroker:
    plaintext: str
    ssl: str
    sasl_ssl: str


async def start_tls_broker(start_cluster: Any, configs: dict[str, Any]) -> TlsBroker:
    cluster = await start_cluster("primary", brokers=1, configs=configs)
    endpoints = cluster.brokers[0].server.endpoints()
    broker = TlsBroker(
        *(f"127.0.0.1:{endpoints[name][1]}" for name in ("PLAINTEXT", "SSL", "SASL_SSL"))
    )
    async with Admin(bootstrap=broker.plaintext, config=FAST) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    return broker


@pytest.fixture
async def tls_broker(start_cluster: Any, certs: Certificates) -> AsyncIterator[TlsBroker]:
    yield await start_tls_broker(start_cluster, broker_tls(certs))


def client_context(certs: Certificates, *, with_certificate: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certs.ca))
    if with_certificate:
        context.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    return context


def values(count: int) -> list[bytes]:
    return [f"record-{i}".encode() for i in range(count)]


async def aiokafka_round_trip(bootstrap: str, topic: str, **security: Any) -> list[bytes]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", **security)
    await producer.start()
    try:
        for value in values(RECORDS):
            await producer.send_and_wait(topic, value)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", **security
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


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
async def test_aiokafka_produces_and_consumes_over_tls(
    tls_broker: TlsBroker, certs: Certificates, listener: str
) -> None:
    security: dict[str, Any] = {
        "security_protocol": listener,
        "ssl_context": client_context(certs),
    }
    if listener == "SASL_SSL":
        security |= {
            "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "alice",
            "sasl_plain_password": "alice-secret",
        }
    bootstrap = tls_broker.ssl if listener == "SSL" else tls_broker.sasl_ssl
    assert await aiokafka_round_trip(bootstrap, TOPIC, **security) == values(RECORDS)


def confluent_round_trip(config: dict[str, str], topic: str) -> list[bytes]:
    """Blocking librdkafka calls; the test runs this in a thread beside the broker."""
    producer = Producer({**config, "acks": "all"})
    for value in values(RECORDS):
        producer.produce(topic, value)
    assert producer.flush(TIMEOUT_S) == 0, "records left undelivered"
    consumer = Consumer({**config, "group.id": "tls-check", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
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


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
async def test_confluent_kafka_produces_and_consumes_over_tls(
    tls_broker: TlsBroker, certs: Certificates, listener: str
) -> None:
    config = {
        "bootstrap.servers": tls_broker.ssl if listener == "SSL" else tls_broker.sasl_ssl,
        "security.protocol": listener,
        "ssl.ca.location": str(certs.ca),
    }
    if listener == "SASL_SSL":
        config |= {
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
        }
    assert await asyncio.to_thread(confluent_round_trip, config, TOPIC) == values(RECORDS)


async def test_project_client_speaks_ssl_and_sasl_ssl(
    tls_broker: TlsBroker, certs: Certificates
) -> None:
    ssl_config = {**FAST, "security.protocol": "SSL", "ssl.truststore.location": str(certs.ca)}
    async with Admin(bootstrap=tls_broker.ssl, config=ssl_config) as admin:
        described = await admin.describe_cluster()
        assert [f"{b.host}:{b.port}" for b in described.brokers] == [tls_broker.ssl]
        (await admin.create_topics([NewTopic("over-tls", 2, 1)])).all()
    sasl_config = {
        **ssl_config,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
    }
    async with Admin(bootstrap=tls_broker.sasl_ssl, config=sasl_config) as admin:
        assert "over-tls" in await admin.list_topics()


@pytest.fixture
async def mtls_broker(start_cluster: Any, certs: Certificates) -> AsyncIterator[TlsBroker]:
    configs = {
        **broker_tls(certs, client_auth="required"),
        "authorizer.class.name": "mirrorsim.AclAuthorizer",
        "super.users": "User:ANONYMOUS",
    }
    yield await start_tls_broker(start_cluster, configs)


async def test_mutual_tls_principal_is_the_certificate_subject(
    mtls_broker: TlsBroker, certs: Certificates
) -> None:
    security = {
        "security_protocol": "SSL",
        "ssl_context": client_context(certs, with_certificate=True),
    }
    with pytest.raises(TopicAuthorizationFailedError):
        await aiokafka_round_trip(mtls_broker.ssl, TOPIC, **security)

    async with Admin(bootstrap=mtls_broker.plaintext, config=FAST) as root:
        grants = [
            AclBinding(ResourceType.TOPIC, TOPIC, CLIENT_PRINCIPAL, op)
            for op in (AclOperation.WRITE, AclOperation.READ)
        ]
        (await root.create_acls(grants)).all()
    assert await aiokafka_round_trip(mtls_broker.ssl, TOPIC, **security) == values(RECORDS)


async def test_mutual_tls_refuses_a_client_without_a_certificate(
    mtls_broker: TlsBroker, certs: Certificates
) -> None:
    anonymous = {**FAST, "security.protocol": "SSL", "ssl.truststore.location": str(certs.ca)}
    with pytest.raises((OSError, ssl.SSLError, ConnectionError, TimeoutError)):
        async with Admin(bootstrap=mtls_broker.ssl, config=anonymous) as admin:
            await admin.list_topics()
    with_certificate = {
        **anonymous,
        "ssl.keystore.location": str(certs.client_cert),
        "ssl.key.location": str(certs.client_key),
    }
    async with Admin(bootstrap=mtls_broker.ssl, config=with_certificate) as admin:
        assert await admin.list_topics() == []
