"""Run schedules one after another on the same two clusters, check each, shrink the
violating ones.

Starting two clusters costs more than a schedule, so they start once: each schedule
works on its own topic and mirror (its tag in the names), and afterwards its mirrors,
topics and ACLs are removed and every broker is running again. A schedule whose step
raises something the product should never raise is reported as an error, not as a
violation of an invariant.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mirrorsim.client.admin_types import AclBindingFilter, ResourceType
from mirrorsim.drills.chaos.journal import Divergence, Violation
from mirrorsim.drills.chaos.schedule import BROKERS, CLUSTERS, FAULTS, Schedule
from mirrorsim.drills.chaos.shrink import ddmin
from mirrorsim.drills.chaos.steps import REFUSALS, SETTLE_S, _admin
from mirrorsim.drills.clusters import DrillCluster
from mirrorsim.drills.context import DrillContext
from mirrorsim.drills.polling import wait_until
from mirrorsim.drills.scenario import ClusterDef, Step
from mirrorsim.drills.steps import run_step
from mirrorsim.protocol.errors import ErrorCode, KafkaError

CLUSTER_CONFIGS: dict[str, object] = {
    "mirror.fetch.max.wait.ms": 50,
    "mirror.metadata.refresh.interval.ms": 200,
    "metadata.refresh.interval.ms": 100,
    "mirror.topic.replication.factor": 1,
    "mirror.topic.num.partitions": 3,
    "transaction.state.log.num.partitions": 3,
    "offsets.topic.num.partitions": 3,
    "broker.heartbeat.interval.ms": 100,
    "broker.session.timeout.ms": 1500,
    "group.initial.rebalance.delay.ms": 0,
    "shutdown.drain.timeout.ms": 200,
    "log.retention.check.interval.ms": 500,
    "log.cleaner.backoff.ms": 500,
}


FOLLOWER_LAG_MS = 200
"""How long a follower's fetch waits at its leader for data (with replicas)."""
ISR_LAG_MS = 600
"""``replica.lag.time.max.ms`` of broker processes with replicas: a follower stalled
longer than this (``schedule.STALL_S``) leaves the ISRs of what it follows while its
broker stays registered; three times a follower's fetch wait, so a follower that merely
lags stays in."""


def replicated(replication_factor: int, *, processes: bool = False) -> dict[str, object]:
    """The cluster configs that give new topics, mirror topics and ``__mirror_state``
    ``replication_factor`` replicas (the explorer's default is one).

    Their followers lag: a fetch waits for more bytes than any schedule writes
    (``replica.fetch.min.bytes``), so it returns only after ``FOLLOWER_LAG_MS``. Every
    write then stays on its leader alone for up to that long, and a leader that stops
    in that time (a broker down, a restart) hands over to a follower without it. A write
    the product acts on before its ISR has it (a transaction marker, a
    MIRROR_PID_RESET, a mirror state record) is then lost in a fair share of the
    schedules that stop its leader, instead of in the rare one that stops it within a
    follower's next fetch.

    Leaders also move while both brokers run: the controller hands each partition back
    to its preferred replica every second (``leader.imbalance.check.interval.seconds``)
    once that one is in sync again after a restart, so the old leader keeps running as
    a follower of the partitions it led.

    Broker processes (``processes``) can also be stalled (SIGSTOP) past
    ``replica.lag.time.max.ms`` but within their session: the ISRs shrink to the leader
    alone, acks=all writes go on without the stalled follower, and it catches up and
    joins again, all while the controller still counts its broker as alive."""
    if replication_factor == 1:
        return {}
    return {
        "default.replication.factor": replication_factor,
        "mirror.topic.replication.factor": replication_factor,
        "replica.fetch.min.bytes": 1_048_576,
        "replica.fetch.wait.max.ms": FOLLOWER_LAG_MS,
        "leader.imbalance.check.interval.seconds": 1,
        **({"replica.lag.time.max.ms": ISR_LAG_MS} if processes else {}),
    }


