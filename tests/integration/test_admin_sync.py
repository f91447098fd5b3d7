"""Admin.sync: the blocking facade, from plain (non-async) code."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import pytest
from helpers.tiny_broker import TinyBroker, TopicSpec, response

from mirrorsim.client import Admin
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import MirrorApiKey


@pytest.fixture
def broker_in_thread() -> Iterator[TinyBroker]:
    """A tiny broker on its own loop, so blocking calls from the test cannot starve it."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    broker = TinyBroker()
    broker.topics = [TopicSpec("orders")]
    broker.api_versions[MirrorApiKey.DELETE_MIRROR] = (0, 0)

    async def unknown_mirror(request: object) -> object:
        return response(MirrorApiKey.DELETE_MIRROR, 0, {"error_code": ErrorCode.UNKNOWN_MIRROR})

    broker.handlers[MirrorApiKey.DELETE_MIRROR] = unknown_mirror
    asyncio.run_coroutine_threadsafe(broker.start(), loop).result(5)
    yield broker
    asyncio.run_coroutine_threadsafe(broker.stop(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_sync_admin_blocks_returns_and_raises(broker_in_thread: TinyBroker) -> None:
    with Admin.sync(f"127.0.0.1:{broker_in_thread.port}") as admin:
        assert admin.list_topics() == ["orders"]
        with pytest.raises(KafkaError) as raised:
            admin.delete_mirror("nope")
        assert raised.value.code is ErrorCode.UNKNOWN_MIRROR
    assert admin.cluster.brokers


def test_sync_admin_fails_fast_when_nothing_listens() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    with pytest.raises(ConnectionError):
        Admin.sync(f"127.0.0.1:{closed_port}", config={"default.api.timeout.ms": "200"})
