"""Where share partitions keep their durable state, so it survives a restart or a move of
the partition's leader (KIP-932's share coordinator and ``__share_group_state``).

The leader of a share partition holds its state in memory and writes it through to a
`ShareStateStore` before answering the request that changed it; a new leader reads it
back. Each write replaces the partition's whole `ShareSnapshot`. Two epochs fence writers
that should no longer write (Kafka's checks of WriteShareGroupState):

- the state epoch, carried by the snapshot: a leader loading the partition takes it over
  (`take_over`), which reads the state and raises the stored state epoch by one in the same
  transaction; it then writes with that epoch, and a write is accepted only while the
  stored epoch is still the writer's (`FencedStateEpochError`, FENCED_STATE_EPOCH). So
  from the moment a partition is loaded anew (another leader, or the same broker after an
  admin reset) every earlier holder of it is refused, and a write to a state that was
  deleted is refused too. Every acknowledgement reported as done was therefore written
  under the epoch the next load reads;
- the leader epoch of the writer: a take-over or write from an older leader epoch than the
  latest stored is refused (`FencedLeaderEpochError`, FENCED_LEADER_EPOCH), so a broker that
  has not yet learned it lost leadership cannot take the partition back.

The broker backs the store with the ``share_group_states`` table of the metadata database,
keyed by topic id so that a topic deleted and created again under its name starts without
the old topic's state; unit tests use `InMemoryShareStateStore`.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, NamedTuple, Protocol, runtime_checkable

from mirrorsim.broker.group.share_state import ShareSnapshot
from mirrorsim.protocol.errors import ErrorCode, KafkaError

NO_LEADER_EPOCH = -1
"""The leader epoch of a row no leader has written yet (InitializeShareGroupState)."""


class TopicIdPartition(NamedTuple):
    topic_id: uuid.UUID
    partition: int


class ShareStateKey(NamedTuple):
    """One share partition: a share group's view of one topic partition."""

    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class ShareStateWrite:
    """One share partition's new state, written by the leader of ``leader_epoch``."""

    group_id: str
    topic_id: uuid.UUID
    partition: int
    snapshot: ShareSnapshot
    leader_epoch: int = NO_LEADER_EPOCH

    @property
    def key(self) -> ShareStateKey:
        return ShareStateKey(self.group_id, self.topic_id, self.partition)


@dataclass(frozen=True, slots=True)
class StoredShareState:
    """A row of the store: the snapshot and the latest leader epoch that wrote it."""

    snapshot: ShareSnapshot
    leader_epoch: int


class ShareStateRejected(KafkaError):
    """The store refused one share partition's write or take-over; those of other
    partitions are unaffected. ``code`` is the answer Kafka's share coordinator gives."""

    CODE: ClassVar[ErrorCode]

    def __init__(self, key: ShareStateKey, reason: str) -> None:
        super().__init__(
            self.CODE,
            f"share state of group {key.group_id!r} topic {key.topic_id} "
            f"partition {key.partition}: {reason}",
        )
        self.key = key


class FencedStateEpochError(ShareStateRejected):
    CODE = ErrorCode.FENCED_STATE_EPOCH


class FencedLeaderEpochError(ShareStateRejected):
    CODE = ErrorCode.FENCED_LEADER_EPOCH


class UnknownSharePartitionError(ShareStateRejected):
    """The topic id or partition is not in the cluster's metadata (a deleted topic)."""

    CODE = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@runtime_checkable