async def _mirror_gone(admin: Any, mirror: str) -> bool:
    """Delete ``mirror``; False while it still has a topic stopping."""
    try:
        await admin.delete_mirror(mirror)
    except KafkaError as exc:
        if exc.code == ErrorCode.UNKNOWN_MIRROR:
            return True
        if exc.code == ErrorCode.MIRROR_NOT_EMPTY:
            return False
        raise
    return True


@dataclass
class ScheduleOutcome:
    schedule: Schedule
    violations: list[Violation]
    divergence: list[Divergence]
    faults: int
    refused: int
    seconds: float
    error: str | None = None

    @property
    def invariants(self) -> list[str]:
        return sorted({v.invariant for v in self.violations})


@dataclass
class Finding:
    """A violating schedule and, when shrunk, its minimal form."""

    outcome: ScheduleOutcome
    shrunk: Schedule | None = None
    shrink_runs: int = 0


@dataclass
class Exploration:
    seed: int
    mode: str = "in-process"
    configs: dict[str, object] = field(default_factory=lambda: dict(CLUSTER_CONFIGS))
    """The clusters' configs, replicas included: a replay file names them all."""
    outcomes: list[ScheduleOutcome] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def steps(self) -> int:
        return sum(len(o.schedule.steps) for o in self.outcomes)

    @property
    def faults(self) -> int:
        return sum(o.faults for o in self.outcomes)

    @property
    def violations(self) -> int:
        return sum(1 for o in self.outcomes if o.violations)

    @property
    def errors(self) -> int:
        return sum(1 for o in self.outcomes if o.error)

    @property
    def explore_seconds(self) -> float:
        """Time spent running the schedules (shrinking excluded)."""
        return sum(o.seconds for o in self.outcomes)

    @property
    def per_minute(self) -> float:
        seconds = self.explore_seconds
        return 60.0 * len(self.outcomes) / seconds if seconds else 0.0


class Explorer:
    """Two clusters, ``a`` and ``b``, kept across schedules."""

    def __init__(
        self, *, processes: bool = False, brokers: int = len(BROKERS), replication_factor: int = 1
    ) -> None:
        """``replication_factor`` 2 puts every topic, mirror topic and ``__mirror_state``
        partition on both brokers of a cluster: a broker down then moves leaderships to
        the other replica instead of taking the partitions offline."""
        self.root = Path(tempfile.mkdtemp(prefix="mirrorsim-chaos-"))
        self.mode = "processes" if processes else "in-process"
        self.configs = {**CLUSTER_CONFIGS, **replicated(replication_factor, processes=processes)}
        self.clusters = {
            name: DrillCluster.create(
                ClusterDef(name, brokers, dict(self.configs), self.mode), self.root
            )
            for name in CLUSTERS
        }
        self.runs = 0

    async def __aenter__(self) -> Explorer:
        for cluster in self.clusters.values():
            await cluster.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for cluster in self.clusters.values():
            with contextlib.suppress(Exception):
                await cluster.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    async def run(self, schedule: Schedule) -> ScheduleOutcome:
        """Run ``schedule`` and its check, then clean up after it."""
        self.runs += 1
        ctx = DrillContext(work_dir=self.root, clusters=self.clusters)
        started = time.monotonic()
        error = None
        try:
            for index, step in enumerate((*schedule.steps, Step("chaos_check", {}))):
                await _bounded(run_step(ctx, step), f"step {index} ({step.kind})")
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        finally:
            try:
                await _bounded(self._clean(schedule), "the clean-up after the schedule")
            except StepHung as exc:
                error = f"{error}\n{exc}" if error else str(exc)
        entry = ctx.chaos
        faults = sum(1 for s in schedule.steps if s.kind in FAULTS)
        return ScheduleOutcome(
            schedule,
            list(entry.violations) if entry else [],
            list(entry.divergence) if entry else [],
            faults,
            entry.refused if entry else 0,
            time.monotonic() - started,
            error,
        )

    async def _clean(self, schedule: Schedule) -> None:
        """Leave nothing of ``schedule`` behind. The topic goes before the mirror: a
        mirror whose removed topic is still STOPPING refuses deletion (MIRROR_NOT_EMPTY),
        and each mirror left over kept syncing for the rest of the exploration, slowing
        every later schedule (a soak fell from 7 s to 20 s per schedule)."""
        for cluster in self.clusters.values():
            with contextlib.suppress(Exception):
                await cluster.restart()
        for cluster in self.clusters.values():
            with contextlib.suppress(*REFUSALS):
                async with _admin(cluster) as admin:
                    with contextlib.suppress(*REFUSALS):
                        await admin.remove_topics_from_mirror(schedule.mirror, [schedule.topic])
                    with contextlib.suppress(*REFUSALS):
                        await admin.delete_acls(
                            [AclBindingFilter(ResourceType.TOPIC, schedule.topic)]
                        )
                    with contextlib.suppress(*REFUSALS):
                        await admin.delete_topics([schedule.topic])
                    await wait_until(
                        lambda admin=admin: _mirror_gone(admin, schedule.mirror),
                        SETTLE_S,
                        f"mirror {schedule.mirror} deleted from {cluster.name}",
                    )

    async def shrink(
        self, outcome: ScheduleOutcome, budget: int = 40, invariant: str | None = None
    ) -> Finding:
        """The shortest schedule ddmin finds that still violates ``invariant`` (by default
        the first, by name, that ``outcome`` violated); every candidate runs on fresh
        names. A schedule often breaks several invariants at once, and the one a caller
        is after need not be first by name."""
        target = invariant if invariant is not None else outcome.invariants[0]
        original = outcome.schedule
        setup, rest = original.steps[0], list(original.steps[1:])
        runs = 0

        async def fails(candidate: list[Step]) -> bool:
            nonlocal runs
            runs += 1
            trial = original.with_steps((setup, *candidate)).renamed(f"{original.tag}-s{self.runs}")
            result = await self.run(trial)
            return target in result.invariants

        smallest = await ddmin(rest, fails, budget)
        return Finding(outcome, original.with_steps((setup, *smallest)), runs)


