"""Opening the new leader epoch of a STOPPING partition before its MIRROR_PID_RESET.

MIRROR_PID_RESET is the first batch of the partition's new leader epoch. Its epoch's
start goes into the epoch cache (and ``leader-epoch-checkpoint``, unsynced) at the log
end first, so the cache never lags behind the log's batches. The write needs no fsync:
after a crash the log's recovery re-learns epoch starts from the batches above its
recovery point, the MIRROR_PID_RESET included, and drops an epoch that no batch has
started yet, which the resumed STOPPING sequence opens again (see
broker/log/epoch_cache.py). Without an fsync the write costs tens of microseconds, so a
failover of a thousand partitions needs neither worker threads nor batching for it.
"""

from __future__ import annotations

from typing import Any


class LeaderEpochStarts:
    def __init__(self, broker: Any) -> None:
        self._broker = broker

    async def open_at_log_end(self, topic: str, partition: int) -> None:
        """The partition's current leader epoch starts at its log end."""
        target = self._broker.replica_manager.partition(topic, partition)
        target.log.epoch_cache.assign(target.leader_epoch, target.log_end_offset)

    async def close(self) -> None:
        """Nothing is in flight between calls: each open completes before it returns."""
