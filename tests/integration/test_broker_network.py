"""The broker's network layer over raw sockets: version negotiation, ordering, limits."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from helpers.interop import PARTITIONS, create_topic
from helpers.mirrors import produce
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsV3
from kio.schema.metadata.v1.request import MetadataRequest as MetadataV1

from mirrorsim.broker.network.connection import CLOSE_TIMEOUT_S
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import FrameAssembler, decode_response, encode_request
from mirrorsim.protocol.messages.fetch_request import (
    FetchRequestBody,
    FetchRequestPartition,
    FetchRequestTopic,
)

API_VERSIONS = 18
METADATA = 3
TOPIC = "waiting"


class RawClient:
    """Frames in, frames out, nothing else: lets a test send what a real client would not."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.assembler = FrameAssembler()
        self.frames: list[bytes | memoryview] = []

    @classmethod
    async def connect(cls, bootstrap: str) -> RawClient:
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        return cls(*await asyncio.open_connection(host, int(port)))

    def send(self, body: Any, version: int, correlation_id: int) -> None:
        self.writer.write(
            encode_request(body, api_version=version, correlation_id=correlation_id, client_id="t")
        )

    async def receive(self, api_key: int, version: int) -> tuple[int, Any]:
        while not self.frames:
            data = await asyncio.wait_for(self.reader.read(65536), 5)
            assert data, "connection closed before a response arrived"
            self.frames.extend(self.assembler.feed(data))
        return decode_response(self.frames.pop(0), api_key=api_key, api_version=version)

    async def closed_by_peer(self) -> bool:
        return await asyncio.wait_for(self.reader.read(65536), 5) == b""

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


@pytest.fixture
async def broker(start_cluster: Any) -> Any:
    return await start_cluster(configs={"connections.max.idle.ms": 300_000})


@pytest.fixture
async def client(broker: Any) -> Any:
    raw = await RawClient.connect(broker.bootstrap)
    yield raw
    await raw.close()


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
async def test_api_versions_lists_registered_apis(client: RawClient, version: int) -> None:
    body = ApiVersionsV0() if version < 3 else _api_versions_v3(version)
    client.send(body, version, 7)
    correlation_id, response = await client.receive(API_VERSIONS, version)
    assert correlation_id == 7
    assert response.error_code == ErrorCode.NONE
    keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert keys[API_VERSIONS] == (0, 4)
    assert keys[METADATA][0] == 0


def _api_versions_v3(version: int) -> Any:
    from mirrorsim.protocol.registry import request_class

    cls = request_class(API_VERSIONS, version)
    assert cls is not None
    return cls(client_software_name="mirrorsim-test", client_software_version="1")


async def test_api_versions_newer_than_supported_gets_v0_error(client: RawClient) -> None:
    payload = ApiVersionsV3(client_software_name="x", client_software_version="1")
    frame = bytearray(encode_request(payload, api_version=3, correlation_id=11, client_id="t"))
    struct.pack_into(">h", frame, 6, 99)  # pretend the client speaks ApiVersions v99
    client.writer.write(bytes(frame))
    correlation_id, response = await client.receive(API_VERSIONS, 0)
    assert correlation_id == 11
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert any(k.api_key == API_VERSIONS for k in response.api_keys)


async def test_pipelined_requests_are_answered_in_order(client: RawClient) -> None:
    for correlation_id in range(20):
        if correlation_id % 2:
            client.send(MetadataV1(topics=None), 1, correlation_id)
        else:
            client.send(ApiVersionsV0(), 0, correlation_id)
    for correlation_id in range(20):
        key, version = (METADATA, 1) if correlation_id % 2 else (API_VERSIONS, 0)
        received, _ = await client.receive(key, version)
        assert received == correlation_id


async def test_malformed_frame_closes_only_its_connection(broker: Any, client: RawClient) -> None:
    other = await RawClient.connect(broker.bootstrap)
    try:
        client.writer.write(struct.pack(">ihhi", 10, METADATA, 1, 5) + b"\xff\xff")
        assert await client.closed_by_peer()
        other.send(ApiVersionsV0(), 0, 3)
        correlation_id, response = await other.receive(API_VERSIONS, 0)
        assert (correlation_id, response.error_code) == (3, ErrorCode.NONE)
    finally:
        await other.close()


async def test_unknown_api_key_closes_connection(client: RawClient) -> None:
    client.writer.write(struct.pack(">ihhih", 10, 9999, 0, 1, -1))
    assert await client.closed_by_peer()


async def test_unsupported_version_closes_connection(client: RawClient) -> None:
    frame = bytearray(
        encode_request(MetadataV1(topics=None), api_version=1, correlation_id=1, client_id="t")
    )
    struct.pack_into(">h", frame, 6, 999)
    client.writer.write(bytes(frame))
    assert await client.closed_by_peer()


async def test_frame_larger_than_socket_request_max_bytes_closes(start_cluster: Any) -> None:
    cluster = await start_cluster(configs={"socket.request.max.bytes": 1024})
    raw = await RawClient.connect(cluster.bootstrap)
    try:
        raw.writer.write(struct.pack(">i", 4096) + b"\0" * 16)
        assert await raw.closed_by_peer()
    finally:
        await raw.close()


