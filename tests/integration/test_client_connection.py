"""BrokerConnection against a real TCP server: negotiation, pipelining, failures."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from helpers.tiny_broker import METADATA, TinyBroker, TopicSpec, response

from mirrorsim.client.connection import BrokerConnection
from mirrorsim.client.errors import KafkaConnectionError, RequestTimedOut, UnsupportedVersion
from mirrorsim.client.sasl import SaslAuthenticationError, SaslSettings
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import Request


@pytest.fixture
async def broker() -> AsyncIterator[TinyBroker]:
    server = TinyBroker()
    server.topics = [TopicSpec("orders", partitions=3)]
    await server.start()
    yield server
    await server.stop()


async def connect(broker: TinyBroker, **kwargs: int) -> BrokerConnection:
    connection = BrokerConnection("127.0.0.1", broker.port, client_id="test", **kwargs)
    await connection.connect()
    return connection


def metadata_request(version: int, topics: list[str] | None) -> object:
    return build_request(
        METADATA,
        version,
        {
            "topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
            "include_cluster_authorized_operations": False,
        },
    )


async def test_negotiates_api_versions_at_connect(broker: TinyBroker) -> None:
    connection = await connect(broker)
    try:
        assert connection.api_versions[METADATA] == broker.api_versions[METADATA]
        assert broker.received_of(18)[0].header.api_version == 3
    finally:
        await connection.close()


async def test_api_versions_falls_back_when_the_broker_rejects_v3(broker: TinyBroker) -> None:
    broker.api_versions_max = 0
    broker.api_versions[18] = (0, 0)
    connection = await connect(broker)
    try:
        assert [r.header.api_version for r in broker.received_of(18)] == [0]
        assert connection.api_versions[METADATA] == broker.api_versions[METADATA]
    finally:
        await connection.close()


async def test_max_supported_picks_the_highest_common_version(broker: TinyBroker) -> None:
    broker.api_versions[METADATA] = (1, 9)
    connection = await connect(broker)
    try:
        assert connection.max_supported(METADATA, range(0, 14)) == 9
        assert connection.max_supported(METADATA, [0]) is None
        assert connection.max_supported(9999, [0, 1]) is None
    finally:
        await connection.close()


async def test_send_rejects_a_version_the_broker_lacks(broker: TinyBroker) -> None:
    broker.api_versions[METADATA] = (1, 9)
    connection = await connect(broker)
    try:
        with pytest.raises(UnsupportedVersion) as raised:
            await connection.send(metadata_request(12, None))
        assert raised.value.code is ErrorCode.UNSUPPORTED_VERSION
        assert raised.value.supported == (1, 9)
    finally:
        await connection.close()


async def test_responses_out_of_order_reach_their_requests(broker: TinyBroker) -> None:
    gates = {name: asyncio.Event() for name in ("a", "b", "c")}
    base_metadata = broker.metadata
    broker.topics = [TopicSpec("a"), TopicSpec("b"), TopicSpec("c")]

    async def gated(request: Request) -> object:
        await gates[request.body.topics[0].name].wait()
        return base_metadata(request)

    broker.handlers[METADATA] = gated
    connection = await connect(broker)
    try:
        sends = {
            name: asyncio.create_task(connection.send(metadata_request(12, [name])))
            for name in gates
        }
        await broker.wait_received(METADATA, 3)
        for name in ("c", "a", "b"):
            gates[name].set()
            response = await sends[name]
            assert [t.name for t in response.topics] == [name]
        assert broker.accepted == 1
    finally:
        await connection.close()


async def test_dropped_socket_fails_every_pending_request(broker: TinyBroker) -> None:
    never = asyncio.Event()

    async def stuck(request: Request) -> object:
        await never.wait()

    broker.handlers[METADATA] = stuck
    connection = await connect(broker)
    try:
        sends = [asyncio.create_task(connection.send(metadata_request(12, None))) for _ in range(3)]
        await broker.wait_received(METADATA, 3)
        broker.drop_connections()
        results = await asyncio.gather(*sends, return_exceptions=True)
        assert all(isinstance(r, KafkaConnectionError) for r in results)
        assert not connection.connected
        with pytest.raises(KafkaConnectionError):
            await connection.send(metadata_request(12, None))
    finally:
        await connection.close()


async def test_a_request_without_answer_times_out_and_the_connection_survives(
    broker: TinyBroker,
) -> None:
    async def silent_once(request: Request) -> object:
        if len(broker.received_of(METADATA)) == 1:
            return None
        return broker.metadata(request)

    broker.handlers[METADATA] = silent_once
    connection = await connect(broker, request_timeout_ms=200)
    try:
        with pytest.raises(RequestTimedOut):
            await connection.send(metadata_request(12, None))
        response = await connection.send(metadata_request(12, None))
        assert [t.name for t in response.topics] == ["orders"]
    finally:
        await connection.close()


async def test_send_no_response_writes_without_waiting(broker: TinyBroker) -> None:
    connection = await connect(broker)
    try:
        broker.handlers[METADATA] = lambda request: asyncio.sleep(0)
        await connection.send_no_response(metadata_request(12, ["orders"]))
        await broker.wait_received(METADATA, 1)
        assert broker.received_of(METADATA)[0].body.topics[0].name == "orders"
    finally:
        await connection.close()


async def test_connecting_to_a_closed_port_is_a_connection_error() -> None:
    server = TinyBroker()
    await server.start()
    port = server.port
    await server.stop()
    connection = BrokerConnection("127.0.0.1", port, client_id="test")
    with pytest.raises(KafkaConnectionError):
        await connection.connect()


async def test_sasl_plain_authenticates_after_api_versions(broker: TinyBroker) -> None:
    broker.api_versions[17] = (0, 1)
    broker.api_versions[36] = (0, 2)
    broker.handlers[17] = _sasl_handshake()
    broker.handlers[36] = _sasl_authenticate(expected=b"\0alice\0secret")
    connection = BrokerConnection(
        "127.0.0.1",
        broker.port,
        client_id="test",
        sasl=SaslSettings("PLAIN", "alice", "secret"),
    )
    await connection.connect()
    try:
        keys = [r.header.api_key for r in broker.received]
        assert keys == [18, 17, 36]
        assert broker.received_of(17)[0].body.mechanism == "PLAIN"
    finally:
        await connection.close()


async def test_sasl_rejection_fails_connect_and_closes(broker: TinyBroker) -> None:
    broker.api_versions[17] = (0, 1)
    broker.api_versions[36] = (0, 2)
    broker.handlers[17] = _sasl_handshake()
    broker.handlers[36] = _sasl_authenticate(expected=b"\0alice\0right")
    connection = BrokerConnection(
        "127.0.0.1", broker.port, client_id="test", sasl=SaslSettings("PLAIN", "alice", "wrong")
    )
    with pytest.raises(SaslAuthenticationError, match="bad credentials"):
        await connection.connect()
    assert not connection.connected


def _sasl_handshake() -> Callable[[Request], Awaitable[object]]:
    async def handle(request: Request) -> object:
        return response(17, request.header.api_version, {"error_code": 0, "mechanisms": ["PLAIN"]})

    return handle


def _sasl_authenticate(expected: bytes) -> Callable[[Request], Awaitable[object]]:
    async def handle(request: Request) -> object:
        ok = request.body.auth_bytes == expected
        return response(
            36,
            request.header.api_version,
            {
                "error_code": 0 if ok else 58,
                "error_message": None if ok else "bad credentials",
                "auth_bytes": b"",
                "session_lifetime": datetime.timedelta(0),
            },
        )

    return handle
