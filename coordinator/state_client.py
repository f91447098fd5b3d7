"""Reading and writing mirror partition states at whichever broker coordinates them.

A mirror partition's state lives in the ``__mirror_state`` partition its key hashes to,
so its coordinator is that partition's leader. Callers do not care where that is: this
client groups the partitions by coordinator, serves the ones this broker coordinates
from its own stores (the same functions the ReadMirrorStates/WriteMirrorStates handlers
call), and sends ReadMirrorStates (100) / WriteMirrorStates (101) for the others.

On the wire "nothing to change" is LME -1 and state UNKNOWN; here it is None.

Writes are coalesced (``KeyedBatcher``): the updates that the partitions' reconcile tasks
make meanwhile go out as one WriteMirrorStates per coordinator and topic, and land as one
append per ``__mirror_state`` partition. A failover of a thousand partitions then costs a
handful of appends per transition instead of a thousand; each writer still returns only
once its own update is in the log.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.client.errors import KafkaConnectionError, raise_for_error
from mirrorsim.coordinator.batching import KeyedBatcher
from mirrorsim.coordinator.broker_ports import InterBrokerClientHost
from mirrorsim.coordinator.mirror_state_store import MirrorStateRecord
from mirrorsim.coordinator.state_machine import (
    NO_EPOCH,
    MirrorPartitionKey,
    MirrorPartitionState,
    StateUpdate,
    StoredState,
)
from mirrorsim.coordinator.state_topic import MirrorStateTopic
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import MirrorApiKey

PEER_REFRESH_S = 1.0
"""How long a failed coordinator send may spend re-learning the brokers."""


class MirrorStateClient:
    def __init__(self, broker: InterBrokerClientHost, state_topic: MirrorStateTopic) -> None:
        self._broker = broker
        self._topic = state_topic
        self._peers: ClusterClient | None = None
        self._writes: KeyedBatcher[tuple[str, str], Mapping[int, StateUpdate]] = KeyedBatcher(
            self._write_batch
        )
        self._local_writes: KeyedBatcher[tuple[str, str, int], Mapping[int, StateUpdate]] = (
            KeyedBatcher(self._append_batch)
        )

    async def close(self) -> None:
        await self._writes.close()
        await self._local_writes.close()
        if self._peers is not None:
            await self._peers.close()
            self._peers = None

    @property
    def topic_exists(self) -> bool:
        return self._topic.exists

    def _topic_id(self, topic: str) -> uuid.UUID:
        record = self._broker.snapshot.topics.get(topic)
        if record is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {topic}")
        return record.topic_id  # type: ignore[no-any-return]

    def _by_coordinator(
        self, mirror: str, topic: str, partitions: Iterable[int]
    ) -> dict[int, list[int]]:
        if not self._topic.exists:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "__mirror_state does not exist")
        topic_id = self._topic_id(topic)
        grouped: dict[int, list[int]] = {}
        for p in partitions:
            node = self._topic.leader_of(self._topic.partition_for(mirror, topic_id, p))
            if node < 0:
                raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            grouped.setdefault(node, []).append(p)
        return grouped

    # -- client side ---------------------------------------------------------------------

    async def read(
        self, mirror: str, topic: str, partitions: Iterable[int]
    ) -> dict[int, StoredState]:
        found: dict[int, StoredState] = {}
        for node, group in self._by_coordinator(mirror, topic, partitions).items():
            if node == self._broker.broker_id:
                found.update(self.read_local(mirror, topic, group))
            else:
                found.update(await self._read_remote(node, mirror, topic, group))
        return found

    async def write(self, mirror: str, topic: str, updates: Mapping[int, StateUpdate]) -> None:
        await self._writes.submit((mirror, topic), updates)

    async def _write_batch(
        self, key: tuple[str, str], batch: list[Mapping[int, StateUpdate]]
    ) -> None:
        mirror, topic = key
        updates = merged_updates(batch)
        me = self._broker.broker_id
        await asyncio.gather(
            *(
                self.write_local(mirror, topic, {p: updates[p] for p in group})
                if node == me
                else self._write_remote(node, mirror, topic, {p: updates[p] for p in group})
                for node, group in self._by_coordinator(mirror, topic, updates).items()
            )
        )

    async def _peer_client(self) -> ClusterClient:
        if self._peers is None:
            self._peers = ClusterClient(
                self._broker.bootstrap,
                client_id=f"broker-{self._broker.broker_id}-mirror-states",
                config=self._broker.inter_broker_client,
            )
            await self._peers.start()
        return self._peers

    async def _send_to_coordinator(self, node: int, spec: RequestSpec) -> Any:
        """One attempt. ``node`` leads the state partition in this broker's snapshot; if
        it cannot be reached it has most likely stopped and its partition is moving, so the
        caller retries with fresh routing (a coordinator's reconcile loop, or another
        cluster asking LastMirroredEpochs within its own request timeout) instead of
        knocking on a dead broker's door until the api timeout."""
        client = await self._peer_client()
        try:
            return await client.send_to_node_once(node, spec)
        except KafkaConnectionError as exc:
            # a broker that came back after the client's last metadata is otherwise
            # unknown to it ("not in the cluster metadata"), and the next send would fail
            # the same way; a refresh that cannot finish in time waits for the next failure
            await client.refresh_quietly(PEER_REFRESH_S)
            raise KafkaError(
                ErrorCode.COORDINATOR_NOT_AVAILABLE, f"mirror state coordinator {node}: {exc}"
            ) from exc

    async def _read_remote(
        self, node: int, mirror: str, topic: str, partitions: list[int]
    ) -> dict[int, StoredState]:
        spec = RequestSpec(
            MirrorApiKey.READ_MIRROR_STATES,
            {
                "mirror_name": mirror,
                "topics": [
                    {"name": topic, "partitions": [{"partition_index": p} for p in partitions]}
                ],
            },
        )
        response = await self._send_to_coordinator(node, spec)
        raise_for_error(response.error_code, response.error_message)
        found = {}
        for t in response.topics:
            for p in t.partitions:
                raise_for_error(p.error_code, f"{topic}-{p.partition_index}")
                found[int(p.partition_index)] = StoredState(
                    MirrorPartitionState(int(p.state)), int(p.last_mirror_epoch)
                )
        return found

    async def _write_remote(
        self, node: int, mirror: str, topic: str, updates: Mapping[int, StateUpdate]
    ) -> None:
        spec = RequestSpec(
            MirrorApiKey.WRITE_MIRROR_STATES,
            {
                "mirror_name": mirror,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": p,
                                "state": int(
                                    MirrorPartitionState.UNKNOWN if u.state is None else u.state
                                ),
                                "last_mirror_epoch": NO_EPOCH
                                if u.last_mirror_epoch is None
                                else u.last_mirror_epoch,
                            }
                            for p, u in updates.items()
                        ],
                    }
                ],
                "removed_topics": [],
            },
        )
        response = await self._send_to_coordinator(node, spec)
        raise_for_error(response.error_code, response.error_message)
        for t in response.topics:
            for p in t.partitions:
                raise_for_error(p.error_code, f"{topic}-{p.partition_index}")

    # -- coordinator side ----------------------------------------------------------------

    def read_local(
        self, mirror: str, topic: str, partitions: Iterable[int]
    ) -> dict[int, StoredState]:
        """States held by this broker's stores; COORDINATOR_NOT_AVAILABLE if it holds none."""
        topic_id = self._topic_id(topic)
        found = {}
        for p in partitions:
            store = self._topic.store(self._topic.partition_for(mirror, topic_id, p))
            found[p] = StoredState(
                store.state_of(mirror, topic, p), store.last_mirrored_epoch(mirror, topic, p)
            )
        return found

    async def write_local(
        self, mirror: str, topic: str, updates: Mapping[int, StateUpdate]
    ) -> None:
        topic_id = self._topic_id(topic)
        by_index: dict[int, dict[int, StateUpdate]] = {}
        for p, update in updates.items():
            by_index.setdefault(self._topic.partition_for(mirror, topic_id, p), {})[p] = update
        await asyncio.gather(
            *(
                self._local_writes.submit((mirror, topic, index), group)
                for index, group in by_index.items()
            )
        )

    async def _append_batch(
        self, key: tuple[str, str, int], batch: list[Mapping[int, StateUpdate]]
    ) -> None:
        mirror, topic, index = key
        topic_id = self._topic_id(topic)
        group = merged_updates(batch)
        store = self._topic.store(index)
        records = [
            store.state_record(MirrorPartitionKey(mirror, topic_id, topic, p), u.state)
            for p, u in group.items()
            if u.state is not None and u.state is not MirrorPartitionState.UNKNOWN
        ]
        epochs = {
            (topic, p): u.last_mirror_epoch
            for p, u in group.items()
            if u.last_mirror_epoch is not None
        }
        if epochs:
            records.append(store.last_mirrored_epochs_record(mirror, epochs))
        await self._topic.append(index, records)

    async def delete_mirror_local(self, mirror: str) -> None:
        """Tombstone every record of ``mirror`` in the stores this broker leads."""
        for index, store in self._topic.stores().items():
            tombstones: list[MirrorStateRecord] = store.mirror_tombstones(mirror)
            await self._topic.append(index, tombstones)

    async def remove_topics_local(self, mirror: str, topics: set[str]) -> None:
        """Tombstone ``topics`` of ``mirror`` in the stores this broker leads."""
        for index, store in self._topic.stores().items():
            await self._topic.append(index, store.topic_tombstones(mirror, topics))

    async def delete_mirror(self, mirror: str, topics: set[str]) -> None:
        """DeleteMirror: tombstones here, and WriteMirrorStates(RemovedTopics) to every
        other broker leading a ``__mirror_state`` partition."""
        await self.delete_mirror_local(mirror)
        if not self._topic.exists:
            return
        me = self._broker.broker_id
        others = {self._topic.leader_of(i) for i in range(self._topic.num_partitions())} - {me}
        for node in sorted(others):
            if node < 0:
                raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            client = await self._peer_client()
            spec = RequestSpec(
                MirrorApiKey.WRITE_MIRROR_STATES,
                {"mirror_name": mirror, "topics": [], "removed_topics": sorted(topics)},
            )
            response = await client.send_to_node(node, spec)
            raise_for_error(response.error_code, response.error_message)


def merged_updates(batch: list[Mapping[int, StateUpdate]]) -> dict[int, StateUpdate]:
    """Updates in submission order folded per partition: a later field replaces an earlier
    one, as replaying them one by one would leave it."""
    merged: dict[int, StateUpdate] = {}
    for updates in batch:
        for p, u in updates.items():
            before = merged.get(p, StateUpdate())
            merged[p] = StateUpdate(
                state=before.state if u.state is None else u.state,
                last_mirror_epoch=before.last_mirror_epoch
                if u.last_mirror_epoch is None
                else u.last_mirror_epoch,
            )
    return merged