async def test_idle_connection_is_reaped(start_cluster: Any) -> None:
    cluster = await start_cluster(configs={"connections.max.idle.ms": 200})
    raw = await RawClient.connect(cluster.bootstrap)
    try:
        raw.send(ApiVersionsV0(), 0, 1)
        await raw.receive(API_VERSIONS, 0)
        assert await raw.closed_by_peer()
    finally:
        await raw.close()


async def test_stop_answers_requests_already_received(start_cluster: Any) -> None:
    cluster = await start_cluster()
    raw = await RawClient.connect(cluster.bootstrap)
    try:
        raw.send(ApiVersionsV0(), 0, 1)
        received, _ = await raw.receive(API_VERSIONS, 0)
        assert received == 1
        for correlation_id in range(2, 6):
            raw.send(MetadataV1(topics=None), 1, correlation_id)
        first, _ = await raw.receive(METADATA, 1)
        await cluster.stop()
        answered = [first]
        while True:
            try:
                correlation_id, _ = await raw.receive(METADATA, 1)
            except AssertionError:
                break
            answered.append(correlation_id)
        assert answered == list(range(2, 2 + len(answered)))
        assert answered[-1] == 5
    finally:
        await raw.close()


async def test_stop_ends_a_connection_whose_peer_stopped_reading(
    start_cluster: Any, wait_for: Any
) -> None:
    """A client that pipelines requests and never reads fills the socket buffers, so the
    broker's unsent responses cannot drain; closing such a connection used to wait for
    them forever and the broker never stopped. It is aborted after a bounded wait."""
    cluster = await start_cluster(configs={"shutdown.drain.timeout.ms": 200})
    raw = await RawClient.connect(cluster.bootstrap)
    try:
        for correlation_id in range(20_000):
            raw.send(ApiVersionsV0(), 0, correlation_id)
        await raw.writer.drain()
        transport = raw.writer.transport
        transport.pause_reading()
        broker = cluster.brokers[0]
        await wait_until_blocked(broker, wait_for)
        await asyncio.wait_for(cluster.stop(), CLOSE_TIMEOUT_S + 20)
    finally:
        raw.writer.transport.abort()


async def wait_until_blocked(broker: Any, wait_for: Any) -> None:
    """Until the broker holds responses its peer's full socket will not take: more than
    the transport's high-water mark unsent."""
    await wait_for(
        lambda: broker.server.unsent_bytes > 64 * 1024, timeout=20, message="a full write buffer"
    )


async def test_a_closed_connections_log_record_holds_only_text(
    start_cluster: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A handler that keeps records (a log capture, a MemoryHandler) must not keep each
    closed connection alive: an exception in a record's args holds its traceback, whose
    frames hold the connection and its receive buffer. 100,000 bad frames once held
    gigabytes that way."""
    broker = await start_cluster(configs={"socket.request.max.bytes": 1024})
    bad_frames = [
        struct.pack(">ihhih", 10, 9999, 0, 1, -1),  # unknown api key
        struct.pack(">i", 4096),  # larger than socket.request.max.bytes
    ]
    with caplog.at_level("INFO", logger="mirrorsim.broker.network.connection"):
        for frame in bad_frames:
            raw = await RawClient.connect(broker.bootstrap)
            raw.writer.write(frame)
            assert await raw.closed_by_peer()
            await raw.close()
    closes = [r for r in caplog.records if "closed:" in r.getMessage()]
    assert len(closes) == len(bad_frames)
    for record in closes:
        assert record.exc_info is None
        assert all(isinstance(arg, str | int | tuple) for arg in record.args or ()), record.args


async def test_an_answer_to_a_client_that_went_away_is_dropped_quietly(
    start_cluster: Any, wait_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A client that closed its connection while its Fetch waited for data gets no
    answer. The answer is written buffer by buffer (a record set each); once the first
    write found the connection gone, each of the rest made asyncio warn."""
    cluster = await start_cluster()
    await create_topic(cluster.bootstrap, TOPIC)
    fetch = FetchRequestBody(
        version=12,
        max_wait_ms=10_000,
        min_bytes=20_000,
        max_bytes=1 << 20,
        topics=[
            FetchRequestTopic(
                TOPIC, None, [FetchRequestPartition(p, 0, 1 << 20) for p in range(PARTITIONS)]
            )
        ],
    )
    server = cluster.brokers[0].server
    raw = await RawClient.connect(cluster.bootstrap)
    with caplog.at_level("WARNING", logger="asyncio"):
        raw.send(fetch, 12, 1)
        await raw.writer.drain()
        await wait_for(lambda: server.connection_count == 1, timeout=10, message="connected")
        await raw.close()
        await produce(cluster.bootstrap, TOPIC, 800, tag="v" * 100, partitions=PARTITIONS)
        await wait_for(lambda: server.connection_count == 0, timeout=20, message="answered")
    assert not [r for r in caplog.records if r.name == "asyncio"], caplog.text