class StepHung(Exception):
    """A step (or the clean-up) outlived ``STEP_TIMEOUT_S``: every wait inside one is
    bounded, so this is a wait that is not, reported with where it was parked."""


STEP_TIMEOUT_S = 180.0
"""Far above any bounded wait of a step (a settle bound is 20 s, the check waits a few
of them in turn): reaching it means something waits without a bound."""


async def _bounded(work: Coroutine[Any, Any, Any], what: str) -> None:
    """Await ``work`` for at most ``STEP_TIMEOUT_S``; past it, cancel it and raise
    ``StepHung`` naming the await chain it was parked in."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=STEP_TIMEOUT_S)
    if done:
        task.result()
        return
    parked = " <- ".join(reversed(_await_chain(task)))
    task.cancel()
    with contextlib.suppress(BaseException):
        await task
    raise StepHung(f"{what} did not finish within {STEP_TIMEOUT_S:g}s; parked in {parked}")


def _await_chain(task: asyncio.Future[Any]) -> list[str]:
    """The coroutines ``task`` is suspended in, outermost first, as ``function:line``."""
    chain = []
    awaited: Any = task.get_coro() if isinstance(task, asyncio.Task) else None
    while awaited is not None:
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is None:
            chain.append(type(awaited).__name__)
            break
        chain.append(f"{frame.f_code.co_qualname}:{frame.f_lineno}")
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return chain


async def explore(
    explorer: Explorer,
    schedules: list[Schedule],
    *,
    shrink: bool = True,
    on_done: Callable[[ScheduleOutcome], None] = lambda outcome: None,
) -> Exploration:
    """Run every schedule; shrink the first violation of each invariant."""
    result = Exploration(
        seed=schedules[0].seed if schedules else 0,
        mode=explorer.mode,
        configs=dict(explorer.configs),
    )
    started = time.monotonic()
    chased: set[str] = set()
    for schedule in schedules:
        outcome = await explorer.run(schedule)
        result.outcomes.append(outcome)
        on_done(outcome)
        if not outcome.violations:
            continue
        if shrink and outcome.invariants[0] not in chased:
            chased.add(outcome.invariants[0])
            result.findings.append(await explorer.shrink(outcome))
        else:
            result.findings.append(Finding(outcome))
    result.seconds = time.monotonic() - started
    return result
