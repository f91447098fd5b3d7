"""ClusterClient against tiny brokers on real sockets: bootstrap, metadata, routing, retries."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator

import pytest
from helpers.tiny_broker import METADATA, TinyBroker, TopicSpec, response

from mirrorsim.client.cluster import ClusterClient, CoordinatorType, RequestSpec
from mirrorsim.client.errors import KafkaConnectionError
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.framing import Request

FIND_COORDINATOR = 10
ALL_TOPICS = RequestSpec(METADATA, {"topics": None, "include_topic_authorized_operations": False})
FAST_RETRIES = {
    "retry.backoff.ms": "1",
    "retry.backoff.max.ms": "5",
    "reconnect.backoff.ms": "1",
    "reconnect.backoff.max.ms": "5",
    "default.api.timeout.ms": "5000",
}


@pytest.fixture
async def cluster() -> AsyncIterator[list[TinyBroker]]:
    nodes = [TinyBroker(node_id) for node_id in (1, 2)]
    topics = [TopicSpec("orders", partitions=4), TopicSpec("payments", partitions=1)]
    for node in nodes:
        node.peers = nodes
        node.topics = topics
        node.controller_id = 2
        await node.start()
    yield nodes
    for node in nodes:
        await node.stop()


def bootstrap_of(nodes: list[TinyBroker]) -> str:
    return ",".join(f"127.0.0.1:{n.port}" for n in nodes)


@pytest.fixture
async def client(cluster: list[TinyBroker]) -> AsyncIterator[ClusterClient]:
    async with ClusterClient(
        bootstrap_of(cluster[:1]), client_id="test", config=FAST_RETRIES
    ) as started:
        yield started


async def test_start_learns_brokers_controller_and_cluster_id(
    cluster: list[TinyBroker], client: ClusterClient
) -> None:
    assert client.cluster_id == "tiny-cluster"
    assert client.controller_id == 2
    assert {n: (b.host, b.port) for n, b in client.brokers.items()} == {
        1: ("127.0.0.1", cluster[0].port),
        2: ("127.0.0.1", cluster[1].port),
    }
    first = cluster[0].received_of(METADATA)[0]
    assert first.body.topics == ()
    assert first.header.api_version == 13


async def test_refresh_metadata_fills_leaders_ids_and_partitions(
    cluster: list[TinyBroker], client: ClusterClient
) -> None:
    await client.refresh_metadata()
    assert client.partitions_for("orders") == [0, 1, 2, 3]
    assert [client.leader_for("orders", p) for p in range(4)] == [1, 2, 1, 2]
    assert client.topic_id("orders") == cluster[0].topics[0].topic_id
    assert client.leader_for("orders", 9) is None
    assert client.topic_id("missing") is None


async def test_refresh_of_some_topics_keeps_the_others(client: ClusterClient) -> None:
    await client.refresh_metadata()
    await client.refresh_metadata(["payments"])
    assert client.partitions_for("orders") == [0, 1, 2, 3]


async def test_metadata_version_is_the_highest_both_sides_support(
    cluster: list[TinyBroker],
) -> None:
    cluster[0].api_versions[METADATA] = (0, 9)
    async with ClusterClient(bootstrap_of(cluster[:1]), client_id="t", config=FAST_RETRIES):
        assert cluster[0].received_of(METADATA)[0].header.api_version == 9


async def test_bootstrap_skips_an_unreachable_address(cluster: list[TinyBroker]) -> None:
    dead = TinyBroker(9)
    await dead.start()
    await dead.stop()
    bootstrap = f"127.0.0.1:{dead.port},127.0.0.1:{cluster[1].port}"
    async with ClusterClient(bootstrap, client_id="t", config=FAST_RETRIES) as client:
        assert sorted(client.brokers) == [1, 2]


async def test_send_to_node_and_controller_reach_the_right_broker(
    cluster: list[TinyBroker], client: ClusterClient
) -> None:
    spec = ALL_TOPICS
    before = [len(n.received_of(METADATA)) for n in cluster]
    await client.send_to_node(1, spec)
    await client.send_to_controller(spec)
    after = [len(n.received_of(METADATA)) for n in cluster]
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1]


async def test_connections_are_cached_per_node(
    cluster: list[TinyBroker], client: ClusterClient
) -> None:
    first = await client.connection(1)
    assert await client.connection(1) is first
    both = await asyncio.gather(client.connection(2), client.connection(2))
    assert both[0] is both[1]
    assert cluster[1].accepted == 1


async def test_a_dropped_connection_is_reopened_on_next_use(
    cluster: list[TinyBroker], client: ClusterClient
) -> None:
    await client.refresh_metadata()
    await client.connection(1)
    cluster[0].drop_connections()
    response = await client.send_to_node(1, ALL_TOPICS)
    assert {t.name for t in response.topics} == {"orders", "payments"}


async def test_reconnects_with_backoff_until_the_broker_is_back(
    cluster: list[TinyBroker], client: ClusterClient
) -> None:
    port = cluster[1].port
    connection = await client.connection(2)
    await cluster[1].stop()
    await asyncio.wait_for(connection.wait_closed(), 5)
    with pytest.raises(KafkaConnectionError):
        await client.connection(2)
    accepted_before = cluster[1].accepted
    pending = asyncio.create_task(client.send_to_node(2, ALL_TOPICS))
    await cluster[1].start(port)
    response = await pending
    assert response.cluster_id == "tiny-cluster"
    assert cluster[1].accepted == accepted_before + 1


async def test_find_coordinator_returns_the_coordinator_broker(
    cluster: list[TinyBroker], client: ClusterClient
) -> None:
    async def answer(request: Request) -> object:
        keys = request.body.coordinator_keys
        coordinators = [
            {
                "key": k,
                "node_id": 2,
                "host": "127.0.0.1",
                "port": cluster[1].port,
                "error_code": 0,
                "error_message": None,
            }
            for k in keys
        ]
        return response(
            FIND_COORDINATOR, request.header.api_version, {"coordinators": coordinators}
        )

    for node in cluster:
        node.handlers[FIND_COORDINATOR] = answer
    found = await client.find_coordinator("my-mirror", CoordinatorType.MIRROR)
    assert found.node_id == 2
    request = next(r for n in cluster for r in n.received_of(FIND_COORDINATOR))
    assert request.body.key_type == CoordinatorType.MIRROR
    assert request.body.coordinator_keys == ("my-mirror",)


async def test_retrying_retries_retriable_errors_only(client: ClusterClient) -> None:
    calls: list[int] = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise KafkaError(ErrorCode.NOT_CONTROLLER)
        return "done"

    assert await client.retrying(flaky) == "done"
    assert len(calls) == 3

    async def broken() -> str:
        calls.append(1)
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS)

    calls.clear()
    with pytest.raises(KafkaError) as raised:
        await client.retrying(broken)
    assert raised.value.code is ErrorCode.TOPIC_ALREADY_EXISTS
    assert len(calls) == 1


async def test_a_connect_its_caller_gave_up_on_fails_without_an_unretrieved_exception(
    cluster: list[TinyBroker],
) -> None:
    """A connect is shared and shielded, so it outlives a caller that timed out. When it
    then failed, the collected task logged "Task exception was never retrieved" (a
    mirror's source client did so in chaos soaks whenever a source broker was down)."""
    unretrieved: list[dict[str, object]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: unretrieved.append(context))
    slow_reconnect = {
        **FAST_RETRIES,
        "reconnect.backoff.ms": "200",
        "reconnect.backoff.max.ms": "200",
    }
    async with ClusterClient(
        bootstrap_of(cluster[1:]), client_id="test", config=slow_reconnect
    ) as client:
        await cluster[0].stop()
        with pytest.raises(KafkaConnectionError):
            await client.connection(1)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(client.connection(1), 0.01)
        abandoned = client._connecting[1]
        await asyncio.wait([abandoned])
        del abandoned
        gc.collect()
    assert unretrieved == []
