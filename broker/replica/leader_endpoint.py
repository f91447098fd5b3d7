"""The leader side of a follower fetcher, behind one narrow interface (Kafka's
``LeaderEndPoint``).

The follower fetcher decides with the shared plan (``mirrorsim.fetcher.plan``) and talks to
the leader only through :class:`LeaderEndpoint`: Fetch, OffsetForLeaderEpoch and
ListOffsets, each in the plan's terms. :class:`WireLeaderEndpoint` speaks the Kafka
protocol to the leader broker, as a follower does (replica id, broker epoch, no fetch
session); tests put an in-process endpoint over a real leader's ``ReplicaManager`` in its
place, as Kafka's ``MockLeaderEndPoint`` tests do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mirrorsim.client.config import ClientConfig
from mirrorsim.client.connection import BrokerConnection
from mirrorsim.client.errors import KafkaConnectionError
from mirrorsim.fetcher.plan import (
    EpochSupport,
    FetchedPartition,
    fetched_from_wire,
    known_error,
)
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode, KafkaError, error_code_from_wire
from mirrorsim.protocol.messages.fetch_request import (
    FetchRequestBody,
    FetchRequestPartition,
    FetchRequestTopic,
)
from mirrorsim.protocol.messages.fetch_versions import FETCH_KEY
from mirrorsim.protocol.uuids import ZERO_UUID

LIST_OFFSETS_KEY = 2
OFFSET_FOR_LEADER_EPOCH_KEY = 23
DIVERGING_EPOCH_VERSION = 12
FETCH_VERSIONS = FetchRequestBody.VERSIONS
LIST_OFFSETS_VERSIONS = range(1, 9)
OFFSET_FOR_LEADER_EPOCH_VERSIONS = range(2, 5)
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
UNDEFINED_EPOCH = -1

PartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class FollowerFetch:
    """One partition of a follower's Fetch."""

    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    log_start_offset: int
    mirror_leader_epoch: int = UNDEFINED_EPOCH


@dataclass(frozen=True, slots=True)
class FollowerAnswer:
    """One partition of the leader's answer: the plan's view, and the mirror leader epoch
    the leader reported (Fetch v19) for a follower of a mirror partition."""

    fetched: FetchedPartition
    mirror_leader_epoch: int = UNDEFINED_EPOCH


@dataclass(frozen=True, slots=True)
class EpochQuery:
    current_leader_epoch: int
    epoch: int


@dataclass(frozen=True, slots=True)
class EpochAnswer:
    error: ErrorCode
    epoch: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """Kafka's ``replica.fetch.*`` sizes and wait."""

    partition_max_bytes: int
    response_max_bytes: int
    wait_max_ms: int
    min_bytes: int


class LeaderEndpoint(Protocol):
    async def epoch_support(self) -> EpochSupport: ...

    async def fetch(
        self, requests: Mapping[PartitionKey, FollowerFetch]
    ) -> dict[PartitionKey, FollowerAnswer]:
        """Every partition answered; a whole-request error answers each with it."""
        ...

    async def epoch_end_offsets(
        self, requests: Mapping[PartitionKey, EpochQuery]
    ) -> dict[PartitionKey, EpochAnswer]: ...

    async def offset_bounds(self, key: PartitionKey, current_leader_epoch: int) -> tuple[int, int]:
        """(log start offset, log end offset) of the leader's replica."""
        ...

    async def close(self) -> None: ...


class TopicIds(Protocol):
    def topic_id(self, topic: str) -> Any: ...

    def topic_name(self, topic_id: Any) -> str | None: ...


