"""MirrorCoordinator: drives every mirror partition this broker leads through its states.

Theory of operation. The leader of a mirror partition is the only actor that moves its
state. After every metadata refresh that changed its topic (or the mirror configs), and
whenever a fetcher reports a failure, the coordinator *kicks* each partition it leads
whose topic has ``mirror.name`` set or that it already tracks; every few seconds it also
kicks those that are not settled (a settled partition rests in a state without entry
work, fetching if MIRRORING, with no failure reported and no kick pending: only a
metadata change or a fetcher's report moves it, and both kick it).
A kick runs one task per partition, level-triggered: ask the state machine which event
the current ``mirror.name`` value calls for, persist the new state at the partition's
coordinator, run the new state's entry action, and ask again, until nothing is left to
do. A kick that arrives while the task runs makes it look once more,
so nothing is queued and nothing is lost.

Entry actions:

- PREPARING: ask the source for the last mirrored epoch (LastMirroredEpochs; -1 when it
  knows none or lacks the API) and cut the log at the first local epoch above it (an
  empty log has nothing to cut and skips the question), then wait until every ISR
  member (every replica with ``mirror.support.unclean.leader.election``) has cut its log
  too (``replica_truncation``), polling; TRUNCATION_COMPLETE, or FAILURE when they do not
  within ``replica.lag.time.max.ms``. A remove pre-empts it (STOPPING), and an LME answer
  that arrives after the remove reached the metadata store cuts nothing;
- MIRRORING: hand the partition to the MirrorFetcherManager;
- PAUSING: remove its fetcher, then FETCHERS_REMOVED;
- STOPPING (failover): remove its fetcher, cut to a
  transaction-safe offset at or below the LSO, persist the LME, bump the leader epoch in
  the metadata store above every epoch in the log, append MIRROR_PID_RESET at the new
  epoch, then STOP_COMPLETE; only then does the partition accept produce requests
  (``ReplicaManager.open_stopped_mirror_partition``: a mirror partition is writable only
  while its leader holds it STOPPED, whatever the ``mirror.name`` suffix says);
- FAILED: remove its fetcher.

The steps that cost a round trip (state writes, LastMirroredEpochs, the leader epoch
bump) are coalesced across partitions (``coordinator/batching.py``): each task still
awaits its own step, but a thousand partitions preparing or failing over together share
one LastMirroredEpochs request, a few appends, and one metadata-store transaction and
refresh. The stop cut comes from the producer state and the ``.txnindex``
(``stop_transactions.py``), so STOPPING reads no batch of the log.

A partition that loses leadership is forgotten here (the new leader loads its state).
A leader that loads a stored MIRRORING state (it just became leader, or restarted)
resumes fetching without preparing again: its log is a prefix of what the source had
(it was in the ISR, or every replica took the LME cut), and the first fetch's
diverging-epoch answer cuts whatever the source no longer has, at the exact offset. A
partition found MIRRORING without a fetcher otherwise takes LEADER_ELECTED.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mirrorsim.broker.config import MIRROR_NAME
from mirrorsim.broker.metadata.mirror_source_clusters import MirrorSourceClusters
from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.coordinator.broker_ports import MirrorCoordinatorHost
from mirrorsim.coordinator.last_mirrored_epochs import LastMirroredEpochQueries
from mirrorsim.coordinator.leader_epochs import LeaderEpochBumper
from mirrorsim.coordinator.replica_truncation import (
    FollowerFetch,
    ReplicaTruncationCheck,
    TruncationWait,
)
from mirrorsim.coordinator.source_clusters import SourceClusters
from mirrorsim.coordinator.source_deletions import effective_mirror_name
from mirrorsim.coordinator.source_pool import connection_settings
from mirrorsim.coordinator.source_waits import SourceWaits
from mirrorsim.coordinator.state_client import MirrorStateClient
from mirrorsim.coordinator.state_machine import (
    ENTRY_ACTIONS,
    IN_FLIGHT,
    EntryAction,
    InFlightWork,
    MirrorEvent,
    MirrorPartitionKey,
    MirrorPartitionState,
    StateUpdate,
    event_for_config,
    next_state,
    parse_mirror_name,
)
from mirrorsim.coordinator.state_topic import MirrorStateTopic
from mirrorsim.coordinator.stop_transactions import transactions_deciding_stop_cut
from mirrorsim.coordinator.unclean_elections import (
    SUPPORT_UNCLEAN_ELECTION,
    unclean_mirror_elections,
)
from mirrorsim.fetcher.manager import MirrorFetcherManager
from mirrorsim.fetcher.throttle import MirrorReplicationQuota
from mirrorsim.fetcher.truncation import (
    AppendMirrorPidReset,
    BumpLeaderEpoch,
    PersistLastMirroredEpoch,
    TruncateTo,
    lme_truncation_offset,
    stopping_plan,
)
from mirrorsim.protocol.errors import KafkaError
from mirrorsim.protocol.records import ControlRecordType, RawBatch, build_control_batch

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.2
# How long one attempt to place a relocated partition at the source leader may take. A
# dead source would otherwise hold the partition's reconcile loop for the client's whole
# API timeout, and a failover requested meanwhile would wait behind it.
PLACEMENT_ATTEMPT_S = 2.0
# Source trouble a partition rides out by retrying: logged in one line, not with a trace.
_SOURCE_TROUBLE = (LookupError, TimeoutError, ConnectionError, KafkaError)
PREPARING_POLL_S = 0.05
FULL_SWEEP_S = 5.0
THROTTLED_RATE = "mirror.replication.throttled.rate"
THROTTLED_REPLICAS = "mirror.replication.throttled.replicas"
NO_EPOCH = -1
S = MirrorPartitionState
Key = tuple[str, int]


@dataclass(slots=True)
class MirrorPartitionStatus:
    """What the leader knows of one mirror partition it drives."""

    key: MirrorPartitionKey
    state: MirrorPartitionState
    last_mirror_epoch: int = NO_EPOCH
    source_high_watermark: int = -1
    failure: str | None = None
    relocating: bool = False
    truncated_at_ms: int | None = None
    truncation_wait_since_ms: int | None = None


class MirrorCoordinator:
    def __init__(self, broker: MirrorCoordinatorHost) -> None:
        self._broker = broker
        self.state_topic = MirrorStateTopic(broker)
        self.states = MirrorStateClient(broker, self.state_topic)
        self.leader_epochs = LeaderEpochBumper(broker)
        stored_sources = MirrorSourceClusters(broker.store)
        self.sources = SourceClusters(
            broker.broker_id,
            self._mirror_configs,
            stored_sources.record,
            stored_sources.cluster_ids,
        )
        self.last_mirrored_epochs = LastMirroredEpochQueries(self.sources)
        self.source_waits = SourceWaits(self._answers)
        self.fetchers = MirrorFetcherManager(
            broker_id=broker.broker_id,
            sink=self,
            source_client=self.sources.client,
            mirror_configs=lambda mirror: dict(self.sources.configs(mirror)),
            num_fetchers=lambda: int(broker.config("mirror.num.replica.fetchers")),
            max_wait_ms=lambda: int(broker.config("mirror.fetch.max.wait.ms")),
            metrics=broker.metrics.mirror,
            quota=MirrorReplicationQuota(
                broker_id=broker.broker_id,
                rate=lambda: int(broker.config(THROTTLED_RATE)),
                throttled_replicas=self._throttled_replicas,
            ),
        )
        self._mirrors: dict[str, dict[str, str]] = {}
        self.partitions: dict[Key, MirrorPartitionStatus] = {}
        self._tasks: dict[Key, asyncio.Task[None]] = {}
        self._dirty: set[Key] = set()
        self._unsettled: set[Key] = set()
        """Partitions the periodic sweep looks at: those a reconcile left unsettled and
        those whose fetcher let go of them. Every other partition is settled and moves
        only when a metadata change or a fetcher's report kicks it, so the sweep costs
        what is unsettled, not what is mirrored."""
        self._kicked_topics: Mapping[str, Any] = {}
        self._last_sweep = -FULL_SWEEP_S
        self._stopped = False

    # -- lifecycle -----------------------------------------------------------------------

    async def stop(self) -> None:
        """Cancel every reconcile loop, again and again until each has ended: before
        Python 3.12 ``asyncio.wait_for`` can swallow a cancellation that lands as its
        inner call completes, and a loop that lost its cancellation would retry its
        partition for ever and hold the broker's stop (found by the chaos soak)."""
        self._stopped = True
        tasks = list(self._tasks.values())
        pending = set(tasks)
        while pending:
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=RETRY_BACKOFF_S)
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.source_waits.close()
        await self.leader_epochs.close()
        await self.last_mirrored_epochs.close()
        await self.fetchers.shutdown()
        await self.sources.close_all()
        await self.states.close()

    def _throttled_replicas(self, topic: str) -> list[str]:
        """The topic's ``mirror.replication.throttled.replicas`` entries (none if unset)."""
        found = self._broker.snapshot.topics.get(topic)
        raw = "" if found is None else str(found.configs.get(THROTTLED_REPLICAS) or "")
        return [entry.strip() for entry in raw.split(",") if entry.strip()]

    def _mirror_configs(self) -> dict[str, dict[str, str]]:
        return self._mirrors

    async def on_metadata_change(self) -> None:
        """Reload mirror configs and state partitions, then kick the mirror partitions of
        every topic whose metadata changed, the unsettled ones of all topics when a
        mirror's configs changed, and every ``FULL_SWEEP_S`` the unsettled ones, for
        whatever no metadata change announces. Kicking a thousand settled partitions at
        every refresh would cost a reconcile step each, and even looking at 100,000 of
        them every few seconds costs an idle broker a few percent of a core."""
        previous = self._mirrors
        self._mirrors = {
            name: dict(record.configs)
            for name, record in (await asyncio.to_thread(self._broker.store.mirrors)).items()
        }
        for mirror in previous.keys() & self._mirrors.keys():
            if connection_settings(previous[mirror]) != connection_settings(self._mirrors[mirror]):
                await self._reconnect(mirror)
        self.state_topic.on_metadata_change()
        now = time.monotonic()
        everything = previous != self._mirrors
        sweep = everything or now - self._last_sweep >= FULL_SWEEP_S
        if sweep:
            self._last_sweep = now
        topics = self._broker.snapshot.topics
        kicked, self._kicked_topics = self._kicked_topics, topics
        if topics is not kicked:
            self._warn_unclean_elections(kicked)
            for name, topic in topics.items():
                before = kicked.get(name)
                changed = before is not topic and before != topic
                if changed or everything:
                    self._kick_topic(topic, changed=changed)
            for key in list(self.partitions):
                if key[0] not in topics:
                    self.kick(key)
        elif everything:
            for topic in topics.values():
                self._kick_topic(topic, changed=False)
        if sweep and not everything:
            self._sweep_unsettled(topics)

    def _kick_topic(self, topic: Any, *, changed: bool) -> None:
        """Kick the partitions of ``topic`` this coordinator has business with: all of
        them when the topic changed, else the unsettled ones."""
        mirrored = bool(topic.configs.get(MIRROR_NAME))
        for p in topic.partitions:
            key = (topic.name, p.partition)
            if changed:
                if mirrored or key in self.partitions:
                    self.kick(key)
            elif self._unsettled_here(key, topic):
                self.kick(key)

    def _sweep_unsettled(self, topics: Mapping[str, Any]) -> None:
        """Kick again what a reconcile left unsettled; forget what is settled or no longer
        ours. A partition waiting for its source is left to wait: the sweep brings no news
        of the source, and waking 100,000 of them every few seconds is the retry storm
        ``source_waits`` exists to end."""
        for key in list(self._unsettled):
            if self.source_waits.is_waiting(key):
                continue
            if self._unsettled_here(key, topics.get(key[0])):
                self.kick(key)
            else:
                self._unsettled.discard(key)

    def _unsettled_here(self, key: Key, topic: Any) -> bool:
        """``key`` is not settled and is this coordinator's business: tracked here, or a
        partition of mirror topic ``topic`` that this broker leads."""
        if self._settled(key):
            return False
        if key in self.partitions:
            return True
        return (
            topic is not None
            and key[1] < len(topic.partitions)
            and bool(topic.configs.get(MIRROR_NAME))
            and topic.partitions[key[1]].leader == self._broker.broker_id
        )

    def _after_reconcile(self, key: Key) -> None:
        if self._settled(key):
            self._unsettled.discard(key)
        else:
            self._unsettled.add(key)

    def _settled(self, key: Key) -> bool:
        """Nothing but a metadata change or a fetcher's report can move the partition (both
        kick it), so the periodic sweep passes it by: 100,000 idle mirror partitions cost
        no reconcile step."""
        status = self.partitions.get(key)
        return (
            status is not None
            and status.failure is None
            and not status.relocating
            and key not in self._tasks
            and status.state not in IN_FLIGHT
            and (status.state is not S.MIRRORING or self.fetchers.is_fetching(key))
        )

    def _warn_unclean_elections(self, before: dict[str, Any]) -> None:
        """The spec's warning for an unclean election of a mirror partition this broker now
        leads, unless the topic supports them."""
        for election in unclean_mirror_elections(before, self._broker.snapshot.topics):
            if election.leader == self._broker.broker_id:
                log.warning(
                    "unclean leader election of mirror topic partition %s-%d: broker %d leads "
                    "it from outside the ISR %s; without %s=true its log may hold records the "
                    "source never had",
                    election.topic,
                    election.partition,
                    election.leader,
                    list(election.previous_isr),
                    SUPPORT_UNCLEAN_ELECTION,
                )

    async def _reconnect(self, mirror: str) -> None:
        """Drop the mirror's source connection and fetchers after its connection settings
        changed; the partitions keep their state and resume fetching through a new client
        (relocating, so no new truncation), as the spec's "any valid configuration triggers
        a reconnection" asks."""
        await self.sources.close(mirror)
        for key, status in self.partitions.items():
            if status.key.mirror == mirror and self.fetchers.is_fetching(key):
                self.fetchers.remove_partition(key)
                status.relocating = True
                self._unsettled.add(key)

    def kick(self, key: Key) -> None:
        if self._stopped:
            return
        self._dirty.add(key)
        self.source_waits.wake(key)
        if key not in self._tasks:
            task = asyncio.get_running_loop().create_task(
                self._reconcile(key), name=f"mirror partition {key[0]}-{key[1]}"
            )
            self._tasks[key] = task
            task.add_done_callback(lambda _: self._tasks.pop(key, None))
            task.add_done_callback(lambda _: self._after_reconcile(key))

    # -- the reconcile loop --------------------------------------------------------------

    async def _reconcile(self, key: Key) -> None:
        while key in self._dirty and not self._stopped:
            self._dirty.discard(key)
            try:
                while not self._stopped and await self._step(key):
                    pass
            except _SOURCE_TROUBLE as exc:
                log.log(self._trouble_level(key), "mirror partition %s-%d: %r; retrying", *key, exc)
                kicked = key in self._dirty
                self._dirty.add(key)
                await self._ride_out_source_trouble(key, kicked=kicked)
            except Exception:
                log.exception("mirror partition %s-%d: reconcile failed; retrying", *key)
                self._dirty.add(key)
                await asyncio.sleep(RETRY_BACKOFF_S)

    def _trouble_level(self, key: Key) -> int:
        """A partition's failure against its source is a warning unless a probe of that
        source already runs: then the probe's line counts it among those waiting, and
        100,000 partitions of a source that went down log one line, not 100,000."""
        status = self.partitions.get(key)
        if status is not None and self.source_waits.probing(status.key.mirror):
            return logging.DEBUG
        return logging.WARNING

    async def _ride_out_source_trouble(self, key: Key, *, kicked: bool) -> None:
        """Wait ``RETRY_BACKOFF_S``, then until the mirror's source answers
        (``source_waits``) or the partition is kicked: a source that is down is probed
        once per mirror, not retried by every partition. A partition kicked while its
        step ran (a failover asked for as it tried the source) retries after the first
        wait alone: the kick's news is not yet acted on."""
        status = self.partitions.get(key)
        if status is None or kicked:
            await asyncio.sleep(RETRY_BACKOFF_S)
            return
        await self.source_waits.wait(status.key.mirror, key, at_least_s=RETRY_BACKOFF_S)

    async def _answers(self, mirror: str) -> None:
        """One question to ``mirror``'s source (Metadata for no topics), for
        ``source_waits``."""
        client = await self.sources.client(mirror)
        await client.refresh_metadata([])

    async def _step(self, key: Key) -> bool:
        """Take one transition for ``key``; False when nothing is left to do now."""
        topic_name, index = key
        topic = self._broker.snapshot.topics.get(topic_name)
        assignment = None
        if topic is not None and index < len(topic.partitions):
            assignment = topic.partitions[index]
        if assignment is None or assignment.leader != self._broker.broker_id:
            self._forget(key)
            return False
        config_value = topic.configs.get(MIRROR_NAME)
        mirror = parse_mirror_name(config_value).mirror
        status = self.partitions.get(key)
        if status is None or (mirror is not None and status.key.mirror != mirror):
            if mirror is None:
                return False
            status = await self._load(mirror, topic_name, topic.topic_id, index)
        if status.failure is not None and status.state is not S.FAILED:
            await self._transition(status, MirrorEvent.FAILURE)
            return True
        requested = event_for_config(status.state, effective_mirror_name(topic.configs))
        if status.state is S.MIRRORING and not self.fetchers.is_fetching(key):
            if requested is not None:
                # A pause or a failover asked for while the fetcher was gone goes first:
                # in a disaster the source is down, and restarting the fetcher would fail
                # until it is back, holding the partition read-only.
                await self._transition(status, requested)
            elif status.relocating:
                async with asyncio.timeout(PLACEMENT_ATTEMPT_S):
                    await self._start_fetching(status)
                status.relocating = False
            else:
                await self._transition(status, MirrorEvent.LEADER_ELECTED)
            return True
        if requested is not None:
            # Before the state's own work: a stop pre-empts PREPARING (the table decides
            # which requests an in-flight state accepts; PAUSING and STOPPING take none).
            await self._transition(status, requested)
            return True
        completion = await self._run_in_flight(status, assignment)
        if completion is None:
            return False
        await self._transition(status, completion)
        return True

    async def _load(
        self, mirror: str, topic: str, topic_id: uuid.UUID, index: int
    ) -> MirrorPartitionStatus:
        stored = (await self.states.read(mirror, topic, [index]))[index]
        status = MirrorPartitionStatus(
            MirrorPartitionKey(mirror, topic_id, topic, index),
            stored.state,
            last_mirror_epoch=stored.last_mirror_epoch,
            relocating=stored.state is S.MIRRORING,
        )
        self.partitions[(topic, index)] = status
        self._update_write_gate(status)
        return status

    def _forget(self, key: Key) -> None:
        self.fetchers.remove_partition(key)
        self.partitions.pop(key, None)
        self._broker.replica_manager.close_mirror_partition(*key)

    def _update_write_gate(self, status: MirrorPartitionStatus) -> None:
        """Open the partition to clients exactly while it is STOPPED here. A new or
        restarted leader opens it only once it has loaded the stored STOPPED state, so a
        stored STOPPING keeps it closed until the resumed sequence completes."""
        key = (status.key.topic, status.key.partition)
        if status.state is S.STOPPED:
            self._broker.replica_manager.open_stopped_mirror_partition(*key)
        else:
            self._broker.replica_manager.close_mirror_partition(*key)

    async def _transition(self, status: MirrorPartitionStatus, event: MirrorEvent) -> None:
        new = next_state(status.state, event)
        key = (status.key.topic, status.key.partition)
        self._broker.replica_manager.close_mirror_partition(*key)
        await self.states.write(
            status.key.mirror, status.key.topic, {status.key.partition: StateUpdate(state=new)}
        )
        log.info(
            "mirror %s partition %s-%d: %s --%s--> %s",
            status.key.mirror,
            *key,
            status.state.name,
            event.name,
            new.name,
        )
        status.state = new
        self._update_write_gate(status)
        status.truncated_at_ms = None
        status.truncation_wait_since_ms = None
        if new is not S.FAILED:
            status.failure = None
        action = ENTRY_ACTIONS[new]
        if action is EntryAction.START_FETCHING:
            await self._start_fetching(status)
        elif action is EntryAction.REMOVE_FETCHER:
            self.fetchers.remove_partition(key)
        if new is S.FAILED:
            log.error("mirror partition %s-%d failed: %s", *key, status.failure)

    async def _start_fetching(self, status: MirrorPartitionStatus) -> None:
        key = status.key
        await self.fetchers.add_partition(key.mirror, key.topic, key.partition, key.topic_id)

    async def _run_in_flight(
        self, status: MirrorPartitionStatus, assignment: PartitionAssignment
    ) -> MirrorEvent | None:
        """The work of a transient state (``IN_FLIGHT``), and its completion event once
        the work is done; None for a stable state or while the work must wait."""
        found = IN_FLIGHT.get(status.state)
        if found is None:
            return None
        work, completion = found
        if work is InFlightWork.PREPARE:
            return await self._prepare(status)
        if work is InFlightWork.REMOVE_FETCHER:
            self.fetchers.remove_partition((status.key.topic, status.key.partition))
        else:
            await self._stop(status, assignment)
        return completion

    # -- entry actions -------------------------------------------------------------------

    async def _prepare(self, status: MirrorPartitionStatus) -> MirrorEvent | None:
        """LME cut here, then wait for the followers' cuts; None while still waiting."""
        key = (status.key.topic, status.key.partition)
        partition = self._broker.replica_manager.partition(*key)
        if status.truncated_at_ms is None:
            if not await self._truncate_to_last_mirrored_epoch(status):
                asyncio.get_running_loop().call_later(PREPARING_POLL_S, self.kick, key)
                return None
            status.truncated_at_ms = partition.clock()
        check = self._replica_truncation_check(status, partition)
        followers = {
            replica: FollowerFetch(progress.log_end_offset, progress.last_fetch_ms)
            for replica, progress in partition.followers.items()
        }
        now = partition.clock()
        outcome = check.outcome(followers, now)
        if outcome is TruncationWait.COMPLETE:
            return MirrorEvent.TRUNCATION_COMPLETE
        if outcome is TruncationWait.BELOW_MIN_ISR:
            if status.truncation_wait_since_ms is None:
                log.warning(
                    "mirror partition %s-%d: ISR %s below min.insync.replicas %d; "
                    "waiting to complete the last mirrored epoch truncation",
                    *key,
                    list(check.isr),
                    check.min_insync_replicas,
                )
            status.truncation_wait_since_ms = now
        if outcome is TruncationWait.TIMED_OUT:
            status.failure = (
                f"replicas {check.pending(followers)} (ISR {list(check.isr)}) did not complete "
                f"the last mirrored epoch truncation within {check.timeout_ms} ms"
            )
            return MirrorEvent.FAILURE
        asyncio.get_running_loop().call_later(PREPARING_POLL_S, self.kick, key)
        return None

    def _replica_truncation_check(
        self, status: MirrorPartitionStatus, partition: Any
    ) -> ReplicaTruncationCheck:
        assert status.truncated_at_ms is not None
        topic = self._broker.snapshot.topics[status.key.topic]
        support = str(topic.configs.get(SUPPORT_UNCLEAN_ELECTION, "false")).lower() == "true"
        return ReplicaTruncationCheck(
            leader=self._broker.broker_id,
            replicas=tuple(partition.state.replicas),
            isr=tuple(partition.state.isr),
            min_insync_replicas=partition.state.min_insync_replicas(),
            all_replicas_required=support,
            leader_log_end_offset=partition.log_end_offset,
            truncated_at_ms=status.truncated_at_ms,
            timeout_ms=int(self._broker.config("replica.lag.time.max.ms")),
            waiting_since_ms=status.truncation_wait_since_ms,
        )

    async def _truncate_to_last_mirrored_epoch(self, status: MirrorPartitionStatus) -> bool:
        """Cut at the source's LME; False when the topic was removed from the mirror (or
        deleted) while the source was being asked, and nothing was cut.

        A log with nothing in it (a new mirror topic) has nothing to cut whatever the LME
        is, so the source is not asked; only the epoch this broker opened at offset 0 as
        leader goes, so that the first fetch does not name an epoch the source never had
        as its last fetched one. Otherwise the answer may take long (a source that is
        down or whose state coordinator moves), and a remove accepted meanwhile must
        keep the log whole: the topic config is read again from the metadata store, which
        RemoveTopicsFromMirror writes before it answers, right before the cut."""
        key = status.key
        partition_log = self.local_log(key.topic, key.partition)
        if partition_log.log_end_offset == 0:
            self._broker.replica_manager.truncate_to(key.topic, key.partition, 0)
            return True
        lme = await self.last_mirrored_epochs.last_mirrored_epoch(
            key.mirror, key.topic, key.topic_id, key.partition
        )
        if await self._stop_requested(key.topic):
            log.info(
                "mirror %s partition %s-%d: removed while preparing; no LME cut",
                key.mirror,
                key.topic,
                key.partition,
            )
            return False
        offset = lme_truncation_offset(
            partition_log.epoch_cache.epoch_entries, lme, partition_log.log_end_offset
        )
        log.info(
            "mirror %s partition %s-%d: source LME %d, truncating to %d (log end %d)",
            key.mirror,
            key.topic,
            key.partition,
            lme,
            offset,
            partition_log.log_end_offset,
        )
        if lme == NO_EPOCH:
            self._broker.replica_manager.truncate_fully_and_start_at(key.topic, key.partition, 0)
        else:
            self._broker.replica_manager.truncate_to(key.topic, key.partition, offset)
        return True

    async def _stop_requested(self, topic: str) -> bool:
        """The metadata store's current config of ``topic`` asks a PREPARING partition to
        stop (or the topic is gone)."""
        configs = await asyncio.to_thread(self._broker.store.topic_configs, topic)
        if configs is None:
            return True
        return event_for_config(S.PREPARING, effective_mirror_name(configs)) is not None

    async def _stop(self, status: MirrorPartitionStatus, assignment: PartitionAssignment) -> None:
        key = status.key
        self.fetchers.remove_partition((key.topic, key.partition))
        source_cluster_id = await self.sources.cluster_id(key.mirror)
        partition = self._broker.replica_manager.partition(key.topic, key.partition)
        partition_log = partition.log
        plan = stopping_plan(
            epoch_entries=partition_log.epoch_cache.epoch_entries,
            log_end_offset=partition_log.log_end_offset,
            last_stable_offset=partition.last_stable_offset,
            transactions=transactions_deciding_stop_cut(
                last_stable_offset=partition.last_stable_offset,
                log_start_offset=partition_log.log_start_offset,
                open_transactions=partition_log.producer_state.ongoing_transactions(),
                aborted_ending_at_or_after=partition_log.aborted_transactions_ending_at_or_after,
            ),
            current_leader_epoch=assignment.leader_epoch,
            source_cluster_id=source_cluster_id,
        )
        for step in plan:
            if isinstance(step, TruncateTo):
                self._broker.replica_manager.truncate_to(key.topic, key.partition, step.offset)
            elif isinstance(step, PersistLastMirroredEpoch):
                await self.states.write(
                    key.mirror,
                    key.topic,
                    {key.partition: StateUpdate(last_mirror_epoch=step.epoch)},
                )
                status.last_mirror_epoch = step.epoch
            elif isinstance(step, BumpLeaderEpoch):
                await self._bump_leader_epoch(key.topic, assignment, step.min_epoch)
            elif isinstance(step, AppendMirrorPidReset):
                await self._append_pid_reset(key.topic, key.partition, step.source_cluster_id)

    async def _bump_leader_epoch(
        self, topic: str, assignment: PartitionAssignment, epoch: int
    ) -> None:
        await self.leader_epochs.bump(topic, assignment.partition, epoch)

    async def _append_pid_reset(self, topic: str, partition: int, source_cluster_id: str) -> None:
        """MIRROR_PID_RESET is the first batch of the partition's new leader epoch, so the
        epoch's start goes into the epoch cache at the log end first and the cache never
        lags behind the log's batches. That checkpoint write is unsynced: after a crash,
        recovery relearns epoch starts from the batches above its recovery point (the
        reset included) and drops an epoch no batch has started, which the resumed
        STOPPING sequence opens again (broker/log/epoch_cache.py).

        The sequence goes on (to STOPPED, and writable) only once every in-sync replica has
        the reset, as Kafka waits for its own control records: a follower that took over
        without it would keep the source's producers in its producer state, and a local
        producer given the same id would be refused or, worse, deduplicated against them.
        A wait that ends without it fails the step, and the resumed sequence cuts the
        unreplicated reset at the last stable offset and writes a new one."""
        manager = self._broker.replica_manager
        target = manager.partition(topic, partition)
        target.log.epoch_cache.assign(target.leader_epoch, target.log_end_offset)
        reset = build_control_batch(
            ControlRecordType.MIRROR_PID_RESET,
            producer_id=-1,
            producer_epoch=-1,
            timestamp=int(time.time() * 1000),
            source_cluster_id=source_cluster_id,
        )
        await manager.append_internal_replicated(
            topic, partition, [reset], 2 * int(self._broker.config("replica.lag.time.max.ms"))
        )

    # -- MirrorSink: what fetchers call --------------------------------------------------

    def local_log(self, topic: str, partition: int) -> Any:
        return self._broker.replica_manager.partition(topic, partition).log

    def append(self, topic: str, partition: int, batches: list[RawBatch]) -> None:
        self._broker.replica_manager.append_mirror_batches(topic, partition, batches)

    def truncate_to(self, topic: str, partition: int, offset: int) -> None:
        self._broker.replica_manager.truncate_to(topic, partition, offset)

    def restart_at(self, topic: str, partition: int, offset: int) -> None:
        self._broker.replica_manager.truncate_fully_and_start_at(topic, partition, offset)

    def follow_log_start(self, topic: str, partition: int, offset: int) -> None:
        """Retention on the source moved its log start: follow, up to the high watermark."""
        self._broker.replica_manager.partition(topic, partition).follow_log_start_offset(offset)

    def record_source_offsets(self, topic: str, partition: int, high_watermark: int) -> None:
        status = self.partitions.get((topic, partition))
        if status is not None:
            status.source_high_watermark = high_watermark

    def partition_failed(self, topic: str, partition: int, reason: str) -> None:
        status = self.partitions.get((topic, partition))
        if status is not None:
            status.failure = reason
            self.kick((topic, partition))

    def relocate(self, topic: str, partition: int) -> None:
        """The source leader moved: fetch from the new one, without preparing again."""
        self.fetchers.remove_partition((topic, partition))
        status = self.partitions.get((topic, partition))
        if status is not None:
            status.relocating = True
            self.kick((topic, partition))
