"""The controller role of one broker: hold the lease, watch liveness, elect leaders.

Every broker runs ``tick`` each ``metadata.refresh.interval.ms``. It tries to take or renew
the controller lease (valid for ``broker.session.timeout.ms``); the holder is the active
controller and then re-plans every partition against the live brokers (a broker is live
while its heartbeat is younger than the session timeout and it is registered): dead
brokers leave the ISR, a dead leader is replaced by a clean election, or an unclean one
where the topic's ``unclean.leader.election.enable`` allows it. Each change is one
compare-and-set write fenced by the lease, followed by a metadata refresh of this broker;
the other brokers see it at their next refresh.

Leader balancing: with ``auto.leader.rebalance.enable`` (the default), the active
controller moves each partition back to its preferred replica (the first of its
assignment) once that one is live and in the ISR again, each
``leader.imbalance.check.interval.seconds``, as Kafka's KRaft controller does.

Controlled shutdown: a stopping broker gives up the lease, unregisters (so it is no
longer live) and waits until the active controller has moved its leaderships away and
taken it out of every ISR that has another live member, as KRaft's controlled shutdown
does. Otherwise a broker stopped right after it would leave both in the ISR, and the
first of them to come back would be elected cleanly with a log the other may exceed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mirrorsim.broker.controller.alter_partition import (
    NO_BROKER_EPOCH,
    BrokerSession,
    ControllerFence,
    PartitionWriter,
    unfence,
)
from mirrorsim.broker.controller.election import (
    ElectionType,
    elect_leader,
    may_unfence,
    plan_partition,
    rebalanced,
)
from mirrorsim.broker.controller.lease import ControllerLease, LeaseState
from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.broker.metadata.store import MetadataStore
from mirrorsim.broker.metadata.view import ClusterSnapshot
from mirrorsim.broker.replica.partition_state import PartitionState
from mirrorsim.protocol.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

UNCLEAN_CONFIG = "unclean.leader.election.enable"
MAX_ELECTIONS_PER_PASS = 1000
"""Kafka's ``maxElectionsPerImbalance``: a leader balancing pass elects at most this many
preferred leaders, and the next pass follows at once, so that a broker coming back to
100,000 partitions does not move them in one go."""
TopicPartition = tuple[str, int]


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class _RepairInputs:
    """Everything a repair pass's plan is a function of."""

    controller_epoch: int
    metadata_version: int
    live: frozenset[int]
    unclean_by_default: bool
    fenced: frozenset[tuple[int, int]]


