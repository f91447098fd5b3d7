"""Admin's mirror methods on the wire, against a tiny broker that answers them as scripted."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from helpers.mirror_admin_answers import MIRROR_KEYS, answer_with
from helpers.tiny_broker import TinyBroker, TopicSpec

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import MirrorPartitionDescription
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.framing import Request
from mirrorsim.protocol.messages.constants import MirrorApiKey

FAST = {"retry.backoff.ms": "1", "retry.backoff.max.ms": "5", "default.api.timeout.ms": "5000"}


@pytest.fixture
async def nodes() -> AsyncIterator[list[TinyBroker]]:
    brokers = [TinyBroker(node_id) for node_id in (1, 2)]
    topics = [TopicSpec("orders", partitions=2), TopicSpec("payments")]
    for broker in brokers:
        broker.peers = brokers
        broker.topics = topics
        broker.api_versions.update(MIRROR_KEYS)
        await broker.start()
    yield brokers
    for broker in brokers:
        await broker.stop()


@pytest.fixture
async def admin(nodes: list[TinyBroker]) -> AsyncIterator[Admin]:
    async with Admin(bootstrap=f"127.0.0.1:{nodes[0].port}", config=FAST) as started:
        yield started


def received(nodes: list[TinyBroker], api_key: int) -> list[Request]:
    return [r for n in nodes for r in n.received_of(api_key)]


def on_all(nodes: list[TinyBroker], api_key: int, handler: Any) -> None:
    for node in nodes:
        node.handlers[api_key] = handler


async def test_create_mirror_sends_name_and_configs(nodes: list[TinyBroker], admin: Admin) -> None:
    on_all(nodes, MirrorApiKey.CREATE_MIRROR, answer_with({"error_code": 0, "error_message": None}))
    await admin.create_mirror(
        "my-mirror", {"bootstrap.servers": "src:9092", "security.protocol": "SSL"}
    )
    (request,) = received(nodes, MirrorApiKey.CREATE_MIRROR)
    assert request.body.mirror_name == "my-mirror"
    assert {c.name: c.value for c in request.body.config} == {
        "bootstrap.servers": "src:9092",
        "security.protocol": "SSL",
    }


async def test_create_mirror_raises_the_broker_error(nodes: list[TinyBroker], admin: Admin) -> None:
    on_all(
        nodes,
        MirrorApiKey.CREATE_MIRROR,
        answer_with({"error_code": ErrorCode.INVALID_MIRROR_NAME, "error_message": "bad name"}),
    )
    with pytest.raises(KafkaError) as raised:
        await admin.create_mirror("bad.removed", {"bootstrap.servers": "src:9092"})
    assert raised.value.code is ErrorCode.INVALID_MIRROR_NAME
    assert raised.value.message == "bad name"


@pytest.mark.parametrize(
    ("method", "api_key"),
    [
        ("add_topics_to_mirror", MirrorApiKey.ADD_TOPICS_TO_MIRROR),
        ("remove_topics_from_mirror", MirrorApiKey.REMOVE_TOPICS_FROM_MIRROR),
        ("pause_mirror_topics", MirrorApiKey.PAUSE_MIRROR_TOPICS),
        ("resume_mirror_topics", MirrorApiKey.RESUME_MIRROR_TOPICS),
    ],
)
async def test_topic_methods_send_ids_and_return_per_topic_results(
    nodes: list[TinyBroker], admin: Admin, method: str, api_key: int
) -> None:
    def per_topic(request: Request) -> dict[str, Any]:
        return {
            "error_code": 0,
            "mirror_name": request.body.mirror_name,
            "topics": [
                {
                    "name": t.topic_name,
                    "error_code": 0 if t.topic_name == "orders" else ErrorCode.TOPIC_NOT_IN_MIRROR,
                }
                for t in request.body.topics
            ],
        }

    on_all(nodes, api_key, answer_with(per_topic))
    results = await getattr(admin, method)("my-mirror", {"orders", "payments"})
    (request,) = received(nodes, api_key)
    ids = {t.topic_name: t.topic_id for t in request.body.topics}
    assert ids == {t.name: t.topic_id for t in nodes[0].topics}
    assert results["orders"] is None
    assert results["payments"] is not None
    assert results["payments"].code is ErrorCode.TOPIC_NOT_IN_MIRROR
    with pytest.raises(KafkaError):
        results.all()


async def test_delete_mirror(nodes: list[TinyBroker], admin: Admin) -> None:
    on_all(
        nodes,
        MirrorApiKey.DELETE_MIRROR,
        answer_with({"error_code": ErrorCode.MIRROR_NOT_EMPTY, "error_message": None}),
    )
    with pytest.raises(KafkaError) as raised:
        await admin.delete_mirror("my-mirror")
    assert raised.value.code is ErrorCode.MIRROR_NOT_EMPTY
    assert received(nodes, MirrorApiKey.DELETE_MIRROR)[0].body.mirror_name == "my-mirror"


async def test_list_mirrors(nodes: list[TinyBroker], admin: Admin) -> None:
    listed = {
        "mirror_name": "my-mirror",
        "source_bootstrap": "src:9092",
        "source_cluster_id": "abc",
        "topic_count": 2,
    }
    on_all(nodes, MirrorApiKey.LIST_MIRRORS, answer_with({"error_code": 0, "mirrors": [listed]}))
    (mirror,) = await admin.list_mirrors()
    assert (mirror.name, mirror.source_bootstrap, mirror.source_cluster_id, mirror.topic_count) == (
        "my-mirror",
        "src:9092",
        "abc",
        2,
    )


async def test_describe_mirrors_merges_every_brokers_partitions(
    nodes: list[TinyBroker], admin: Admin
) -> None:
    def led_by(node: TinyBroker) -> Callable[[Request], dict[str, Any]]:
        def body(request: Request) -> dict[str, Any]:
            partition = {
                "partition_index": node.node_id - 1,
                "source_offset": 10,
                "destination_offset": 7,
                "lag": 3,
                "state": "MIRRORING",
                "last_mirror_epoch": 4,
            }
            topics = [{"topic_name": "orders", "partitions": [partition]}]
            mirror = {"error_code": 0, "mirror_name": "my-mirror", "topics": topics}
            return {"error_code": 0, "mirrors": [mirror]}

        return body

    for node in nodes:
        node.handlers[MirrorApiKey.DESCRIBE_MIRRORS] = answer_with(led_by(node))
    described = await admin.describe_mirrors(["my-mirror"])
    assert list(described) == ["my-mirror"]
    assert described["my-mirror"].partitions == tuple(
        MirrorPartitionDescription("orders", p, 10, 7, 3, "MIRRORING", 4) for p in (0, 1)
    )
    for node in nodes:
        (request,) = node.received_of(MirrorApiKey.DESCRIBE_MIRRORS)
        assert request.body.mirror_names == ("my-mirror",)
