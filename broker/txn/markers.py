"""Sending COMMIT/ABORT markers to partition leaders with WriteTxnMarkers, over the wire.

Brokers talk to each other only through the Kafka protocol, so the coordinator sends
markers through a ``ClusterClient`` even when it leads the partition itself. One request
per leader carries every partition that leader owns; the answer is a per-partition error
code and the caller retries what did not succeed.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from mirrorsim.broker.txn.state import TopicPartition
from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.client.config import ClientConfig
from mirrorsim.client.errors import KafkaConnectionError, RequestTimedOut
from mirrorsim.protocol.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_KEY = 27


class LeaderLookup(Protocol):
    def leader_for(self, topic: str, partition: int) -> int | None:
        """The broker id leading the partition now, or None when it has no leader."""
        ...


class MarkerWriter:
    """Owns the coordinator's client; ``bootstrap`` is read at start because the broker
    knows its own port only once it listens."""

    def __init__(
        self,
        bootstrap: Callable[[], str],
        leaders: LeaderLookup,
        client_id: str,
        security: ClientConfig,
    ) -> None:
        self._bootstrap = bootstrap
        self._leaders = leaders
        self._client_id = client_id
        self._security = security
        self._client: ClusterClient | None = None

    async def start(self) -> None:
        self._client = ClusterClient(
            self._bootstrap(), client_id=self._client_id, config=self._security
        )
        await self._client.start()

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    @property
    def client(self) -> ClusterClient:
        if self._client is None:
            raise RuntimeError("the marker writer is not started")
        return self._client

    async def write(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
        results: dict[TopicPartition, ErrorCode] = {}
        for tp in partitions:
            leader = self._leaders.leader_for(*tp)
            if leader is None:
                results[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                by_leader[leader].append(tp)
        for leader, owned in by_leader.items():
            marker = {
                "producer_id": producer_id,
                "producer_epoch": producer_epoch,
                "transaction_result": commit,
                "coordinator_epoch": coordinator_epoch,
                "topics": _topics(owned),
            }
            results.update(await self._send(leader, marker, owned))
        return results

    async def _send(
        self, leader: int, marker: dict[str, Any], owned: list[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        try:
            if leader not in self.client.brokers:
                await self.client.refresh_metadata([])
            response = await self.client.send_to_node(
                leader, RequestSpec(WRITE_TXN_MARKERS_KEY, {"markers": [marker]})
            )
        except (KafkaConnectionError, RequestTimedOut, KafkaError) as exc:
            log.info("WriteTxnMarkers to broker %d failed: %s", leader, exc)
            return dict.fromkeys(owned, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        results: dict[TopicPartition, ErrorCode] = {}
        for marker_result in response.markers:
            for topic in marker_result.topics:
                for part in topic.partitions:
                    results[(topic.name, int(part.partition_index))] = ErrorCode(part.error_code)
        return {tp: results.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR) for tp in owned}


def _topics(partitions: list[TopicPartition]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, partition in sorted(partitions):
        by_topic[topic].append(partition)
    return [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
