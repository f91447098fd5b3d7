"""Where committed consumer offsets live, so they survive a broker restart.

The coordinator keeps every committed offset in memory (Kafka's offsets cache) and writes
each commit through to an `OffsetStore` before acknowledging it. On `start()` it loads
the whole store once, so reads never touch storage; when coordination of a group moves
to this broker it reloads that group (`load_group`), since the previous coordinator may
have committed since. The broker backs the store with the
`group_offsets` table of the metadata database; unit tests use `InMemoryOffsetStore`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple, Protocol


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """One row of `group_offsets`; `leader_epoch` is -1 when the client did not send one."""

    committed_offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_timestamp: int = -1


class OffsetStore(Protocol):
    """Durable committed offsets, keyed by (group_id, topic, partition)."""

    async def load_all(self) -> dict[str, dict[TopicPartition, CommittedOffset]]:
        """Every group's committed offsets; called once when the coordinator starts."""
        ...

    async def load_group(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        """One group's committed offsets, read when this broker becomes its coordinator."""
        ...

    async def commit(
        self, group_id: str, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> None:
        """Upsert all `offsets` of one group atomically."""
        ...

    async def delete(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        """Remove the given partitions' offsets of one group (OffsetDelete)."""
        ...

    async def delete_group(self, group_id: str) -> None:
        """Remove every offset of one group (DeleteGroups)."""
        ...


class InMemoryOffsetStore:
    """An `OffsetStore` held in a dict; a fresh coordinator over the same instance sees
    the same offsets, which is how unit tests model a restart."""

    def __init__(self) -> None:
        self._offsets: dict[str, dict[TopicPartition, CommittedOffset]] = {}

    async def load_all(self) -> dict[str, dict[TopicPartition, CommittedOffset]]:
        return {group: dict(offsets) for group, offsets in self._offsets.items() if offsets}

    async def load_group(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        return dict(self._offsets.get(group_id, {}))

    async def load_groups(
        self, group_ids: list[str]
    ) -> dict[str, dict[TopicPartition, CommittedOffset]]:
        return {g: dict(self._offsets[g]) for g in group_ids if self._offsets.get(g)}

    async def commit(
        self, group_id: str, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> None:
        self._offsets.setdefault(group_id, {}).update(offsets)

    async def delete(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        offsets = self._offsets.get(group_id, {})
        for tp in partitions:
            offsets.pop(tp, None)
        if not offsets:
            self._offsets.pop(group_id, None)

    async def delete_group(self, group_id: str) -> None:
        self._offsets.pop(group_id, None)
