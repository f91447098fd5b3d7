"""The chaos vocabulary as drill steps: operator commands, faults and load, each taking
the cluster, mirror and topic names it acts on, so a schedule is a drill scenario and
``mirrorsim drill run FILE`` replays it.

A step never fails the run for what the product may legitimately refuse (a remove of a
topic that is not mirrored, a produce to a read-only topic, a command to a cluster that
is down): it counts the refusal and goes on. Only broken invariants are violations, and
``chaos_check`` (the last step of every schedule) turns them into results.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from typing import Any

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AclBinding,
    AclOperation,
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
    ResourceType,
)
from mirrorsim.client.cluster import ClusterClient
from mirrorsim.coordinator.mirror_cycles import closes_a_cycle
from mirrorsim.drills.chaos.journal import (
    SETTLES,
    WRITABLE,
    AckedWrite,
    ChaosJournal,
    Grant,
    MirrorStart,
    RemoveRecord,
)
from mirrorsim.drills.chaos.load import CLIENT_CONFIG, produce_once
from mirrorsim.drills.chaos.observe import (
    OFFLINE,
    PARTITION,
    UNANSWERED,
    batch_digests,
    log_end,
    mirror_state,
    read_log,
    state_coordinator,
)
from mirrorsim.drills.clusters import DrillCluster, ProcessDrillCluster
from mirrorsim.drills.context import DrillContext
from mirrorsim.drills.polling import DrillTimeout, wait_until
from mirrorsim.protocol.errors import KafkaError

SETTLE_S = 20.0
"""The stated bound: every operation reaches a settled state within this many seconds
(in process, with the explorer's fast intervals)."""
RACE_ATTEMPTS = 30
"""Produce attempts right after a remove, until one is acknowledged or STOPPED is seen."""
MIRROR_CONFIGS = {"default.api.timeout.ms": "5000", "request.timeout.ms": "3000"}
ADD_RETRY_S = 3.0
"""An add is asked again (a broker that has not yet seen a new mirror closes the
connection) for this long; unanswered, it may still land later."""
REFUSALS = (KafkaError, OSError, TimeoutError, DrillTimeout)
TRANSACTION_COMPLETE = ("CompleteCommit", "CompleteAbort")
CHAOS_ADMIN = {"default.api.timeout.ms": "3000", "request.timeout.ms": "2000"}


def journal(ctx: DrillContext) -> ChaosJournal:
    if ctx.chaos is None:
        ctx.chaos = ChaosJournal()
    return ctx.chaos


def _begin(ctx: DrillContext, *clusters: str) -> ChaosJournal | None:
    """Count the step; None when a cluster it needs is down (the step is skipped, as a
    shrunk schedule may have lost the restore that preceded it)."""
    entry = journal(ctx)
    entry.step += 1
    if all(ctx.cluster(name).running for name in clusters):
        return entry
    entry.skipped += 1
    return None


def _admin(cluster: DrillCluster) -> Admin:
    return Admin(bootstrap=cluster.bootstrap, config=CHAOS_ADMIN, client_id="mirrorsim-chaos")


async def _wait_state(
    entry: ChaosJournal, cluster: DrillCluster, topic: str, states: set[str], what: str
) -> bool:
    """Wait for ``states`` within the settle bound; a miss is a violation."""
    try:
        await wait_until(
            lambda: _in_states(cluster, topic, states), SETTLE_S, f"{topic} in {states}"
        )
    except DrillTimeout:
        state = await _state_or_none(cluster, topic)
        entry.violate(SETTLES, f"{what}: {topic} on {cluster.name} still {state}")
        return False
    return True


async def _in_states(cluster: DrillCluster, topic: str, states: set[str]) -> bool:
    return await mirror_state(cluster, topic) in states


async def _state_or_none(cluster: DrillCluster, topic: str) -> str | None:
    """``mirror_state``, or ``UNANSWERED`` when the cluster refused to be asked."""
    with contextlib.suppress(*REFUSALS):
        return await mirror_state(cluster, topic)
    return UNANSWERED


async def _state_once_led(cluster: DrillCluster, topic: str) -> str | None:
    """The mirror state right after a write; while the partition has no leader (OFFLINE:
    its only replica's broker was fenced for a missed heartbeat, say), asked again until
    it has one, since only a leader tells whether a mirror holds it. Still leaderless
    after ``SETTLE_S``: ``UNANSWERED``, and the offsets-based checks judge the write."""
    try:
        (led,) = await wait_until(
            lambda: _led_state(cluster, topic), SETTLE_S, f"a leader for {topic}"
        )
    except DrillTimeout:
        return UNANSWERED
    return led


async def _led_state(cluster: DrillCluster, topic: str) -> tuple[str | None] | None:
    """``(state,)`` once the partition has a leader (a tuple, so None is an answer)."""
    state = await _state_or_none(cluster, topic)
    return None if state == OFFLINE else (state,)


async def _acknowledge(
    ctx: DrillContext, entry: ChaosJournal, client: ClusterClient, cluster: str, topic: str, n: int
) -> bool:
    """One produce of ``n`` records; an acknowledgement enters the journal with the
    mirror state seen right after it."""
    values = [f"{topic}/{cluster}/s{entry.step}-{i}-{time.monotonic_ns()}" for i in range(n)]
    outcome = await produce_once(client, topic, PARTITION, values)
    if outcome.offset is None:
        entry.refused += 1
        return False
    state = await _state_once_led(ctx.cluster(cluster), topic)
    entry.acks.append(
        AckedWrite(entry.step, cluster, topic, PARTITION, outcome.offset, tuple(values), state)
    )
    if state not in (None, "STOPPED", UNANSWERED):
        entry.violate(
            WRITABLE, f"{cluster}/{topic}: produce acknowledged at {outcome.offset} in {state}"
        )
    return True


async def chaos_setup(
    ctx: DrillContext, source: str, destination: str, topic: str, mirror: str, records: int = 5
) -> None:
    """A topic on ``source`` with ``records`` records, mirrored by ``mirror`` on
    ``destination`` and MIRRORING."""
    entry = _begin(ctx, source, destination)
    if entry is None:
        return
    async with _admin(ctx.cluster(source)) as admin:
        (await admin.create_topics([NewTopic(topic, 1, -1)])).all()
    async with ClusterClient(
        ctx.cluster(source).bootstrap, client_id="chaos-setup", config=CLIENT_CONFIG
    ) as client:
        await wait_until(
            lambda: _acknowledge(ctx, entry, client, source, topic, records),
            SETTLE_S,
            f"the first records of {topic} acknowledged",
        )
    await _start_mirror(ctx, entry, destination, mirror, source, topic)
    await _wait_state(entry, ctx.cluster(destination), topic, {"MIRRORING"}, "setup")


async def _start_mirror(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, mirror: str, source: str, topic: str
) -> None:
    """Create ``mirror`` on ``cluster`` from ``source`` unless it exists; add ``topic``."""
    destination = ctx.cluster(cluster)
    async with _admin(destination) as admin:
        if mirror not in {m.name for m in await admin.list_mirrors()}:
            properties = {"bootstrap.servers": ctx.cluster(source).bootstrap, **MIRROR_CONFIGS}
            await admin.create_mirror(mirror, properties)
    await _add(ctx, entry, cluster, mirror, source, topic)


async def _add(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, mirror: str, source: str, topic: str
) -> None:
    async def added() -> bool | KafkaError:
        async with _admin(ctx.cluster(cluster)) as admin:
            try:
                (await admin.add_topics_to_mirror(mirror, [topic])).all()
            except KafkaError as exc:
                if closes_a_cycle(exc):
                    return exc
                raise
        return True

    try:
        outcome = await wait_until(added, ADD_RETRY_S, f"{topic} added to {mirror}")
    except DrillTimeout:
        entry.refused += 1
        entry.starts.append(MirrorStart(entry.step, cluster, mirror, source, topic, False))
        return
    if isinstance(outcome, KafkaError):
        entry.refused += 1
        return
    log_at_add = None
    with contextlib.suppress(*REFUSALS, KeyError):
        log_at_add = batch_digests(await read_log(ctx.cluster(cluster), topic))
    entry.starts.append(
        MirrorStart(entry.step, cluster, mirror, source, topic, log_at_add=log_at_add)
    )
    ctx.mark("chaos add", f"{topic} to {mirror} on {cluster}")
    await _wait_taken_up_by_mirror(ctx.cluster(cluster), topic)


async def _wait_taken_up_by_mirror(cluster: DrillCluster, topic: str) -> None:
    """Wait (bounded) until the partition's leader reports it taken up by the mirror, as an
    operator checks with ``kafka-mirrors --describe``: an accepted add reaches the leaders
    with the next metadata refresh, and until then the leader still takes produce as for
    a plain topic, or as for the STOPPED partition an add after a failover starts from.
    So the wait ends at a state other than both. The add itself waits for that, but only
    for a broker session: on a loaded machine it answers REQUEST_TIMED_OUT ("a leader
    still takes produce"), and its retry finds the topic in the mirror already. A leader
    that stays away longer than ``SETTLE_S`` is the final check's business."""

    async def taken_up() -> bool:
        return await _state_or_none(cluster, topic) not in (None, UNANSWERED, "STOPPED")

    with contextlib.suppress(DrillTimeout):
        await wait_until(taken_up, SETTLE_S, f"{topic} taken up by a mirror on {cluster.name}")


def _counted(step: Any) -> Any:
    """``step`` as a drill step that counts itself and is skipped while its cluster is
    down; the drill signature is the body's without the journal."""

    async def drill_step(ctx: DrillContext, cluster: str, *args: Any, **kwargs: Any) -> None:
        entry = _begin(ctx, cluster)
        if entry is not None:
            await step(ctx, entry, cluster, *args, **kwargs)

    drill_step.__doc__ = step.__doc__
    drill_step.__signature__ = _public_signature(step)  # type: ignore[attr-defined]
    return drill_step


def _public_signature(step: Any) -> inspect.Signature:
    signature = inspect.signature(step)
    parameters = list(signature.parameters.values())
    return signature.replace(parameters=[parameters[0], *parameters[2:]])


async def _produce(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, topic: str, records: int = 3
) -> None:
    """One batch of ``records`` to ``topic`` on ``cluster`` (refused while mirrored)."""
    async with ClusterClient(
        ctx.cluster(cluster).bootstrap, client_id="chaos-load", config=CLIENT_CONFIG
    ) as client:
        await _acknowledge(ctx, entry, client, cluster, topic, records)


chaos_produce = _counted(_produce)


@_counted
async def chaos_remove(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, mirror: str, topic: str
) -> None:
    """Fail over: remove ``topic`` from ``mirror``, produce at once and again until a
    write is acknowledged or STOPPED is seen, then wait for STOPPED and note where the
    MIRROR_PID_RESET batch landed."""
    destination = ctx.cluster(cluster)
    state_before = await _state_or_none(destination, topic)
    try:
        floor = await log_end(destination, topic)
        async with _admin(destination) as admin:
            (await admin.remove_topics_from_mirror(mirror, [topic])).all()
    except REFUSALS:
        entry.refused += 1
        return
    removal = RemoveRecord(entry.step, cluster, topic, floor, state_before=state_before)
    entry.removes.append(removal)
    ctx.mark("chaos remove", f"{topic} from {mirror} on {cluster}")
    async with ClusterClient(
        destination.bootstrap, client_id="chaos-race", config=CLIENT_CONFIG
    ) as client:
        for _ in range(RACE_ATTEMPTS):
            if await _acknowledge(ctx, entry, client, cluster, topic, 1):
                break
            if await _state_or_none(destination, topic) == "STOPPED":
                break
    if not await _wait_state(entry, destination, topic, {"STOPPED"}, "remove"):
        return
    log = await read_log(destination, topic)
    after = [reset for reset in log.pid_resets if reset[0] >= floor]
    if after:
        removal.pid_reset_offset, removal.pid_reset_epoch = after[0]


@_counted
async def chaos_add(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, mirror: str, source: str, topic: str
) -> None:
    """Add ``topic`` back to ``mirror`` (restart mirroring after a stop)."""
    try:
        await _add(ctx, entry, cluster, mirror, source, topic)
    except REFUSALS:
        entry.refused += 1


@_counted
async def chaos_failback(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, mirror: str, source: str, topic: str
) -> None:
    """On ``cluster`` (the old source) a mirror of the same name from ``source``."""
    try:
        await _start_mirror(ctx, entry, cluster, mirror, source, topic)
    except REFUSALS:
        entry.refused += 1


@_counted
async def chaos_pause(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, mirror: str, topic: str
) -> None:
    try:
        async with _admin(ctx.cluster(cluster)) as admin:
            (await admin.pause_mirror_topics(mirror, [topic])).all()
    except REFUSALS:
        entry.refused += 1


@_counted
async def chaos_resume(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, mirror: str, topic: str
) -> None:
    try:
        async with _admin(ctx.cluster(cluster)) as admin:
            (await admin.resume_mirror_topics(mirror, [topic])).all()
    except REFUSALS:
        entry.refused += 1


@_counted
async def chaos_delete_mirror(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, mirror: str
) -> None:
    try:
        async with _admin(ctx.cluster(cluster)) as admin:
            await admin.delete_mirror(mirror)
    except REFUSALS:
        entry.refused += 1


@_counted
async def chaos_grant_acl(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, topic: str, principal: str
) -> None:
    """ALLOW WRITE on ``topic`` for ``principal``: what an operator grants the producers
    that moved to the active cluster."""
    binding = AclBinding(ResourceType.TOPIC, topic, principal, AclOperation.WRITE)
    try:
        async with _admin(ctx.cluster(cluster)) as admin:
            (await admin.create_acls([binding])).all()
    except REFUSALS:
        entry.refused += 1
        return
    if await _writable_side(ctx, entry, cluster, topic):
        entry.acls.append(Grant(entry.step, cluster, topic, "acl", principal))


async def _writable_side(ctx: DrillContext, entry: ChaosJournal, cluster: str, topic: str) -> bool:
    """Whether ``topic`` on ``cluster`` is seen out of every mirror's hands (STOPPED or
    never mirrored): only there must what an operator grants survive the sync. A remove
    that was refused, a partition without a leader, or a shrunk schedule may leave a
    grant where the topic is still mirrored; the sync may undo that.

    No mirror state is not enough for "never mirrored": DescribeMirrors lists what each
    leader serves, and a leader that has just come back (its broker restored) may not
    serve the partition yet, while ``mirror.name`` is internal and not described. So
    the journal decides then: a topic this schedule added to a mirror on ``cluster``
    (answered or not) with no accepted remove after it is still mirrored."""
    state = await _state_or_none(ctx.cluster(cluster), topic)
    if state == "STOPPED":
        return True
    return state is None and not entry.still_mirrored(cluster, topic)


@_counted
async def chaos_alter_config(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, topic: str, retention_ms: int
) -> None:
    """Set ``retention.ms`` of ``topic`` on the active cluster."""
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    value = str(retention_ms)
    entry.config_alters.append(Grant(entry.step, cluster, topic, "retention.ms", value))
    try:
        async with _admin(ctx.cluster(cluster)) as admin:
            ops = {resource: [AlterConfigOp("retention.ms", value)]}
            (await admin.incremental_alter_configs(ops)).all()
    except REFUSALS:
        entry.refused += 1
        return
    if await _writable_side(ctx, entry, cluster, topic):
        entry.configs.append(Grant(entry.step, cluster, topic, "retention.ms", value))


@_counted
async def chaos_transaction(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, topic: str, commit: bool
) -> None:
    """Three records in one transaction, committed or aborted (aiokafka, the project's
    client has no transactional producer), within the settle bound: aiokafka looks for
    its transaction coordinator for ever among the brokers its first metadata named,
    and a frozen broker, fenced, names only the other one, which a fault may then
    stop. Not done in time, the transaction counts as refused."""
    from aiokafka import AIOKafkaProducer

    values = [f"{topic}/{cluster}/txn{entry.step}-{i}" for i in range(3)]
    producer = AIOKafkaProducer(
        bootstrap_servers=ctx.cluster(cluster).bootstrap,
        acks="all",
        enable_idempotence=True,
        transactional_id=f"chaos-{topic}-{entry.step}",
        request_timeout_ms=3000,
    )
    try:
        async with asyncio.timeout(SETTLE_S):
            await producer.start()
            await producer.begin_transaction()
            offsets = [
                (await producer.send_and_wait(topic, v.encode(), partition=PARTITION)).offset
                for v in values
            ]
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
    except Exception:
        entry.refused += 1
        return
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(producer.stop(), SETTLE_S)
    if commit:
        for value, offset in zip(values, offsets, strict=True):
            entry.acks.append(
                AckedWrite(entry.step, cluster, topic, PARTITION, offset, (value,), None)
            )
        entry.committed.update(values)
    else:
        entry.aborted.update(values)
    await _completed(ctx.cluster(cluster), f"chaos-{topic}-{entry.step}")


async def _completed(cluster: DrillCluster, transactional_id: str) -> None:
    """Wait until the coordinator lists the transaction complete: its markers are
    written and answered. The step ends there, so a fault drawn next lands right after
    the coordinator acted on the markers, while a lagging follower may not have them.
    A coordinator that cannot be asked, or does not complete in time, ends the wait:
    the final checks judge the transaction."""
    with contextlib.suppress(*REFUSALS):
        await wait_until(
            lambda: _listed_complete(cluster, transactional_id),
            SETTLE_S,
            f"transaction {transactional_id} complete",
        )


async def _listed_complete(cluster: DrillCluster, transactional_id: str) -> bool:
    async with _admin(cluster) as admin:
        listed = await admin.list_transactions(TRANSACTION_COMPLETE)
    return any(t.transactional_id == transactional_id for t in listed)


@_counted
async def chaos_outage(ctx: DrillContext, entry: ChaosJournal, cluster: str) -> None:
    """Every broker of ``cluster`` stops at once (a source outage, when it is one)."""
    await ctx.cluster(cluster).kill()
    entry.faults += 1
    ctx.mark("chaos outage", cluster)


async def chaos_restore(ctx: DrillContext, cluster: str) -> None:
    """Start the brokers of ``cluster`` that are down (after an outage or a broker
    down)."""
    journal(ctx).step += 1
    await ctx.cluster(cluster).restart()
    ctx.mark("chaos restore", cluster)


@_counted
async def chaos_broker_down(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, broker: int
) -> None:
    """``broker`` stops without a controlled shutdown and stays down until a restore:
    a partial outage, in which the cluster answers Metadata but whatever that broker
    led (a ``__mirror_state`` partition, say) cannot answer. Skipped when the broker is
    already down."""
    target = ctx.cluster(cluster)
    if not target.is_running(broker):
        entry.skipped += 1
        return
    await target.kill_broker(broker)
    entry.faults += 1
    ctx.mark("chaos broker down", f"{cluster} broker {broker}")


@_counted
async def chaos_state_leader_down(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, mirror: str, topic: str
) -> None:
    """The broker of ``cluster`` that coordinates ``topic``'s ``__mirror_state`` partition
    for ``mirror`` stops without a controlled shutdown and stays down until a restore.
    The cluster keeps answering Metadata, and a mirror reading from it still finds the
    topic, but it cannot answer LastMirroredEpochs for the partition: a failback or a
    re-add reading from it waits in PREPARING. Skipped when the cluster has no such
    coordinator (it never was a mirror's destination, so it knows no LME and answers)."""
    target = ctx.cluster(cluster)
    try:
        broker = await state_coordinator(target, mirror, topic)
    except REFUSALS:
        broker = None
    if broker is None or not target.is_running(broker):
        entry.skipped += 1
        return
    await target.kill_broker(broker)
    entry.faults += 1
    ctx.mark("chaos state leader down", f"{cluster} broker {broker} ({mirror}, {topic})")


@_counted
async def chaos_restart(ctx: DrillContext, entry: ChaosJournal, cluster: str, broker: int) -> None:
    """``broker`` stops without a controlled shutdown and starts again on its data.
    Skipped when the broker is down already (a broker down or a state leader down took
    it, and only a restore brings it back)."""
    target = ctx.cluster(cluster)
    if not target.is_running(broker):
        entry.skipped += 1
        return
    await target.kill_broker(broker)
    await target.start_broker(broker)
    entry.faults += 1
    ctx.mark("chaos restart", f"{cluster} broker {broker}")


@_counted
async def chaos_freeze(
    ctx: DrillContext, entry: ChaosJournal, cluster: str, broker: int, seconds: float = 2.0
) -> None:
    """SIGSTOP ``broker`` for ``seconds``, then SIGCONT (broker processes only; skipped
    in process, where one event loop runs every broker, and for a broker that is down)."""
    target = ctx.cluster(cluster)
    if not isinstance(target, ProcessDrillCluster) or not target.is_running(broker):
        entry.skipped += 1
        return
    await target.freeze_broker(broker, seconds)
    entry.faults += 1
    ctx.mark("chaos freeze", f"{cluster} broker {broker} for {seconds}s")


STEPS = {
    "chaos_setup": chaos_setup,
    "chaos_produce": chaos_produce,
    "chaos_remove": chaos_remove,
    "chaos_add": chaos_add,
    "chaos_failback": chaos_failback,
    "chaos_pause": chaos_pause,
    "chaos_resume": chaos_resume,
    "chaos_delete_mirror": chaos_delete_mirror,
    "chaos_grant_acl": chaos_grant_acl,
    "chaos_alter_config": chaos_alter_config,
    "chaos_transaction": chaos_transaction,
    "chaos_outage": chaos_outage,
    "chaos_restore": chaos_restore,
    "chaos_restart": chaos_restart,
    "chaos_broker_down": chaos_broker_down,
    "chaos_state_leader_down": chaos_state_leader_down,
    "chaos_freeze": chaos_freeze,
}
