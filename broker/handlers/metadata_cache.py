"""The encoded Metadata topic entries a broker keeps, so an unchanged topic costs a lookup.

An entry describes a topic from its ``TopicRecord``, the live broker ids (a partition
whose leader is not live shows no leader, a replica that is not live is offline) and the
caller's authorized operations on it; nothing else goes into it. Records are immutable
and a refresh replaces the record of a topic that changed, so an entry is still right
exactly while the snapshot holds the very record it was built from (``is``), the live
ids are the same and so are the operations. Entries are kept per response version, as
the encoding differs between versions.

The cache stays bounded by the snapshot: whenever the snapshot's topics change, entries
of records it no longer holds are dropped, which leaves at most one entry per topic and
version in use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mirrorsim.broker.metadata.models import TopicRecord
from mirrorsim.protocol.messages.metadata_topics import EncodedTopic


@dataclass(frozen=True, slots=True)
class _Entry:
    record: TopicRecord
    live: frozenset[int]
    operations: int
    encoded: EncodedTopic


class EncodedTopicCache:
    """One broker's encoded Metadata topic entries, by (response version, topic name)."""

    def __init__(self) -> None:
        self._entries: dict[tuple[int, str], _Entry] = {}
        self._pruned_for: Mapping[str, TopicRecord] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def get(
        self, version: int, record: TopicRecord, live: frozenset[int], operations: int
    ) -> EncodedTopic | None:
        """The entry encoded from this very record, live set and operations, if kept."""
        entry = self._entries.get((version, record.name))
        if (
            entry is None
            or entry.record is not record
            or entry.operations != operations
            or entry.live != live
        ):
            return None
        return entry.encoded

    def put(
        self,
        version: int,
        record: TopicRecord,
        live: frozenset[int],
        operations: int,
        encoded: EncodedTopic,
    ) -> None:
        self._entries[(version, record.name)] = _Entry(record, live, operations, encoded)

    def prune(self, topics: Mapping[str, TopicRecord]) -> None:
        """Drop the entries of records ``topics`` (the snapshot's) no longer holds.

        A refresh that finds the store unchanged but for heartbeats keeps the snapshot's
        topics mapping, so pruning against the mapping pruned against last costs one
        comparison.
        """
        if topics is self._pruned_for:
            return
        self._pruned_for = topics
        self._entries = {
            key: entry for key, entry in self._entries.items() if topics.get(key[1]) is entry.record
        }
