"""Offsets sent with TxnOffsetCommit, held back until their transaction ends.

Kafka writes them to ``__consumer_offsets`` as transactional records that the group
coordinator keeps pending until the COMMIT or ABORT marker reaches that partition. Here
they wait in the metadata store (so they survive a restart between EndTxn and the
markers) and the marker for the group's offsets partition, sent by the transaction
coordinator to the group coordinator over WriteTxnMarkers, either hands them to the
group coordinator (COMMIT) or drops them (ABORT). A marker retried after a crash finds
nothing left, or commits the same offsets again: both harmless.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from mirrorsim.broker.group import GroupCoordinator
from mirrorsim.broker.group.offset_store import CommittedOffset, TopicPartition
from mirrorsim.broker.txn.store import TxnStore


class PendingTxnOffsets:
    def __init__(
        self,
        store: TxnStore,
        groups: GroupCoordinator,
        offsets_partition: Callable[[str], int],
    ) -> None:
        self._store = store
        self._groups = groups
        self._offsets_partition = offsets_partition

    async def add(
        self, producer_id: int, group_id: str, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> None:
        await asyncio.to_thread(self._store.add_pending_offsets, producer_id, group_id, offsets)

    async def complete(self, producer_id: int, offsets_partition: int, commit: bool) -> None:
        """The transaction's marker for one offsets partition arrived."""
        pending = await asyncio.to_thread(self._store.pending_offsets, producer_id)
        groups = [g for g in pending if self._offsets_partition(g) == offsets_partition]
        if commit:
            for group_id in groups:
                await self._groups.commit_transactional_offsets(group_id, pending[group_id])
        if groups:
            await asyncio.to_thread(self._store.drop_pending_offsets, producer_id, groups)

    async def unstable_partitions(self, group_id: str) -> set[TopicPartition]:
        return await asyncio.to_thread(self._store.pending_partitions, group_id)