class ShareStateStore(Protocol):
    """Durable share-partition state, keyed by (group_id, topic_id, partition)."""

    async def initialize(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        snapshot: ShareSnapshot,
        *,
        leader_epoch: int = NO_LEADER_EPOCH,
    ) -> bool:
        """Store ``snapshot`` unless the partition already has a state; whether it did
        (InitializeShareGroupState: two leaders initializing at once keep one state). The
        leader epoch of the initializing leader is stored with it, so a leader of an older
        epoch cannot take the new state over."""
        ...

    async def read(
        self, group_id: str, topic_id: uuid.UUID, partition: int
    ) -> ShareSnapshot | None:
        """The partition's state, or None if it was never initialized (ReadShareGroupState)."""
        ...

    async def take_over(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> ShareSnapshot | None:
        """The partition's state for a leader loading it, with the state epoch it writes
        with from now on: the stored state epoch is raised by one in the same transaction,
        so every earlier holder's writes are refused. None if the partition has no state
        (the leader then initializes it). A take-over from an older leader epoch than the
        stored one raises `FencedLeaderEpochError`."""
        ...

    async def write(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        snapshot: ShareSnapshot,
        *,
        leader_epoch: int = NO_LEADER_EPOCH,
    ) -> None:
        """Replace the partition's state (WriteShareGroupState); raises a
        `ShareStateRejected` (fenced state or leader epoch, unknown partition) instead."""
        ...

    async def write_many(self, writes: Sequence[ShareStateWrite]) -> None:
        """Apply ``writes`` in list order in one transaction: all of them, or none and the
        first `ShareStateRejected` raised."""
        ...

    async def read_group(self, group_id: str) -> dict[TopicIdPartition, ShareSnapshot]:
        """Every share partition's state of one group (ReadShareGroupStateSummary, which
        DescribeShareGroupOffsets answers from)."""
        ...

    async def reset_start(
        self, group_id: str, topic_id: uuid.UUID, partition: int, start_offset: int
    ) -> None:
        """Start the partition's state over at ``start_offset`` with nothing in flight
        (AlterShareGroupOffsets), whether or not it has a state yet, under a raised state
        epoch so that the leader holding the old state can no longer write it; raises
        `UnknownSharePartitionError` for a partition not in the metadata."""
        ...

    async def delete_group(self, group_id: str) -> None:
        """Forget every share partition of one group (DeleteShareGroupState)."""
        ...

    async def delete_group_topics(self, group_id: str, topic_ids: Collection[uuid.UUID]) -> None:
        """Forget one group's share partitions of ``topic_ids`` (DeleteShareGroupOffsets);
        the group's other topics and other groups keep theirs."""
        ...

    async def delete_topic(self, topic_id: uuid.UUID) -> None:
        """Forget every group's share partitions of one topic."""
        ...


def apply_writes(
    stored: Mapping[ShareStateKey, StoredShareState], writes: Sequence[ShareStateWrite]
) -> dict[ShareStateKey, StoredShareState]:
    """The rows ``writes`` leave, applied in order over ``stored``, or the first
    rejection raised: a write is checked against the rows as the earlier writes of the
    list left them. A write needs a stored state of its own state epoch, and its leader
    epoch must not be older than the stored one."""
    current = dict(stored)
    changed: dict[ShareStateKey, StoredShareState] = {}
    for write in writes:
        key = write.key
        before = current.get(key)
        if before is None:
            raise FencedStateEpochError(key, "there is no stored state to replace")
        _check_leader_epoch(key, before, write.leader_epoch)
        if before.snapshot.state_epoch != write.snapshot.state_epoch:
            raise FencedStateEpochError(
                key,
                f"state epoch {write.snapshot.state_epoch} is not the stored "
                f"{before.snapshot.state_epoch}: the partition was loaded again since",
            )
        row = StoredShareState(write.snapshot, write.leader_epoch)
        current[key] = changed[key] = row
    return changed


def take_over_rows(
    stored: Mapping[ShareStateKey, StoredShareState],
    take_overs: Sequence[tuple[ShareStateKey, int]],
) -> tuple[list[ShareSnapshot | None], dict[ShareStateKey, StoredShareState]]:
    """What each ``(key, leader_epoch)`` take-over reads, in order over ``stored``: the
    state with its state epoch raised by one, which the taker writes with from then on
    (None where there is no state); and the rows it changed. Or the first rejection."""
    current = dict(stored)
    changed: dict[ShareStateKey, StoredShareState] = {}
    found: list[ShareSnapshot | None] = []
    for key, leader_epoch in take_overs:
        row = current.get(key)
        if row is not None:
            _check_leader_epoch(key, row, leader_epoch)
            epoch = row.snapshot.state_epoch + 1
            row = StoredShareState(replace(row.snapshot, state_epoch=epoch), leader_epoch)
            current[key] = changed[key] = row
        found.append(None if row is None else row.snapshot)
    return found, changed


def reset_rows(
    stored: Mapping[ShareStateKey, StoredShareState], resets: Sequence[tuple[ShareStateKey, int]]
) -> dict[ShareStateKey, StoredShareState]:
    """Each ``(key, start_offset)``: the state starts over at that offset with nothing in
    flight (AlterShareGroupOffsets), under a raised state epoch, so a leader still holding
    the old state can no longer write it."""
    changed: dict[ShareStateKey, StoredShareState] = {}
    for key, start_offset in resets:
        row = changed.get(key) or stored.get(key)
        epoch = 0 if row is None else row.snapshot.state_epoch + 1
        leader_epoch = NO_LEADER_EPOCH if row is None else row.leader_epoch
        changed[key] = StoredShareState(ShareSnapshot(start_offset, (), epoch), leader_epoch)
    return changed


def _check_leader_epoch(key: ShareStateKey, row: StoredShareState, leader_epoch: int) -> None:
    if row.leader_epoch > leader_epoch:
        raise FencedLeaderEpochError(
            key, f"leader epoch {leader_epoch} is older than the stored {row.leader_epoch}"
        )


class InMemoryShareStateStore:
    """A `ShareStateStore` held in a dict, without the metadata behind it: every topic id
    and partition is taken as existing. A fresh share partition over the same instance
    sees the same state, which is how unit tests model a restart."""

    def __init__(self) -> None:
        self._rows: dict[ShareStateKey, StoredShareState] = {}

    async def initialize(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        snapshot: ShareSnapshot,
        *,
        leader_epoch: int = NO_LEADER_EPOCH,
    ) -> bool:
        key = ShareStateKey(group_id, topic_id, partition)
        if key in self._rows:
            return False
        self._rows[key] = StoredShareState(snapshot, leader_epoch)
        return True

    async def read(
        self, group_id: str, topic_id: uuid.UUID, partition: int
    ) -> ShareSnapshot | None:
        row = self._rows.get(ShareStateKey(group_id, topic_id, partition))
        return None if row is None else row.snapshot

    async def take_over(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> ShareSnapshot | None:
        key = ShareStateKey(group_id, topic_id, partition)
        (found,) = await self.take_over_many([(key, leader_epoch)])
        return found

    async def take_over_many(
        self, take_overs: Sequence[tuple[ShareStateKey, int]]
    ) -> list[ShareSnapshot | None]:
        found, changed = take_over_rows(self._rows, take_overs)
        self._rows.update(changed)
        return found

    async def write(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        snapshot: ShareSnapshot,
        *,
        leader_epoch: int = NO_LEADER_EPOCH,
    ) -> None:
        await self.write_many(
            [ShareStateWrite(group_id, topic_id, partition, snapshot, leader_epoch)]
        )

    async def write_many(self, writes: Sequence[ShareStateWrite]) -> None:
        self._rows.update(apply_writes(self._rows, writes))

    async def read_group(self, group_id: str) -> dict[TopicIdPartition, ShareSnapshot]:
        return {
            TopicIdPartition(key.topic_id, key.partition): row.snapshot
            for key, row in self._rows.items()
            if key.group_id == group_id
        }

    async def reset_start(
        self, group_id: str, topic_id: uuid.UUID, partition: int, start_offset: int
    ) -> None:
        key = ShareStateKey(group_id, topic_id, partition)
        self._rows.update(reset_rows(self._rows, [(key, start_offset)]))

    async def delete_group(self, group_id: str) -> None:
        self._rows = {key: row for key, row in self._rows.items() if key.group_id != group_id}

    async def delete_group_topics(self, group_id: str, topic_ids: Collection[uuid.UUID]) -> None:
        forgotten = set(topic_ids)
        self._rows = {
            key: row
            for key, row in self._rows.items()
            if key.group_id != group_id or key.topic_id not in forgotten
        }

    async def delete_topic(self, topic_id: uuid.UUID) -> None:
        self._rows = {key: row for key, row in self._rows.items() if key.topic_id != topic_id}
