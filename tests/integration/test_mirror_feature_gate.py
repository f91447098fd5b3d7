"""The ``mirror.version`` feature on real brokers: advertised in ApiVersions, changed through
UpdateFeatures at the controller, and gating the eight operator mirror RPCs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from kafka import KafkaConsumer

from mirrorsim.broker.handlers.mirror_feature import MIRRORING_DISABLED
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AclBinding,
    AclOperation,
    FeatureUpdate,
    FinalizedVersionRange,
    NewTopic,
    ResourceType,
    SupportedVersionRange,
    UpgradeType,
)
from mirrorsim.client.cluster import RequestSpec
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.features import MIRROR_VERSION
from mirrorsim.protocol.messages.constants import MirrorApiKey

FAST = {"retry.backoff.ms": "10", "retry.backoff.max.ms": "50", "default.api.timeout.ms": "5000"}
DISABLE = {MIRROR_VERSION: FeatureUpdate(0, UpgradeType.SAFE_DOWNGRADE)}
ENABLE = {MIRROR_VERSION: FeatureUpdate(1)}
TOPIC_FIELDS = {"mirror_name": "m", "topics": [{"topic_id": None, "topic_name": "orders"}]}
GATED_REQUESTS = {
    MirrorApiKey.CREATE_MIRROR: {"mirror_name": "m", "config": []},
    MirrorApiKey.ADD_TOPICS_TO_MIRROR: TOPIC_FIELDS,
    MirrorApiKey.REMOVE_TOPICS_FROM_MIRROR: TOPIC_FIELDS,
    MirrorApiKey.PAUSE_MIRROR_TOPICS: TOPIC_FIELDS,
    MirrorApiKey.RESUME_MIRROR_TOPICS: TOPIC_FIELDS,
    MirrorApiKey.LIST_MIRRORS: {},
    MirrorApiKey.DESCRIBE_MIRRORS: {"mirror_names": [], "include_authorized_operations": False},
    MirrorApiKey.DELETE_MIRROR: {"mirror_name": "m"},
}


@pytest.fixture
async def cluster(start_cluster: Any) -> Any:
    return await start_cluster("backup", brokers=2)


@pytest.fixture
async def admin(cluster: Any) -> AsyncIterator[Admin]:
    async with Admin(bootstrap=cluster.bootstrap, config=FAST) as started:
        yield started


async def every_broker_at(cluster: Any, level: int, wait_for: Any) -> None:
    await wait_for(
        lambda: all(
            b.snapshot.finalized_features.level(MIRROR_VERSION) == level for b in cluster.brokers
        ),
        message=f"every broker to see mirror.version={level}",
    )


async def test_a_new_cluster_advertises_mirror_version_1(admin: Admin) -> None:
    features = await admin.describe_features()
    assert features.supported_features == {MIRROR_VERSION: SupportedVersionRange(0, 1)}
    assert features.finalized_features == {MIRROR_VERSION: FinalizedVersionRange(1, 1)}
    assert features.finalized_features_epoch == 0


async def test_disabled_mirroring_refuses_the_eight_operator_rpcs(
    cluster: Any, admin: Admin, wait_for: Any
) -> None:
    (await admin.update_features(DISABLE)).all()
    await every_broker_at(cluster, 0, wait_for)
    features = await admin.describe_features()
    assert (features.finalized_features, features.finalized_features_epoch) == ({}, 1)
    await admin.cluster.refresh_metadata([])
    for node in sorted(admin.cluster.brokers):
        for api_key, fields in GATED_REQUESTS.items():
            response = await admin.cluster.send_to_node(node, RequestSpec(api_key, fields))
            refusal = (response.error_code, response.error_message)
            assert refusal == (ErrorCode.UNSUPPORTED_VERSION, MIRRORING_DISABLED), api_key.name
            for topic in getattr(response, "topics", ()):
                assert topic.error_code == ErrorCode.UNSUPPORTED_VERSION
    with pytest.raises(KafkaError) as raised:
        await admin.create_mirror("my-mirror", {"bootstrap.servers": cluster.bootstrap})
    assert raised.value.code == ErrorCode.UNSUPPORTED_VERSION

    (await admin.update_features(ENABLE)).all()
    await every_broker_at(cluster, 1, wait_for)
    await admin.create_mirror("my-mirror", {"bootstrap.servers": cluster.bootstrap})
    assert [m.name for m in await admin.list_mirrors()] == ["my-mirror"]
    assert (await admin.describe_features()).finalized_features_epoch == 2


async def test_refused_and_validate_only_updates_change_nothing(cluster: Any, admin: Admin) -> None:
    refused = await admin.update_features({MIRROR_VERSION: FeatureUpdate(0)})
    assert refused[MIRROR_VERSION] is not None
    assert refused[MIRROR_VERSION].code == ErrorCode.INVALID_UPDATE_VERSION
    unknown = await admin.update_features(
        {MIRROR_VERSION: FeatureUpdate(1), "share.version": FeatureUpdate(1)}
    )
    assert {name: e.code for name, e in unknown.failed.items()} == {
        MIRROR_VERSION: ErrorCode.INVALID_UPDATE_VERSION,
        "share.version": ErrorCode.INVALID_UPDATE_VERSION,
    }
    assert (await admin.update_features(DISABLE, validate_only=True)).failed == {}
    stored = await asyncio.to_thread(cluster.brokers[0].store.finalized_features)
    assert (stored.stored, stored.epoch) == ({}, 0)


async def test_update_features_needs_alter_on_the_cluster(start_cluster: Any) -> None:
    secured = await start_cluster(
        "primary",
        configs={
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.users": "admin:admin-secret,alice:alice-secret",
            "authorizer.class.name": "mirrorsim.AclAuthorizer",
            "super.users": "User:admin;User:ANONYMOUS",
        },
    )
    port = secured.brokers[0].server.endpoints()["SASL_PLAINTEXT"][1]

    def as_user(user: str) -> Admin:
        config = {
            **FAST,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": f"{user}-secret",
        }
        return Admin(bootstrap=f"127.0.0.1:{port}", config=config)

    async with as_user("alice") as alice:
        denied = await alice.update_features(DISABLE)
        assert denied[MIRROR_VERSION] is not None
        assert denied[MIRROR_VERSION].code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        async with as_user("admin") as root:
            grant = AclBinding(
                ResourceType.CLUSTER, "kafka-cluster", "User:alice", AclOperation.ALTER
            )
            (await root.create_acls([grant])).all()
        (await alice.update_features(DISABLE)).all()


async def test_kafka_clients_still_connect(cluster: Any, admin: Admin, wait_for: Any) -> None:
    (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
    await wait_for(
        lambda: all("orders" in b.snapshot.topics for b in cluster.brokers),
        message="orders known to every broker",
    )
    (await admin.update_features(DISABLE)).all()
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait("orders", b"after the feature change")
    finally:
        await producer.stop()

    def kafka_python_topics() -> set[str]:
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap)
        try:
            return set(consumer.topics())
        finally:
            consumer.close()

    assert "orders" in await asyncio.to_thread(kafka_python_topics)
