"""One partition replica on this broker: its role, leader epoch, ISR and high watermark.

The log (``PartitionLog``) stores batches and persists the high watermark; this class
decides what may be appended and what may be read. As leader it moves the high watermark:
the smallest log end offset among the ISR members (a follower's log end offset is what its
last Fetch asked for), so with a single in-sync replica it follows every append.
Consumers read up to the high watermark (read_uncommitted) or the last stable offset
(read_committed); followers read up to the log end offset.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from mirrorsim.broker.log.errors import OffsetOutOfRangeError
from mirrorsim.broker.log.partition_log import PartitionLog
from mirrorsim.broker.replica.fetch_session import PartitionFetch
from mirrorsim.broker.replica.partition_state import PartitionState
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.records.raw_batch import RawBatch, peek_batch_size

NO_EPOCH = -1
CONSUMER_REPLICA_ID = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
_BASE_OFFSET = struct.Struct(">q")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    log_append_time_ms: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class PartitionRead:
    """One partition's share of a Fetch response."""

    records: bytes
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: tuple[tuple[int, int], ...] | None = None
    diverging_epoch: tuple[int, int] | None = None


@dataclass(slots=True)
class ReplicaProgress:
    """What the leader knows of a follower from its fetches."""

    log_end_offset: int = -1
    last_fetch_ms: int = -1