class ClusterController:
    def __init__(
        self,
        *,
        broker_id: int,
        store: MetadataStore,
        config: Callable[[str], Any],
        on_change: Callable[[], Awaitable[None]],
        clock: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.broker_id = broker_id
        self._store = store
        self._config = config
        self._on_change = on_change
        self._clock = clock
        self.lease = ControllerLease(store.engine)
        self.writer = PartitionWriter(store.engine)
        self.lease_state: LeaseState | None = None
        self._snapshot = ClusterSnapshot()
        self._settled: _RepairInputs | None = None
        self.broker_epoch = NO_BROKER_EPOCH
        """This broker's incarnation, once registered: named in its ISR writes."""

    @property
    def session_timeout_ms(self) -> int:
        return int(self._config("broker.session.timeout.ms"))

    def is_active(self) -> bool:
        state = self.lease_state
        return state is not None and state.is_held_by(self.broker_id, self._clock())

    def active_controller_id(self) -> int:
        """The lease holder as last seen (-1 when unknown or expired)."""
        state = self.lease_state
        return -1 if state is None else state.holder(self._clock())

    # -- the periodic job -------------------------------------------------------------

    async def tick(self) -> None:
        """Take or renew the lease; as the active controller, repair every partition."""
        now = self._clock()
        state = await asyncio.to_thread(
            self.lease.acquire_or_renew, self.broker_id, now, self.session_timeout_ms
        )
        previous, self.lease_state = self.lease_state, state
        if not state.is_held_by(self.broker_id, now):
            return
        if previous is None or previous.controller_epoch != state.controller_epoch:
            log.info(
                "broker %d is the active controller (controller epoch %d)",
                self.broker_id,
                state.controller_epoch,
            )
        await self._repair_partitions(state)

    async def _repair_partitions(self, state: LeaseState) -> None:
        """Plan every partition against the live brokers, unless nothing the plan depends
        on moved since a pass that found nothing to write: re-planning 10,000 settled
        partitions twice a second would only find them settled again."""
        snapshot = await asyncio.to_thread(self._store.snapshot, self._snapshot)
        self._snapshot = snapshot
        now = self._clock()
        live = self._live(snapshot, now)
        fenced = frozenset(
            (b.broker_id, b.broker_epoch)
            for b in snapshot.live_brokers(now, self.session_timeout_ms)
            if b.fenced
        )
        inputs = _RepairInputs(
            state.controller_epoch,
            snapshot.version,
            frozenset(live),
            bool(self._config(UNCLEAN_CONFIG)),
            fenced,
        )
        if inputs == self._settled:
            return
        fence = ControllerFence(self.broker_id, state.controller_epoch, now)
        writes: list[tuple[str, PartitionAssignment, PartitionAssignment]] = []
        for topic in snapshot.topics.values():
            unclean = self._unclean_allowed(topic.configs)
            for current in topic.partitions:
                planned = plan_partition(current, live, unclean_allowed=unclean)
                if planned != current:
                    writes.append((topic.name, current, planned))
        self._settled = None if writes or fenced else inputs
        changed = False
        for topic_name, current, planned in writes:
            written = await asyncio.to_thread(
                self.writer.compare_and_set, topic_name, current, planned, fence=fence
            )
            if written:
                changed = True
                log.info(
                    "controller %d: %s-%d leader %d->%d epoch %d->%d isr %s->%s",
                    self.broker_id,
                    topic_name,
                    current.partition,
                    current.leader,
                    planned.leader,
                    current.leader_epoch,
                    planned.leader_epoch,
                    list(current.isr),
                    list(planned.isr),
                )
        if not writes:
            changed = await self._unfence_settled(snapshot, live, fenced, fence) or changed
        if changed:
            await self._on_change()

    async def _unfence_settled(
        self,
        snapshot: ClusterSnapshot,
        live: set[int],
        fenced: frozenset[tuple[int, int]],
        fence: ControllerFence,
    ) -> bool:
        """Unfence every new incarnation whose old roles the store no longer shows (the
        pass before moved them); True if any was unfenced."""
        partitions = [p for topic in snapshot.topics.values() for p in topic.partitions]
        unfenced = False
        for broker_id, broker_epoch in sorted(fenced):
            if not may_unfence(broker_id, partitions, live):
                continue
            if await asyncio.to_thread(unfence, self._store.engine, broker_id, broker_epoch, fence):
                unfenced = True
                log.info(
                    "controller %d: broker %d (broker epoch %d) unfenced",
                    self.broker_id,
                    broker_id,
                    broker_epoch,
                )
        return unfenced

    async def unfence_if_idle(self) -> bool:
        """Clear this broker's own fence when its new incarnation holds no role: a first
        start, or a restart after a controlled shutdown. Safe without the controller: while
        an incarnation is fenced nothing gives it a role (it is not live for elections, and
        ISR writes refuse it), so roles seen after the registration can only shrink. With
        a role left (a crash), the active controller moves it first, at its next pass."""
        snapshot = await asyncio.to_thread(self._store.snapshot)
        partitions = [p for topic in snapshot.topics.values() for p in topic.partitions]
        if not may_unfence(self.broker_id, partitions, self._live(snapshot, self._clock())):
            return False
        return await asyncio.to_thread(
            unfence, self._store.engine, self.broker_id, self.broker_epoch, None
        )

    def _live(self, snapshot: ClusterSnapshot, now_ms: int) -> set[int]:
        """Brokers that may lead and be in an ISR: heartbeating and not fenced."""
        return {
            b.broker_id
            for b in snapshot.live_brokers(now_ms, self.session_timeout_ms)
            if not b.fenced
        }

    def _unclean_allowed(self, topic_configs: dict[str, str]) -> bool:
        override = topic_configs.get(UNCLEAN_CONFIG)
        if override is not None:
            return override.strip().lower() == "true"
        return bool(self._config(UNCLEAN_CONFIG))

    # -- ElectLeaders -----------------------------------------------------------------

    async def elect_leaders(
        self, election_type: ElectionType, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, KafkaError | None]:
        """ElectLeaders on the active controller: per partition None or its error."""
        state = self.lease_state
        if state is None or not state.is_held_by(self.broker_id, self._clock()):
            raise KafkaError(ErrorCode.NOT_CONTROLLER)
        snapshot = await asyncio.to_thread(self._store.snapshot)
        now = self._clock()
        live = self._live(snapshot, now)
        fence = ControllerFence(self.broker_id, state.controller_epoch, now)
        wanted = (
            [(t.name, p.partition) for t in snapshot.topics.values() for p in t.partitions]
            if partitions is None
            else list(partitions)
        )
        results: dict[TopicPartition, KafkaError | None] = {}
        for topic_name, index in wanted:
            topic = snapshot.topics.get(topic_name)
            current = next(
                (p for p in topic.partitions if p.partition == index) if topic else (), None
            )
            if current is None:
                results[(topic_name, index)] = KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            try:
                elected = elect_leader(current, live, election_type)
            except KafkaError as exc:
                results[(topic_name, index)] = exc
                continue
            written = await asyncio.to_thread(
                self.writer.compare_and_set, topic_name, current, elected, fence=fence
            )
            results[(topic_name, index)] = (
                None if written else KafkaError(ErrorCode.NOT_CONTROLLER, "lost a write race")
            )
        if any(result is None for result in results.values()):
            await self._on_change()
        return results

    # -- leader balancing (auto.leader.rebalance.enable) ---------------------------------

    async def balance_leaders(self) -> int:
        """As the active controller with ``auto.leader.rebalance.enable``, move every
        partition back to its preferred replica where that one is live and in the ISR
        (``rebalanced``): after a broker restarts, the others keep its leaderships until
        this pass, each ``leader.imbalance.check.interval.seconds``. At most
        ``MAX_ELECTIONS_PER_PASS`` per pass, passes back to back until none is left.
        Returns how many leaders moved."""
        moved = 0
        while self._config("auto.leader.rebalance.enable"):
            state = self.lease_state
            if state is None or not state.is_held_by(self.broker_id, self._clock()):
                break
            snapshot = await asyncio.to_thread(self._store.snapshot)
            now = self._clock()
            live = self._live(snapshot, now)
            planned = [
                (topic.name, current, elected)
                for topic in snapshot.topics.values()
                for current in topic.partitions
                if (elected := rebalanced(current, live)) is not None
            ][:MAX_ELECTIONS_PER_PASS]
            fence = ControllerFence(self.broker_id, state.controller_epoch, now)
            written = 0
            for topic_name, current, elected in planned:
                if await asyncio.to_thread(
                    self.writer.compare_and_set, topic_name, current, elected, fence=fence
                ):
                    written += 1
                    log.info(
                        "controller %d: %s-%d back to its preferred leader %d->%d epoch %d",
                        self.broker_id,
                        topic_name,
                        current.partition,
                        current.leader,
                        elected.leader,
                        elected.leader_epoch,
                    )
            if written:
                moved += written
                await self._on_change()
            if len(planned) < MAX_ELECTIONS_PER_PASS or not written:
                break
        return moved

    # -- AlterPartition from this broker's leaders ------------------------------------

    async def alter_isr(
        self, state: PartitionState, new_isr: tuple[int, ...], member_epochs: Mapping[int, int]
    ) -> None:
        """Write a leader's ISR change; a stale view is dropped (the refresh corrects it).
        ``member_epochs``: the broker epoch each follower's fetches carried (KIP-903)."""
        session = BrokerSession(
            now_ms=self._clock(),
            session_timeout_ms=self.session_timeout_ms,
            leader_epoch=self.broker_epoch,
            member_epochs=dict(member_epochs),
        )
        try:
            await asyncio.to_thread(
                self.writer.alter_isr,
                state.topic,
                state.partition,
                leader=self.broker_id,
                leader_epoch=state.leader_epoch,
                expected_isr=state.isr,
                new_isr=new_isr,
                session=session,
            )
        except KafkaError as exc:
            log.info(
                "broker %d: ISR change of %s-%d to %s refused: %s",
                self.broker_id,
                state.topic,
                state.partition,
                list(new_isr),
                exc.code.name,
            )
        else:
            log.info(
                "broker %d: ISR of %s-%d %s -> %s",
                self.broker_id,
                state.topic,
                state.partition,
                list(state.isr),
                list(new_isr),
            )
        await self._on_change()

    # -- shutdown ---------------------------------------------------------------------

    async def resign(self) -> None:
        """Give up the lease so another broker takes over at its next tick."""
        state, self.lease_state = self.lease_state, None
        if state is not None and state.broker_id == self.broker_id:
            await asyncio.to_thread(self.lease.release, self.broker_id, state.controller_epoch)

    async def await_leadership_moved(
        self,
        refresh: Callable[[], Awaitable[ClusterSnapshot]],
        timeout_s: float,
    ) -> bool:
        """Controlled shutdown: wait until no ISR holding this broker has another live
        member (to lead in its place, or to stay in sync without it). Polls the store at
        the refresh interval."""
        deadline = time.monotonic() + timeout_s
        interval = int(self._config("metadata.refresh.interval.ms")) / 1000
        while True:
            snapshot = await refresh()
            live = self._live(snapshot, self._clock()) - {self.broker_id}
            movable = [
                (topic.name, p.partition)
                for topic in snapshot.topics.values()
                for p in topic.partitions
                if self.broker_id in p.isr and any(r in live for r in p.isr)
            ]
            if not movable:
                return True
            if time.monotonic() >= deadline:
                log.warning(
                    "broker %d: controlled shutdown gave up with %d partitions left",
                    self.broker_id,
                    len(movable),
                )
                return False
            await asyncio.sleep(interval)
