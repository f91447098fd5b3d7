"""Connections to the source cluster of each mirror, opened lazily from its configuration.

A mirror's configuration holds ``bootstrap.servers`` and the security settings
(``security.protocol``, ``sasl.*``, ``ssl.*``), under the same names the client layer
reads, so it is handed to ``ClusterClient`` as is. The source cluster id of each
connection is kept for MIRROR_PID_RESET, and the first one a mirror ever sees is stored
in the metadata store (``record_cluster_id``), where ListMirrors reads it and every
metadata refresh checks the source against it, on any broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.client.errors import UnsupportedVersion, error_from_wire
from mirrorsim.client.shared_wait import wait_shared
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import MirrorApiKey

BOOTSTRAP_SERVERS = "bootstrap.servers"
NO_EPOCH = -1


def source_client_id(broker_id: int, mirror: str) -> str:
    return f"broker-{broker_id}-mirror-{mirror}"


class SourceClusters:
    def __init__(
        self,
        broker_id: int,
        mirror_configs: Any,
        record_cluster_id: Callable[[str, str], str] | None = None,
        stored_cluster_ids: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        """``mirror_configs()`` returns the current ``{mirror: configs}`` of the cluster;
        ``record_cluster_id(mirror, cluster_id)`` (blocking, run in a thread) stores a
        mirror's first source cluster id and raises KeyError for an unknown mirror;
        ``stored_cluster_ids()`` (blocking) reads the stored ids back."""
        self._broker_id = broker_id
        self._mirror_configs = mirror_configs
        self._record_cluster_id = record_cluster_id
        self._stored_cluster_ids = stored_cluster_ids
        self._stored_read: asyncio.Task[Mapping[str, str]] | None = None
        self._clients: dict[str, ClusterClient] = {}
        self._bootstraps: dict[str, str] = {}
        self._opening: dict[str, asyncio.Task[ClusterClient]] = {}
        self.cluster_ids: dict[str, str] = {}

    def knows(self, mirror: str) -> bool:
        """False for a mirror created after this broker's last metadata refresh."""
        return mirror in self._mirror_configs()

    def configs(self, mirror: str) -> Mapping[str, str]:
        found = self._mirror_configs().get(mirror)
        if found is None:
            raise LookupError(f"unknown mirror {mirror}")
        return dict(found)

    async def client(self, mirror: str) -> ClusterClient:
        """The mirror's source client, reopened when its bootstrap servers changed.

        Concurrent callers (every partition of a new mirror) share one connection attempt.
        """
        bootstrap = self.configs(mirror)[BOOTSTRAP_SERVERS]
        current = self._clients.get(mirror)
        if current is not None and self._bootstraps.get(mirror) == bootstrap:
            return current
        opening = self._opening.get(mirror)
        if opening is None:
            opening = asyncio.get_running_loop().create_task(
                self._open(mirror), name=f"open source of mirror {mirror}"
            )
            self._opening[mirror] = opening
            opening.add_done_callback(lambda task: self._opened(mirror, task))
        return await wait_shared(opening)

    def _opened(self, mirror: str, attempt: asyncio.Task[ClusterClient]) -> None:
        """Forget the finished attempt. Its failure is its callers' to handle; it is read
        here too, so that an attempt whose callers all went away (fetchers stopping) is
        not reported as an exception nobody retrieved."""
        if self._opening.get(mirror) is attempt:
            del self._opening[mirror]
        _retrieve(attempt)

    async def _open(self, mirror: str) -> ClusterClient:
        await self.close(mirror)
        configs = self.configs(mirror)
        client = ClusterClient(
            configs[BOOTSTRAP_SERVERS],
            client_id=source_client_id(self._broker_id, mirror),
            config=configs,
        )
        try:
            await client.start()
            if client.cluster_id:
                await self._record(mirror, client.cluster_id)
        except BaseException:
            await client.close()
            raise
        self._clients[mirror] = client
        self._bootstraps[mirror] = configs[BOOTSTRAP_SERVERS]
        if client.cluster_id:
            self.cluster_ids[mirror] = client.cluster_id
        return client

    async def _record(self, mirror: str, cluster_id: str) -> None:
        if self._record_cluster_id is None:
            return
        with contextlib.suppress(KeyError):
            await asyncio.to_thread(self._record_cluster_id, mirror, cluster_id)

    async def cluster_id(self, mirror: str) -> str:
        """The source cluster id MIRROR_PID_RESET carries: the connected source's, else the
        one stored for the mirror, else empty.

        A leader that restarted while the source is down fails over without ever having
        connected, yet the id it must write is known: it was stored at the first
        connection.
        """
        connected = self.cluster_ids.get(mirror)
        if connected or self._stored_cluster_ids is None:
            return connected or ""
        return (await self._read_stored_cluster_ids(self._stored_cluster_ids)).get(mirror, "")

    async def _read_stored_cluster_ids(
        self, read: Callable[[], Mapping[str, str]]
    ) -> Mapping[str, str]:
        """One store read shared by every caller that asks while it runs: a failover of a
        thousand partitions with no source connection reads once, not a thousand times."""
        if self._stored_read is None or self._stored_read.done():
            self._stored_read = asyncio.get_running_loop().create_task(
                asyncio.to_thread(read), name="read stored source cluster ids"
            )
            self._stored_read.add_done_callback(_retrieve)
        return await wait_shared(self._stored_read)

    async def close(self, mirror: str) -> None:
        client = self._clients.pop(mirror, None)
        self._bootstraps.pop(mirror, None)
        if client is not None:
            await client.close()

    async def close_all(self) -> None:
        for task in list(self._opening.values()):
            task.cancel()
        await asyncio.gather(*self._opening.values(), return_exceptions=True)
        if self._stored_read is not None:
            await asyncio.gather(self._stored_read, return_exceptions=True)
        for mirror in list(self._clients):
            with contextlib.suppress(Exception):
                await self.close(mirror)

    async def last_mirrored_epochs(
        self, mirror: str, wanted: Mapping[tuple[str, uuid.UUID], Iterable[int]]
    ) -> dict[tuple[str, int], int]:
        """The source's LME per (topic, partition) (LastMirroredEpochs, 97), every topic
        asked in one request; -1 where it has none.

        A source that does not serve the API (an older Kafka) knows no LME: -1 everywhere,
        which makes the destination start over from scratch. A refusal (the mirror's
        principal lacks READ on the source cluster) raises instead: answering -1 would
        discard a failing-back destination's whole log for a missing grant.
        """
        topics = [
            {"topic_id": topic_id, "topic_name": topic, "partitions": sorted(set(partitions))}
            for (topic, topic_id), partitions in wanted.items()
        ]
        answer = {(t["topic_name"], p): NO_EPOCH for t in topics for p in t["partitions"]}
        client = await self.client(mirror)
        spec = RequestSpec(
            MirrorApiKey.LAST_MIRRORED_EPOCHS, {"mirror_name": mirror, "topics": topics}
        )
        try:
            response = await client.retrying(lambda: client.send_to_any(spec))
        except UnsupportedVersion:
            return answer
        if response.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
            raise KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, response.error_message)
        _raise_if_retriable(response.error_code, response.error_message)
        if response.error_code != ErrorCode.NONE:
            return answer
        for t in response.topics:
            for p in t.partitions:
                key = (str(t.topic_name), int(p.partition_index))
                _raise_if_retriable(p.error_code, f"{key[0]}-{key[1]}")
                if p.error_code == ErrorCode.NONE and key in answer:
                    answer[key] = int(p.last_mirrored_epoch)
        return answer


def _raise_if_retriable(code: int, message: str | None) -> None:
    """A source whose state coordinator is moving or loading still knows its last mirrored
    epochs: answering -1 for it would make the destination discard its whole log, so the
    partition stays in PREPARING and asks again."""
    error = error_from_wire(code, message or "last mirrored epoch not available yet")
    if error is not None and error.retriable:
        raise error


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a shared task's outcome as read: its awaiting callers may all be gone."""
    if not task.cancelled():
        task.exception()
