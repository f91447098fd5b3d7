"""Where share partitions keep their durable state, so it survives a restart or a move of
the partition's leader (KIP-932's share coordinator and ``__share_group_state``).

The leader of a share partition holds its state in memory and writes it through to a
`ShareStateStore` before answering the request that changed it; a new leader reads it
back. Each write replaces the partition's whole `ShareSnapshot`. Two epochs fence writers
that should no longer write (Kafka's checks of WriteShareGroupState):

- the state epoch, carried by the snapshot: a write of an older state epoch than the
  stored one is refused (`FencedStateEpochError`, FENCED_STATE_EPOCH). A new leader
  takes the partition over (`take_over`) by reading its state and raising the stored
  state epoch to its own in one transaction, so from that moment its predecessor, still
  writing with the old epoch, is refused; a reinitialization (an offset reset) raises it
  the same way, and a leader working from the state before the reset cannot overwrite it;
- the leader epoch a write may give: a write of an older leader epoch than the latest
  stored is refused (`FencedLeaderEpochError`, FENCED_LEADER_EPOCH). Kafka keeps it apart
  from the state epoch; a leader that uses its leader epoch as the state epoch, with
  `take_over`, leaves it at -1 and is fenced by the state epoch alone.

The broker backs the store with the ``share_group_states`` table of the metadata database,
keyed by topic id so that a topic deleted and created again under its name starts without
the old topic's state; unit tests use `InMemoryShareStateStore`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
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
        self, group_id: str, topic_id: uuid.UUID, partition: int, snapshot: ShareSnapshot
    ) -> bool:
        """Store ``snapshot`` unless the partition already has a state; whether it did
        (InitializeShareGroupState: two leaders initializing at once keep one state)."""
        ...

    async def read(
        self, group_id: str, topic_id: uuid.UUID, partition: int
    ) -> ShareSnapshot | None:
        """The partition's state, or None if it was never initialized (ReadShareGroupState)."""
        ...

    async def take_over(
        self, group_id: str, topic_id: uuid.UUID, partition: int, state_epoch: int
    ) -> ShareSnapshot | None:
        """The partition's state for a new leader that writes with ``state_epoch`` from now
        on: in the same transaction the stored state epoch is raised to it, so writes of
        the previous leader are refused from then on. None if the partition has no state
        (the new leader then writes its first). An older ``state_epoch`` than the stored
        one raises `FencedStateEpochError`: a newer leader has taken over already."""
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

    async def delete_group(self, group_id: str) -> None:
        """Forget every share partition of one group (DeleteShareGroupState)."""
        ...

    async def delete_topic(self, topic_id: uuid.UUID) -> None:
        """Forget every group's share partitions of one topic."""
        ...


def apply_writes(
    stored: Mapping[ShareStateKey, StoredShareState], writes: Sequence[ShareStateWrite]
) -> dict[ShareStateKey, StoredShareState]:
    """The rows ``writes`` leave, applied in order over ``stored``, or the first
    rejection raised: a write is checked against the rows as the earlier writes of the
    list left them. The stored leader epoch therefore only grows, and once a leader has
    written with its epoch, a write without one (-1) is fenced as well."""
    current = dict(stored)
    changed: dict[ShareStateKey, StoredShareState] = {}
    for write in writes:
        key = write.key
        before = current.get(key)
        if before is not None:
            if before.leader_epoch > write.leader_epoch:
                raise FencedLeaderEpochError(
                    key,
                    f"leader epoch {write.leader_epoch} is older than the stored "
                    f"{before.leader_epoch}",
                )
            if before.snapshot.state_epoch > write.snapshot.state_epoch:
                raise FencedStateEpochError(
                    key,
                    f"state epoch {write.snapshot.state_epoch} is older than the stored "
                    f"{before.snapshot.state_epoch}",
                )
        row = StoredShareState(write.snapshot, write.leader_epoch)
        current[key] = changed[key] = row
    return changed


def take_over_rows(
    stored: Mapping[ShareStateKey, StoredShareState],
    take_overs: Sequence[tuple[ShareStateKey, int]],
) -> tuple[list[ShareSnapshot | None], dict[ShareStateKey, StoredShareState]]:
    """What each ``(key, state_epoch)`` take-over reads, in order over ``stored``, and the
    rows whose state epoch it raised; or the first rejection raised."""
    current = dict(stored)
    changed: dict[ShareStateKey, StoredShareState] = {}
    found: list[ShareSnapshot | None] = []
    for key, state_epoch in take_overs:
        row = current.get(key)
        if row is not None and row.snapshot.state_epoch > state_epoch:
            raise FencedStateEpochError(
                key,
                f"state epoch {state_epoch} is older than the stored "
                f"{row.snapshot.state_epoch}: a newer leader has taken over",
            )
        if row is not None and row.snapshot.state_epoch < state_epoch:
            row = StoredShareState(replace(row.snapshot, state_epoch=state_epoch), row.leader_epoch)
            current[key] = changed[key] = row
        found.append(None if row is None else row.snapshot)
    return found, changed


class InMemoryShareStateStore:
    """A `ShareStateStore` held in a dict, without the metadata behind it: every topic id
    and partition is taken as existing. A fresh share partition over the same instance
    sees the same state, which is how unit tests model a restart."""

    def __init__(self) -> None:
        self._rows: dict[ShareStateKey, StoredShareState] = {}

    async def initialize(
        self, group_id: str, topic_id: uuid.UUID, partition: int, snapshot: ShareSnapshot
    ) -> bool:
        key = ShareStateKey(group_id, topic_id, partition)
        if key in self._rows:
            return False
        self._rows[key] = StoredShareState(snapshot, NO_LEADER_EPOCH)
        return True

    async def read(
        self, group_id: str, topic_id: uuid.UUID, partition: int
    ) -> ShareSnapshot | None:
        row = self._rows.get(ShareStateKey(group_id, topic_id, partition))
        return None if row is None else row.snapshot

    async def take_over(
        self, group_id: str, topic_id: uuid.UUID, partition: int, state_epoch: int
    ) -> ShareSnapshot | None:
        key = ShareStateKey(group_id, topic_id, partition)
        (found,) = await self.take_over_many([(key, state_epoch)])
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

    async def delete_group(self, group_id: str) -> None:
        self._rows = {key: row for key, row in self._rows.items() if key.group_id != group_id}

    async def delete_topic(self, topic_id: uuid.UUID) -> None:
        self._rows = {key: row for key, row in self._rows.items() if key.topic_id != topic_id}
