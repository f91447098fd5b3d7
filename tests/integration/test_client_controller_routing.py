"""Controller-bound requests follow the controller when it moves: an unreachable
controller makes the client re-read metadata instead of retrying the same broker until
the api timeout, and Admin.elect_leaders re-sends on NOT_CONTROLLER."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from helpers.tiny_broker import METADATA, TinyBroker, TopicSpec, response

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import ElectionType, TopicPartition
from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import Request
from mirrorsim.protocol.registry import kio_versions

ELECT_LEADERS = 43
ALL_TOPICS = RequestSpec(METADATA, {"topics": None, "include_topic_authorized_operations": False})
FAST_RETRIES = {
    "retry.backoff.ms": "1",
    "retry.backoff.max.ms": "5",
    "reconnect.backoff.ms": "1",
    "reconnect.backoff.max.ms": "5",
    # long enough that knocking on a dead controller until the timeout would fail the test
    "default.api.timeout.ms": "20000",
}


@pytest.fixture
async def cluster() -> AsyncIterator[list[TinyBroker]]:
    nodes = [TinyBroker(node_id) for node_id in (1, 2, 3)]
    versions = kio_versions(ELECT_LEADERS)
    assert versions is not None
    for node in nodes:
        node.peers = nodes
        node.topics = [TopicSpec("orders")]
        node.controller_id = 2
        node.api_versions[ELECT_LEADERS] = versions
        await node.start()
    yield nodes
    for node in nodes:
        if node.port:
            await node.stop()


def bootstrap_of(nodes: list[TinyBroker]) -> str:
    return ",".join(f"127.0.0.1:{n.port}" for n in nodes)


def move_controller(nodes: list[TinyBroker], to: int) -> None:
    for node in nodes:
        node.controller_id = to


async def test_an_unreachable_controller_is_looked_up_again(cluster: list[TinyBroker]) -> None:
    async with ClusterClient(
        bootstrap_of(cluster[:1]), client_id="t", config=FAST_RETRIES
    ) as client:
        assert client.controller_id == 2
        await cluster[1].stop()
        cluster[1].port = 0
        # the survivors still list broker 2 (a stale view), but name 3 as the controller
        move_controller(cluster, 3)
        response = await client.send_to_controller(ALL_TOPICS)
    assert response.controller_id == 3
    assert len(cluster[2].received_of(METADATA)) >= 1
    assert client.controller_id == 3


def elect_answer(error_code: ErrorCode, request: Request, partition_code: ErrorCode) -> Any:
    version = request.header.api_version
    return response(
        ELECT_LEADERS,
        version,
        {
            "error_code": int(error_code),
            "replica_election_results": [
                {
                    "topic": "orders",
                    "partition_result": [
                        {
                            "partition_id": 0,
                            "error_code": int(partition_code),
                            "error_message": None,
                        }
                    ],
                }
            ],
        },
    )


@pytest.mark.parametrize("where", ["request", "partition"])
async def test_elect_leaders_is_sent_again_to_the_new_controller(
    cluster: list[TinyBroker], where: str
) -> None:
    async def stale(request: Request) -> Any:
        move_controller(cluster, 1)
        if where == "request":
            return elect_answer(ErrorCode.NOT_CONTROLLER, request, ErrorCode.NONE)
        return elect_answer(ErrorCode.NONE, request, ErrorCode.NOT_CONTROLLER)

    async def elected(request: Request) -> Any:
        assert request.body.election_type == int(ElectionType.UNCLEAN)
        return elect_answer(ErrorCode.NONE, request, ErrorCode.NONE)

    cluster[1].handlers[ELECT_LEADERS] = stale
    cluster[0].handlers[ELECT_LEADERS] = elected
    async with Admin(bootstrap_of(cluster), config=FAST_RETRIES, client_id="t") as admin:
        results = await admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition("orders", 0)])
    assert results == {TopicPartition("orders", 0): None}
    assert len(cluster[1].received_of(ELECT_LEADERS)) == 1
    assert len(cluster[0].received_of(ELECT_LEADERS)) == 1


async def test_elect_leaders_reports_each_partition_error(cluster: list[TinyBroker]) -> None:
    async def refused(request: Request) -> Any:
        return elect_answer(ErrorCode.NONE, request, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)

    cluster[1].handlers[ELECT_LEADERS] = refused
    async with Admin(bootstrap_of(cluster), config=FAST_RETRIES, client_id="t") as admin:
        results = await admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("orders", 0)])
    error = results[TopicPartition("orders", 0)]
    assert error is not None and error.code == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
