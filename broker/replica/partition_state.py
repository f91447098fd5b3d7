"""What the cluster metadata says about one partition, as the broker hands it over."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from mirrorsim.broker.config import MIRROR_NAME, MIRROR_STOP_REASON

REMOVED_SUFFIX = ".removed"


@dataclass(frozen=True, slots=True)
class PartitionState:
    topic: str
    partition: int
    topic_id: uuid.UUID
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def is_read_only(self) -> bool:
        """A mirror topic refuses client writes until its mirror is removed (spec: STOPPED).

        ``mirror.name`` set without the ``.removed`` suffix (``.paused`` included) means the
        mirror still owns the data, unless the mirror stopped the topic itself
        (``mirror.stop.reason``: its source topic was deleted).
        """
        mirror = self.configs.get(MIRROR_NAME)
        stopped = bool(self.configs.get(MIRROR_STOP_REASON))
        return bool(mirror) and not mirror.endswith(REMOVED_SUFFIX) and not stopped

    def accepts_produce(self, mirror_partition_stopped: bool) -> bool:
        """Whether clients may write: a plain topic always, a mirror topic only once the
        config no longer asks for mirroring (``.removed``, or a stop reason) *and* the
        leader's mirror coordinator has found the partition STOPPED.

        The config alone lands before the STOPPING sequence (fetcher removed, LSO cut, epoch
        bump, MIRROR_PID_RESET) has run, and before a restarted leader has loaded the
        stored state; a record acknowledged then would lie below the MIRROR_PID_RESET batch
        in the old epoch, or be cut by a PREPARING partition's LME truncation. The spec:
        "The topic is now writable after the STOPPED state".
        """
        if not self.configs.get(MIRROR_NAME):
            return True
        return not self.is_read_only and mirror_partition_stopped

    def min_insync_replicas(self) -> int:
        return int(self.configs.get("min.insync.replicas", "1"))
