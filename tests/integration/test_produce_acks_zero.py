"""acks=0 produce gets no response, so a failure can only be signalled by closing the
connection, as Kafka does: the producer then refreshes its metadata and reconnects."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.client.admin import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.framing import FrameAssembler, decode_response, encode_request
from mirrorsim.protocol.records import Record, build_batch

PRODUCE_KEY, API_VERSIONS_KEY = 0, 18
IO_TIMEOUT_S = 10.0


def _produce_acks_zero(topic: str) -> bytes:
    batch = build_batch([Record(0, 1_000, b"k", b"v", ())]).data
    body = build_request(
        PRODUCE_KEY,
        9,
        {
            "transactional_id": None,
            "acks": 0,
            "timeout": datetime.timedelta(seconds=1),
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        },
    )
    return encode_request(body, api_version=9, correlation_id=1, client_id="acks-zero")


def _api_versions() -> bytes:
    body = build_request(
        API_VERSIONS_KEY, 3, {"client_software_name": "t", "client_software_version": "1"}
    )
    return encode_request(body, api_version=3, correlation_id=2, client_id="acks-zero")


async def _send(cluster: ClusterRunner, *frames: bytes) -> bytes:
    """Everything the broker sends back before it closes or goes quiet after the frames."""
    host, port = cluster.bootstrap.split(",")[0].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        for frame in frames:
            writer.write(frame)
        await writer.drain()
        received = b""
        async with asyncio.timeout(IO_TIMEOUT_S):
            while chunk := await reader.read(65536):
                received += chunk
                if FrameAssembler().feed(received):
                    return received
        return received
    finally:
        writer.close()


async def test_a_failed_acks_zero_produce_closes_the_connection(start_cluster: Any) -> None:
    cluster: ClusterRunner = await start_cluster()
    received = await _send(cluster, _produce_acks_zero("no-such-topic"), _api_versions())
    assert received == b""


async def test_a_successful_acks_zero_produce_keeps_the_connection(start_cluster: Any) -> None:
    cluster: ClusterRunner = await start_cluster()
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (await admin.create_topics([NewTopic("fire-and-forget", num_partitions=1)])).all()
    received = await _send(cluster, _produce_acks_zero("fire-and-forget"), _api_versions())
    (frame,) = FrameAssembler().feed(received)
    correlation_id, _ = decode_response(frame, api_key=API_VERSIONS_KEY, api_version=3)
    assert correlation_id == 2
