"""Opening the new leader epoch of many STOPPING partitions with one round of fsyncs.

MIRROR_PID_RESET is the first batch of the partition's new leader epoch, and the epoch's
start must be in ``leader-epoch-checkpoint`` (fsynced) before that batch is written:
nothing else records where an epoch began. The log would write it inside the append, one
fsync after the other on the event loop: a few milliseconds each, seconds for a thousand
partitions failing over together. Here the STOPPING partitions of one topic that reach
that step together have their checkpoints written on worker threads in parallel, then
the appends find their epoch already open and write nothing more. The writes go out in
a few slices, one thread call each: a thread-pool submission per file costs more loop
time than it saves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from mirrorsim.broker.log.epoch_cache import PendingAssign
from mirrorsim.coordinator.batching import KeyedBatcher

PARALLEL_WRITERS = 8


class LeaderEpochStarts:
    def __init__(self, broker: Any) -> None:
        self._broker = broker
        self._batcher: KeyedBatcher[str, int] = KeyedBatcher(self._open)

    async def open_at_log_end(self, topic: str, partition: int) -> None:
        """The partition's current leader epoch starts at its log end, durably."""
        await self._batcher.submit(topic, partition)

    async def _open(self, topic: str, partitions: list[int]) -> None:
        pending = []
        for index in dict.fromkeys(partitions):
            target = self._broker.replica_manager.partition(topic, index)
            cache = target.log.epoch_cache
            assign = cache.prepare_assign(target.leader_epoch, target.log_end_offset)
            if assign is not None:
                pending.append((cache, assign))
        writes = [assign for _, assign in pending]
        slices = [writes[i::PARALLEL_WRITERS] for i in range(PARALLEL_WRITERS)]
        await asyncio.gather(*(asyncio.to_thread(_write_all, part) for part in slices if part))
        for cache, assign in pending:
            cache.complete_assign(assign)

    async def close(self) -> None:
        await self._batcher.close()


def _write_all(writes: Sequence[PendingAssign]) -> None:
    for write in writes:
        write.write()
