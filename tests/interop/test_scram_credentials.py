"""SCRAM users over the wire with confluent-kafka: AlterUserScramCredentials creates a
user (the client salts the password), DescribeUserScramCredentials lists it, and the user
then logs in with SASL/SCRAM and produces; Kafka's refusals come back per user."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

pytestmark = pytest.mark.interop
TIMEOUT_S = 30.0
BROKER = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"}


def _endpoints(cluster: Any) -> tuple[str, str]:
    endpoints = cluster.brokers[0].server.endpoints()
    return (
        f"127.0.0.1:{endpoints['PLAINTEXT'][1]}",
        f"127.0.0.1:{endpoints['SASL_PLAINTEXT'][1]}",
    )


def _alter(bootstrap: str, changes: list[Any]) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    outcomes: dict[str, Any] = {}
    for user, future in admin.alter_user_scram_credentials(changes).items():
        try:
            future.result(timeout=TIMEOUT_S)
            outcomes[user] = None
        except KafkaException as exc:
            outcomes[user] = exc.args[0].code()
    return outcomes


def _describe(bootstrap: str) -> dict[str, set[tuple[str, int]]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_user_scram_credentials().result(timeout=TIMEOUT_S)
    return {
        user: {(info.mechanism.name, info.iterations) for info in d.scram_credential_infos}
        for user, d in described.items()
    }


def _produce_as(bootstrap: str, mechanism: str, user: str, password: str) -> tuple[Any, Any]:
    """(the delivery error of one record produced as ``user`` or None, the first client
    error reported on the way or None)."""
    reported: list[Any] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
            "message.timeout.ms": 3000,
            "error_cb": reported.append,
        }
    )
    delivered: list[Any] = []
    producer.produce("scram-topic", b"v", on_delivery=lambda e, m: delivered.append(e))
    producer.flush(TIMEOUT_S)
    return (delivered[0] if delivered else "no delivery report"), next(iter(reported), None)


async def test_a_user_created_over_the_wire_logs_in_with_scram(start_cluster: Any) -> None:
    cluster = await start_cluster(configs=BROKER)
    plaintext, sasl = _endpoints(cluster)
    upsert = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"carol-secret"
    )
    assert await asyncio.to_thread(_alter, plaintext, [upsert]) == {"carol": None}
    assert await asyncio.to_thread(_describe, plaintext) == {"carol": {("SCRAM_SHA_256", 8192)}}
    delivered, _ = await asyncio.to_thread(
        _produce_as, sasl, "SCRAM-SHA-256", "carol", "carol-secret"
    )
    assert delivered is None
    refused, reported = await asyncio.to_thread(
        _produce_as, sasl, "SCRAM-SHA-256", "carol", "wrong"
    )
    assert refused is not None
    assert reported is not None and reported.code() == KafkaError._AUTHENTICATION

    deletion = UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)
    assert await asyncio.to_thread(_alter, plaintext, [deletion]) == {"carol": None}
    assert await asyncio.to_thread(_describe, plaintext) == {}


async def test_kafkas_refusals_come_back_per_user(start_cluster: Any) -> None:
    cluster = await start_cluster(configs=BROKER)
    plaintext, _ = _endpoints(cluster)
    changes = [
        UserScramCredentialUpsertion(
            "few", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 1024), b"secret"
        ),
        UserScramCredentialDeletion("ghost", ScramMechanism.SCRAM_SHA_256),
    ]
    assert await asyncio.to_thread(_alter, plaintext, changes) == {
        "few": KafkaError.UNACCEPTABLE_CREDENTIAL,
        "ghost": KafkaError.RESOURCE_NOT_FOUND,
    }
    assert await asyncio.to_thread(_describe, plaintext) == {}
