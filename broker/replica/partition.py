"""One partition replica on this broker: its role, leader epoch, ISR and high watermark.

The log (``PartitionLog``) stores batches and persists the high watermark; this class
decides what may be appended and what may be read. As leader it moves the high watermark:
the smallest log end offset among the ISR members (a follower's log end offset is what its
last Fetch asked for), so with a single in-sync replica it follows every append.
Consumers read up to the high watermark (read_uncommitted) or the last stable offset
(read_committed); followers read up to the log end offset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mirrorsim.broker.config import MIRROR_NAME
from mirrorsim.broker.log.errors import OffsetOutOfRangeError, StorageError
from mirrorsim.broker.log.partition_log import PartitionLog
from mirrorsim.broker.replica.fetch_session import PartitionFetch
from mirrorsim.broker.replica.partition_state import PartitionState
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.records.raw_batch import RawBatch

NO_EPOCH = -1
CONSUMER_REPLICA_ID = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


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
    at_end: bool = False
    """The fetch offset is at the end of what this fetcher may read (log end for a
    follower, LSO under read_committed, else the high watermark)."""


@dataclass(slots=True)
class ReplicaProgress:
    """What the leader knows of a follower from its fetches.

    ``last_caught_up_ms`` is Kafka's ``lastCaughtUpTimeMs``: the last time the follower had
    fetched up to the leader's log end offset (as of then, or as of its previous fetch);
    the ISR drops a follower whose catch-up time is older than ``replica.lag.time.max.ms``.
    """

    log_end_offset: int = -1
    last_fetch_ms: int = -1
    last_fetch_leader_log_end_offset: int = -1
    last_caught_up_ms: int = -1
    broker_epoch: int = -1
    """The follower incarnation's broker epoch its last fetch carried (-1: not sent); an
    ISR expansion names it so the controller refuses a newer incarnation (KIP-903)."""


@dataclass(slots=True)
class Partition:
    broker_id: int
    state: PartitionState
    log: PartitionLog
    clock: Callable[[], int]
    followers: dict[int, ReplicaProgress] = field(default_factory=dict)
    followed_log_start_offset: int = -1
    joining: frozenset[int] = frozenset()
    """Followers this leader has asked the controller to add to the ISR, until the change
    is settled: they hold the high watermark as ISR members do (Kafka's maximal ISR).
    The controller counts them in the ISR, and may elect one, once it writes the change,
    before this leader reads it back; an append acknowledged without them could be lost."""

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
    def under_min_isr(self) -> bool:
        """Fewer in-sync replicas than ``min.insync.replicas``: an acks=all write would
        not be on enough of them to survive, so it is refused (before the append) or
        reported (after it)."""
        return len(self.state.isr) < self.state.min_insync_replicas()

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
        """Take a new metadata state; True when leadership or the ISR changed.

        A new leader term starts from scratch, as in Kafka's ``makeLeader``: the epoch's
        start offset is the log end offset, follower progress from an earlier term is
        forgotten, and ISR members count as caught up now so they are not dropped at once.
        A mirror partition's log carries the source cluster's epochs, which this cluster's
        leader epoch must not overwrite. A replica dropped from the ISR within a term (a
        shrink, or the controller fencing a dead broker) must fetch again before it may
        rejoin: its last fetch proves nothing about a broker that may be gone, and the
        controller would refuse it (INELIGIBLE_REPLICA) at every fetch of the others.
        """
        changed = (state.leader, state.leader_epoch, state.isr) != (
            self.state.leader,
            self.state.leader_epoch,
            self.state.isr,
        )
        dropped = set(self.state.isr) - set(state.isr)
        new_term = state.leader_epoch != self.state.leader_epoch or not self.followers
        self.state = state
        if new_term or not self.is_leader:
            self.joining = frozenset()
        if self.is_leader and new_term:
            now = self.clock()
            self.followers = {
                replica: ReplicaProgress(last_caught_up_ms=now if replica in state.isr else -1)
                for replica in state.replicas
                if replica != self.broker_id
            }
            latest = self.log.latest_epoch
            if not state.configs.get(MIRROR_NAME) and (
                latest is None or state.leader_epoch > latest
            ):
                self.log.epoch_cache.assign(state.leader_epoch, self.log_end_offset)
        else:
            self.followers = {
                replica: self.followers.get(replica, ReplicaProgress())
                for replica in state.replicas
                if replica != self.broker_id
            }
            for replica in dropped & self.followers.keys():
                self.followers[replica].log_end_offset = -1
        if self.is_leader:
            self.maybe_increment_high_watermark()
        return changed

    @property
    def is_follower(self) -> bool:
        return not self.is_leader and self.state.leader >= 0

    def check_leader_epoch(self, current_leader_epoch: int, *, require_leader: bool) -> None:
        """Kafka's leader-epoch fencing for requests that carry the caller's view."""
        if current_leader_epoch != NO_EPOCH:
            if current_leader_epoch < self.leader_epoch:
                raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH)
            if current_leader_epoch > self.leader_epoch:
                raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH)
        if require_leader and not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    @property
    def mirror_leader_epoch(self) -> int:
        """The latest epoch in a mirror partition's log (spec "Mirror Leader Epoch"), -1
        for other partitions: the batches carry the source cluster's epochs, not this
        cluster's leader epoch, so followers bound what they append by this one instead."""
        if not self.state.configs.get(MIRROR_NAME):
            return NO_EPOCH
        latest = self.log.latest_epoch
        return NO_EPOCH if latest is None else latest

    def check_mirror_leader_epoch(self, mirror_leader_epoch: int) -> None:
        """Fence a follower's Fetch v19 ``MirrorLeaderEpoch`` as CurrentLeaderEpoch is
        fenced: an older one means this log moved on to a newer source epoch since the
        follower last heard (FENCED_LEADER_EPOCH), a newer one that this log no longer has
        the epoch the follower saw (UNKNOWN_LEADER_EPOCH: a last-mirrored-epoch cut). The
        answer carries this log's epoch, which the follower adopts before fetching again,
        so every batch it appends is checked against the epoch its request named."""
        if mirror_leader_epoch == NO_EPOCH or not self.state.configs.get(MIRROR_NAME):
            return
        latest = self.mirror_leader_epoch
        if mirror_leader_epoch < latest:
            raise KafkaError(
                ErrorCode.FENCED_LEADER_EPOCH,
                f"Mirror leader epoch {mirror_leader_epoch} is older than {latest} "
                f"of {self.topic}-{self.index}",
            )
        if mirror_leader_epoch > latest:
            raise KafkaError(
                ErrorCode.UNKNOWN_LEADER_EPOCH,
                f"Mirror leader epoch {mirror_leader_epoch} is newer than {latest} "
                f"of {self.topic}-{self.index}",
            )

    def check_writable(self, required_acks: int, *, mirror_partition_stopped: bool) -> None:
        """Refuse a produce this leader must not take; ``mirror_partition_stopped``: the
        mirror coordinator found this partition STOPPED (see ``accepts_produce``)."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if not self.state.accepts_produce(mirror_partition_stopped):
            raise KafkaError(
                ErrorCode.READ_ONLY_TOPIC,
                f"Topic {self.topic} is a mirror topic and accepts no produce requests "
                f"until partition {self.index} is STOPPED",
            )
        if required_acks == -1 and self.under_min_isr:
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
        """Advance the high watermark to the smallest log end offset of the ISR and of the
        followers joining it; True if it moved."""
        if not self.is_leader:
            return False
        candidate = self.log_end_offset
        for replica in (*self.state.isr, *self.joining):
            if replica == self.broker_id:
                continue
            progress = self.followers.get(replica)
            candidate = min(candidate, progress.log_end_offset if progress else -1)
        if candidate > self.high_watermark:
            self.log.update_high_watermark(candidate)
            self._raise_log_start_to_followed()
            return True
        return False

    def follow_log_start_offset(self, offset: int) -> None:
        """A mirror leader follows its source's log start (retention, DeleteRecords) as far
        as its own high watermark allows now, and the rest as the high watermark advances:
        the source reports a log start only when it changes, and the followers may not have
        caught up yet."""
        self.followed_log_start_offset = max(self.followed_log_start_offset, offset)
        self._raise_log_start_to_followed()

    def _raise_log_start_to_followed(self) -> None:
        target = min(self.followed_log_start_offset, self.high_watermark)
        if target > self.log_start_offset:
            self.log.maybe_increment_log_start_offset(target)

    def record_follower_fetch(
        self, replica_id: int, fetch_offset: int, broker_epoch: int = -1
    ) -> bool:
        """A follower fetched from ``fetch_offset``: all before it is on its log."""
        progress = self.followers.get(replica_id)
        if progress is None:
            raise KafkaError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"Broker {replica_id} is not a replica of {self.topic}-{self.index}",
            )
        now = self.clock()
        if fetch_offset >= self.log_end_offset:
            progress.last_caught_up_ms = max(progress.last_caught_up_ms, now)
        elif fetch_offset >= progress.last_fetch_leader_log_end_offset:
            progress.last_caught_up_ms = max(progress.last_caught_up_ms, progress.last_fetch_ms)
        progress.log_end_offset = fetch_offset
        progress.broker_epoch = broker_epoch
        progress.last_fetch_ms = now
        progress.last_fetch_leader_log_end_offset = self.log_end_offset
        return self.maybe_increment_high_watermark()

    def forget_follower_offsets_past_log_end(self) -> None:
        """A leader-side cut (mirroring's LME and stop truncations) removed records that
        followers had fetched: their last fetch offsets no longer name a prefix of this log,
        so they count for nothing (high watermark, ISR expansion) until the next fetch."""
        for progress in self.followers.values():
            if progress.log_end_offset > self.log_end_offset:
                progress.log_end_offset = -1

    # -- ISR (leader side) -------------------------------------------------------------

    def isr_to_expand(self) -> tuple[int, ...] | None:
        """The ISR with every caught-up follower added, or None when nobody qualifies.

        Kafka's rule: a follower rejoins once its log end offset reaches the high
        watermark and the start of the current leader epoch.
        """
        if not self.is_leader:
            return None
        epoch_start = self._current_epoch_start()
        joining = [
            replica
            for replica, progress in self.followers.items()
            if replica not in self.state.isr
            and progress.log_end_offset >= self.high_watermark
            and progress.log_end_offset >= epoch_start
        ]
        return (*self.state.isr, *sorted(joining)) if joining else None

    def isr_to_shrink(self, lag_time_max_ms: int) -> tuple[int, ...] | None:
        """The ISR without followers that have not caught up for ``lag_time_max_ms``."""
        if not self.followers or not self.is_leader:
            return None
        now = self.clock()
        lagging = {
            replica
            for replica in self.state.isr
            if replica != self.broker_id
            and (progress := self.followers.get(replica)) is not None
            and now - progress.last_caught_up_ms > lag_time_max_ms
        }
        return tuple(r for r in self.state.isr if r not in lagging) if lagging else None

    def _current_epoch_start(self) -> int:
        for entry in reversed(self.log.epoch_cache.epoch_entries):
            if entry.epoch <= self.leader_epoch:
                return entry.start_offset
        return 0

    # -- follower side ------------------------------------------------------------------

    def append_as_follower(
        self,
        batches: list[RawBatch],
        leader_high_watermark: int,
        leader_log_start_offset: int,
        *,
        crc_checked: bool = False,
    ) -> None:
        """Append what the leader sent (bytes unchanged), then follow its high watermark.

        Gaps are accepted as Kafka's follower does: a compacted leader log, or a mirror
        leader that copied a compacted source, has offsets with no record.
        """
        if batches:
            self.log.append_as_follower(batches, allow_gaps=True, crc_checked=crc_checked)
        self.update_follower_high_watermark(leader_high_watermark)
        if 0 <= leader_log_start_offset <= self.high_watermark:
            self.log.maybe_increment_log_start_offset(leader_log_start_offset)

    def update_follower_high_watermark(self, leader_high_watermark: int) -> None:
        if leader_high_watermark >= 0:
            self.log.update_high_watermark(min(leader_high_watermark, self.log_end_offset))

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
        self.check_mirror_leader_epoch(fetch.mirror_leader_epoch)
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
            return self._empty_read(
                read_committed=isolation_level == READ_COMMITTED,
                at_end=fetch.fetch_offset >= max_offset,
            )
        try:
            data = self.log.read(
                fetch.fetch_offset,
                max_bytes,
                max_offset=max_offset,
                min_one_batch=min_one_message,
            )
        except OffsetOutOfRangeError as exc:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, str(exc)) from exc
        except StorageError as exc:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from exc
        aborted = None
        if isolation_level == READ_COMMITTED:
            aborted = tuple(
                (txn.producer_id, txn.first_offset)
                for txn in self.log.collect_aborted_transactions(
                    fetch.fetch_offset, data.next_offset
                )
            )
        return PartitionRead(
            records=data.records,
            high_watermark=self.high_watermark,
            last_stable_offset=self.last_stable_offset,
            log_start_offset=self.log_start_offset,
            aborted_transactions=aborted,
        )

    def _empty_read(
        self,
        *,
        read_committed: bool = False,
        diverging_epoch: tuple[int, int] | None = None,
        at_end: bool = False,
    ) -> PartitionRead:
        return PartitionRead(
            records=b"",
            high_watermark=self.high_watermark,
            last_stable_offset=self.last_stable_offset,
            log_start_offset=self.log_start_offset,
            aborted_transactions=() if read_committed else None,
            diverging_epoch=diverging_epoch,
            at_end=at_end,
        )

    def _diverging_epoch(
        self, last_fetched_epoch: int, fetch_offset: int
    ) -> tuple[int, int] | None:
        """Kafka's check for a fetcher whose last epoch ends earlier here than it thinks.

        An epoch this log cannot place (newer than every epoch here, or an empty log) is
        OFFSET_OUT_OF_RANGE, as in Kafka: (-1, -1) on the wire means "no divergence", so
        the fetcher would keep asking for the same offset. It happens after a mirror
        leader's last-mirrored-epoch cut, whose log keeps the source's epochs instead of
        this cluster's leader epoch; the fetcher then cuts back to the leader's log end.
        """
        epoch, end_offset = self.end_offset_for_epoch(last_fetched_epoch)
        if epoch == NO_EPOCH or end_offset < 0:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"The end offset of epoch {last_fetched_epoch} (fetch offset {fetch_offset}) "
                f"is unknown on {self.topic}-{self.index}",
            )
        if end_offset < fetch_offset or epoch < last_fetched_epoch:
            return epoch, end_offset
        return None

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """(largest epoch <= ``leader_epoch``, the offset where it ends) on this log."""
        return self.log.end_offset_for_epoch(leader_epoch)
