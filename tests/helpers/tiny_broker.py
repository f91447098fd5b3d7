"""A scripted in-process broker that answers client requests from canned responses."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mirrorsim.protocol.builder import build
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import (
    FrameAssembler,
    Request,
    decode_request,
    encode_response,
    peek_header,
)
from mirrorsim.protocol.registry import kio_versions, response_class

Handler = Callable[[Request], Awaitable[Any]]


NO_THROTTLE = datetime.timedelta(0)


API_VERSIONS = 18


METADATA = 3


def response(api_key: int, version: int, fields: dict[str, Any]) -> Any:
    """A response body of the given version from a version-independent description."""
    cls = response_class(api_key, version)
    assert cls is not None, (api_key, version)
    throttle = {"throttle_time": NO_THROTTLE} if "throttle_time" in cls.__dataclass_fields__ else {}
    return build(cls, {**throttle, **_error_codes(fields)})


def _error_codes(fields: dict[str, Any]) -> dict[str, Any]:
    """Turn int ``error_code`` values (at any depth) into ``ErrorCode`` for kio's writer."""
    converted: dict[str, Any] = {}
    for name, value in fields.items():
        if name == "error_code" and isinstance(value, int):
            converted[name] = ErrorCode(value)
        elif isinstance(value, dict):
            converted[name] = _error_codes(value)
        elif isinstance(value, list):
            converted[name] = [_error_codes(v) if isinstance(v, dict) else v for v in value]
        else:
            converted[name] = value
    return converted


@dataclass
class TopicSpec:
    name: str
    partitions: int = 1
    topic_id: uuid.UUID = field(default_factory=uuid.uuid4)


class TinyBroker:
    """One node of a scripted cluster; ``port`` is known after ``start``."""

    def __init__(
        self,
        node_id: int = 1,
        *,
        cluster_id: str = "tiny-cluster",
        api_versions: dict[int, tuple[int, int]] | None = None,
        api_versions_max: int = 3,
    ) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.port = 0
        self.api_versions = api_versions or _default_versions()
        self.api_versions_max = api_versions_max
        self.handlers: dict[int, Handler] = {}
        self.received: list[Request] = []
        self.peers: list[TinyBroker] = [self]
        self.topics: list[TopicSpec] = []
        self.controller_id = node_id
        self.accepted = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._arrival = asyncio.Event()
        self.failures: list[Exception] = []

    async def start(self, port: int = 0) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self.drop_connections()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        if self.failures:
            raise self.failures[0]

    def drop_connections(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    def received_of(self, api_key: int) -> list[Request]:
        return [r for r in self.received if r.header.api_key == api_key]

    async def wait_received(self, api_key: int, count: int, timeout: float = 5.0) -> None:
        """Wait until ``count`` requests of ``api_key`` have arrived."""
        async with asyncio.timeout(timeout):
            while len(self.received_of(api_key)) < count:
                self._arrival.clear()
                await self._arrival.wait()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self._writers.add(writer)
        frames_in = FrameAssembler()
        try:
            while data := await reader.read(65536):
                for payload in frames_in.feed(data):
                    task = asyncio.create_task(self._answer(payload, writer))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
        except ConnectionError:
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, payload: bytes, writer: asyncio.StreamWriter) -> None:
        try:
            await self._answer_or_raise(payload, writer)
        except Exception as exc:
            self.failures.append(exc)
            writer.transport.abort()

    async def _answer_or_raise(self, payload: bytes, writer: asyncio.StreamWriter) -> None:
        key, version, correlation_id = peek_header(payload)
        if key == API_VERSIONS and version > self.api_versions_max:
            body, version = self._api_versions(error_code=35), 0
        else:
            request = decode_request(payload)
            self.received.append(request)
            self._arrival.set()
            body = await self._handle(request)
        if body is not None and not writer.is_closing():
            writer.write(encode_response(body, api_version=version, correlation_id=correlation_id))

    async def _handle(self, request: Request) -> Any:
        key = request.header.api_key
        if key in self.handlers:
            return await self.handlers[key](request)
        if key == API_VERSIONS:
            return self._api_versions(version=request.header.api_version)
        if key == METADATA:
            return self.metadata(request)
        raise AssertionError(f"no handler for api key {key}")

    def _api_versions(self, *, error_code: int = 0, version: int = 0) -> Any:
        keys = [
            {"api_key": k, "min_version": lo, "max_version": hi}
            for k, (lo, hi) in sorted(self.api_versions.items())
        ]
        return response(API_VERSIONS, version, {"error_code": error_code, "api_keys": keys})

    def metadata(self, request: Request) -> Any:
        asked = request.body.topics
        names = None if asked is None else {t.name for t in asked}
        brokers = [
            {"node_id": p.node_id, "host": "127.0.0.1", "port": p.port, "rack": None}
            for p in self.peers
        ]
        topics = [
            {
                "error_code": 0,
                "name": t.name,
                "topic_id": t.topic_id,
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": i,
                        "leader_id": self.peers[i % len(self.peers)].node_id,
                        "leader_epoch": 0,
                        "replica_nodes": [p.node_id for p in self.peers],
                        "isr_nodes": [p.node_id for p in self.peers],
                        "offline_replicas": [],
                    }
                    for i in range(t.partitions)
                ],
                "topic_authorized_operations": -2147483648,
            }
            for t in self.topics
            if names is None or t.name in names
        ]
        return response(
            METADATA,
            request.header.api_version,
            {
                "brokers": brokers,
                "cluster_id": self.cluster_id,
                "controller_id": self.controller_id,
                "topics": topics,
                "cluster_authorized_operations": -2147483648,
                "error_code": 0,
            },
        )


def _default_versions() -> dict[int, tuple[int, int]]:
    versions = {}
    for key in (API_VERSIONS, METADATA, 10, 17, 36):
        found = kio_versions(key)
        assert found is not None
        versions[key] = found
    return versions
