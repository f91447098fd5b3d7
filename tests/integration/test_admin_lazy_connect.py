"""Admin connects lazily: creating it opens nothing, the first request bootstraps."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from helpers.tiny_broker import TinyBroker, TopicSpec

from mirrorsim.client import Admin, KafkaConnectionError


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_unreachable_bootstrap_creates_and_closes_at_once() -> None:
    bootstrap = f"127.0.0.1:{_closed_port()}"
    began = time.monotonic()
    async with Admin(bootstrap, config={"default.api.timeout.ms": "5000"}):
        pass
    assert time.monotonic() - began < 1.0


async def test_first_request_raises_the_connection_error() -> None:
    bootstrap = f"127.0.0.1:{_closed_port()}"
    async with Admin(bootstrap, config={"default.api.timeout.ms": "200"}) as admin:
        with pytest.raises(KafkaConnectionError, match="no bootstrap broker reachable"):
            await admin.list_topics()


async def test_entering_opens_no_connection_until_the_first_request() -> None:
    accepted = 0

    async def count(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        writer.close()

    server = await asyncio.start_server(count, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with Admin(f"127.0.0.1:{port}"):
            await asyncio.sleep(0)
        assert accepted == 0
    finally:
        server.close()
        await server.wait_closed()


async def test_first_request_bootstraps_whatever_it_asks() -> None:
    """describe_cluster picks a known broker's connection, so it must bootstrap first too,
    not only the requests sent to any broker."""
    broker = TinyBroker()
    broker.topics = [TopicSpec("orders")]
    await broker.start()
    try:
        async with Admin(f"127.0.0.1:{broker.port}") as admin:
            description = await admin.describe_cluster()
            assert [b.node_id for b in description.brokers] == [broker.node_id]
        async with Admin(f"127.0.0.1:{broker.port}") as admin:
            assert await admin.list_topics() == ["orders"]
    finally:
        await broker.stop()