@dataclass(slots=True)
class Partition:
    broker_id: int
    state: PartitionState
    log: PartitionLog
    clock: Callable[[], int]
    followers: dict[int, ReplicaProgress] = field(default_factory=dict)

    @property
    def topic(self) -> str:
        return self.state.topic

    @property
    def index(self) -> int:
        return self.state.partition

    @property
    def is_leader(self) -> bool:
        return self.state.leader == self.broker_id

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    def apply_state(self, state: PartitionState) -> bool:
        """Take a new metadata state; True when leadership or the ISR changed."""
        changed = (state.leader, state.leader_epoch, state.isr) != (
            self.state.leader,
            self.state.leader_epoch,
            self.state.isr,
        )
        self.state = state
        self.followers = {
            replica: self.followers.get(replica, ReplicaProgress())
            for replica in state.replicas
            if replica != self.broker_id
        }
        if self.is_leader:
            self.maybe_increment_high_watermark()
        return changed

    def check_leader_epoch(self, current_leader_epoch: int, *, require_leader: bool) -> None:
        """Kafka's leader-epoch fencing for requests that carry the caller's view."""
        if current_leader_epoch != NO_EPOCH:
            if current_leader_epoch < self.leader_epoch:
                raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH)
            if current_leader_epoch > self.leader_epoch:
                raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH)
        if require_leader and not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def check_writable(self, required_acks: int) -> None:
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if self.state.is_read_only:
            raise KafkaError(
                ErrorCode.READ_ONLY_TOPIC,
                f"Topic {self.topic} is a mirror topic and accepts no produce requests",
            )
        if required_acks == -1 and len(self.state.isr) < self.state.min_insync_replicas():
            raise KafkaError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The ISR of {self.topic}-{self.index} has {len(self.state.isr)} replicas, "
                f"min.insync.replicas is {self.state.min_insync_replicas()}",
            )

    def append_as_leader(self, batches: list[RawBatch], now_ms: int) -> AppendResult:
        info = self.log.append_as_leader(batches, self.leader_epoch, now_ms=now_ms)
        self.maybe_increment_high_watermark()
        return AppendResult(
            base_offset=info.first_offset,
            last_offset=info.last_offset,
            log_append_time_ms=info.log_append_time_ms,
            log_start_offset=self.log_start_offset,
        )

    def maybe_increment_high_watermark(self) -> bool:
        """Advance the high watermark to the ISR's smallest log end offset; True if it moved."""
        if not self.is_leader:
            return False
        candidate = self.log_end_offset
        for replica in self.state.isr:
            if replica == self.broker_id:
                continue
            progress = self.followers.get(replica)
            candidate = min(candidate, progress.log_end_offset if progress else -1)
        if candidate > self.high_watermark:
            self.log.update_high_watermark(candidate)
            return True
        return False

    def record_follower_fetch(self, replica_id: int, fetch_offset: int) -> bool:
        """A follower fetched from ``fetch_offset``: all before it is on its log."""
        progress = self.followers.get(replica_id)
        if progress is None:
            raise KafkaError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"Broker {replica_id} is not a replica of {self.topic}-{self.index}",
            )
        progress.log_end_offset = fetch_offset
        progress.last_fetch_ms = self.clock()
        return self.maybe_increment_high_watermark()

    def is_acknowledged(self, last_offset: int) -> bool:
        """acks=all: the ISR has everything up to ``last_offset``."""
        return self.high_watermark > last_offset

    def read(
        self,
        fetch: PartitionFetch,
        *,
        replica_id: int,
        isolation_level: int,
        max_bytes: int,
        min_one_message: bool,
    ) -> PartitionRead:
        """Kafka's ``Partition.fetchRecords`` for one partition of one Fetch request."""
        is_follower = replica_id >= 0
        self.check_leader_epoch(fetch.current_leader_epoch, require_leader=True)
        if fetch.last_fetched_epoch >= 0 and fetch.fetch_offset > 0:
            diverging = self._diverging_epoch(fetch.last_fetched_epoch, fetch.fetch_offset)
            if diverging is not None:
                return self._empty_read(diverging_epoch=diverging)
        if fetch.fetch_offset < self.log_start_offset or fetch.fetch_offset > self.log_end_offset:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"Fetch offset {fetch.fetch_offset} is outside "
                f"[{self.log_start_offset}, {self.log_end_offset}] of {self.topic}-{self.index}",
            )
        if is_follower:
            max_offset = self.log_end_offset
        elif isolation_level == READ_COMMITTED:
            max_offset = self.last_stable_offset
        else:
            max_offset = self.high_watermark
        if fetch.fetch_offset >= max_offset or (max_bytes <= 0 and not min_one_message):
            return self._empty_read(read_committed=isolation_level == READ_COMMITTED)
        try:
            data = self.log.read(
                fetch.fetch_offset,
                max_bytes,
                max_offset=max_offset,
                min_one_batch=min_one_message,
            )
        except OffsetOutOfRangeError as exc:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, str(exc)) from exc
        aborted = None
        if isolation_level == READ_COMMITTED:
            upper = _next_offset_after(data.records, fetch.fetch_offset)
            aborted = tuple(
                (txn.producer_id, txn.first_offset)
                for txn in self.log.collect_aborted_transactions(fetch.fetch_offset, upper)
            )
        return PartitionRead(
            records=data.records,
            high_watermark=self.high_watermark,
            last_stable_offset=self.last_stable_offset,
            log_start_offset=self.log_start_offset,
            aborted_transactions=aborted,
        )

    def _empty_read(
        self, *, read_committed: bool = False, diverging_epoch: tuple[int, int] | None = None
    ) -> PartitionRead:
        return PartitionRead(
            records=b"",
            high_watermark=self.high_watermark,
            last_stable_offset=self.last_stable_offset,
            log_start_offset=self.log_start_offset,
            aborted_transactions=() if read_committed else None,
            diverging_epoch=diverging_epoch,
        )

    def _diverging_epoch(
        self, last_fetched_epoch: int, fetch_offset: int
    ) -> tuple[int, int] | None:
        """Kafka's check for a fetcher whose last epoch ends earlier here than it thinks."""
        epoch, end_offset = self.end_offset_for_epoch(last_fetched_epoch)
        if end_offset < fetch_offset or epoch < last_fetched_epoch:
            return epoch, end_offset
        return None

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """(largest epoch <= ``leader_epoch``, the offset where it ends) on this log."""
        return self.log.end_offset_for_epoch(leader_epoch)


def _next_offset_after(records: bytes, default: int) -> int:
    """The offset after the last whole batch in ``records``, from the batch headers alone."""
    position, next_offset = 0, default
    while (size := peek_batch_size(records, position)) is not None:
        if position + size > len(records):
            break
        (base_offset,) = _BASE_OFFSET.unpack_from(records, position)
        (delta,) = _LAST_OFFSET_DELTA.unpack_from(records, position + _LAST_OFFSET_DELTA_AT)
        next_offset = base_offset + delta + 1
        position += size
    return next_offset