class WireLeaderEndpoint:
    """A follower's connection to its leader broker (inter-broker security settings)."""

    def __init__(
        self,
        *,
        broker_id: int,
        broker_epoch: Callable[[], int],
        leader_id: int,
        client_id: str,
        address: Callable[[int], tuple[str, int] | None],
        security: ClientConfig,
        limits: FetchLimits,
        topics: TopicIds,
    ) -> None:
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._leader_id = leader_id
        self._client_id = client_id
        self._address = address
        self._security = security
        self._limits = limits
        self._topics = topics
        self._connection: BrokerConnection | None = None

    async def _connected(self) -> BrokerConnection:
        if self._connection is not None and self._connection.connected:
            return self._connection
        address = self._address(self._leader_id)
        if address is None:
            raise KafkaConnectionError(f"leader {self._leader_id} is not registered")
        connection = BrokerConnection(
            address[0],
            address[1],
            client_id=self._client_id,
            ssl_context=self._security.ssl_context,
            sasl=self._security.sasl,
            request_timeout_ms=self._limits.wait_max_ms + 30_000,
        )
        await connection.connect()
        self._connection = connection
        return connection

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    async def _fetch_version(self) -> int:
        connection = await self._connected()
        version = connection.max_supported(FETCH_KEY, FETCH_VERSIONS)
        if version is None:
            raise KafkaConnectionError(f"leader {self._leader_id} serves no usable Fetch version")
        return version

    async def epoch_support(self) -> EpochSupport:
        if await self._fetch_version() >= DIVERGING_EPOCH_VERSION:
            return EpochSupport.DIVERGING_EPOCH
        return EpochSupport.OFFSET_FOR_LEADER_EPOCH

    async def fetch(
        self, requests: Mapping[PartitionKey, FollowerFetch]
    ) -> dict[PartitionKey, FollowerAnswer]:
        version = await self._fetch_version()
        connection = await self._connected()
        response = await connection.send(self._fetch_request(version, requests))
        top_error = error_code_from_wire(response.error_code)
        if top_error != ErrorCode.NONE:
            failed = FetchedPartition(known_error(top_error), -1, -1, -1)
            return {key: FollowerAnswer(failed) for key in requests}
        answers: dict[PartitionKey, FollowerAnswer] = {}
        for topic in response.responses:
            name = getattr(topic, "topic", None) or self._topics.topic_name(topic.topic_id) or ""
            for data in topic.partitions:
                key = (str(name), int(data.partition_index))
                if key in requests:
                    answers[key] = _answer(data)
        return answers

    def _fetch_request(
        self, version: int, requests: Mapping[PartitionKey, FollowerFetch]
    ) -> FetchRequestBody:
        topics: dict[str, list[FetchRequestPartition]] = {}
        for (topic, index), request in requests.items():
            topics.setdefault(topic, []).append(
                FetchRequestPartition(
                    partition=index,
                    current_leader_epoch=request.current_leader_epoch,
                    fetch_offset=request.fetch_offset,
                    last_fetched_epoch=request.last_fetched_epoch,
                    log_start_offset=request.log_start_offset,
                    partition_max_bytes=self._limits.partition_max_bytes,
                    mirror_leader_epoch=request.mirror_leader_epoch,
                )
            )
        return FetchRequestBody(
            version=version,
            replica_id=self._broker_id,
            replica_epoch=self._broker_epoch(),
            max_wait_ms=self._limits.wait_max_ms,
            min_bytes=self._limits.min_bytes,
            max_bytes=self._limits.response_max_bytes,
            topics=[
                FetchRequestTopic(topic, self._topics.topic_id(topic) or ZERO_UUID, partitions)
                for topic, partitions in topics.items()
            ],
        )

    async def epoch_end_offsets(
        self, requests: Mapping[PartitionKey, EpochQuery]
    ) -> dict[PartitionKey, EpochAnswer]:
        connection = await self._connected()
        version = connection.max_supported(
            OFFSET_FOR_LEADER_EPOCH_KEY, OFFSET_FOR_LEADER_EPOCH_VERSIONS
        )
        if version is None:
            raise KafkaConnectionError(
                f"leader {self._leader_id} serves no usable OffsetForLeaderEpoch version"
            )
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, index), query in requests.items():
            topics.setdefault(topic, []).append(
                {
                    "partition": index,
                    "current_leader_epoch": query.current_leader_epoch,
                    "leader_epoch": query.epoch,
                }
            )
        request = build_request(
            OFFSET_FOR_LEADER_EPOCH_KEY,
            version,
            {
                "replica_id": self._broker_id,
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            },
        )
        response = await connection.send(request)
        return {
            (str(topic.topic), int(answer.partition)): EpochAnswer(
                known_error(error_code_from_wire(answer.error_code)),
                int(answer.leader_epoch),
                int(answer.end_offset),
            )
            for topic in response.topics
            for answer in topic.partitions
        }

    async def offset_bounds(self, key: PartitionKey, current_leader_epoch: int) -> tuple[int, int]:
        start = await self._list_offset(key, current_leader_epoch, EARLIEST_TIMESTAMP)
        end = await self._list_offset(key, current_leader_epoch, LATEST_TIMESTAMP)
        return start, end

    async def _list_offset(self, key: PartitionKey, current_leader_epoch: int, when: int) -> int:
        connection = await self._connected()
        version = connection.max_supported(LIST_OFFSETS_KEY, LIST_OFFSETS_VERSIONS)
        if version is None:
            raise KafkaConnectionError("leader serves no usable ListOffsets version")
        partition = {
            "partition_index": key[1],
            "current_leader_epoch": current_leader_epoch,
            "timestamp": when,
        }
        request = build_request(
            LIST_OFFSETS_KEY,
            version,
            {
                "replica_id": self._broker_id,
                "isolation_level": 0,
                "topics": [{"name": key[0], "partitions": [partition]}],
            },
        )
        response = await connection.send(request)
        answer = response.topics[0].partitions[0]
        error = error_code_from_wire(answer.error_code)
        if error != ErrorCode.NONE:
            raise KafkaError(known_error(error), f"ListOffsets {key[0]}-{key[1]}")
        return int(answer.offset)


def _answer(data: Any) -> FollowerAnswer:
    """A wire Fetch partition in the plan's terms, with the mirror leader epoch."""
    mirror_leader_epoch = int(getattr(data, "mirror_leader_epoch", UNDEFINED_EPOCH))
    return FollowerAnswer(fetched_from_wire(data), mirror_leader_epoch)
