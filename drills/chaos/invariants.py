"""The invariants a schedule is checked against once it has run, and the ``chaos_check``
step that checks them (the last step of every schedule and of every replay).

Before checking, every cluster is brought back and every mirror the schedule started
must settle within the stated bound; a mirror that still mirrors must catch up. Then:

- acked-not-lost: every acknowledged record is in the log it was acknowledged by, at its
  offset, unless a mirror started copying into that topic afterwards (a re-add or a
  failback is documented to truncate to the source): those are expected divergence.
- writable-only-when-stopped: besides the state seen right after each acknowledgement
  (checked as the write happens), every write acknowledged after a remove lies past that
  remove's MIRROR_PID_RESET batch and carries its leader epoch or a later one.
- destination-equals-source: a mirror still MIRRORING holds its source's batches byte for
  byte; a STOPPED one holds them up to its stop offset.
- leader-epochs-monotonic: batch leader epochs never go back along a log.
- acls-survive / configs-survive: what was granted on the writable side is still there
  after several sync cycles, unless a mirror took the topic over again.
- read-committed-no-aborted: a read_committed consumer sees no aborted record.
- read-committed-sees-committed: it sees every committed record the log still holds (a
  lost commit marker leaves the last stable offset below it for good).
- pid-reset-survives: the MIRROR_PID_RESET a remove wrote stays in the log until a mirror
  copies into the topic again.
- operations-settle: checked by the steps that wait and here after the restore.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from mirrorsim.client.admin_types import AclBindingFilter, ConfigResource, ConfigResourceType
from mirrorsim.client.admin_types import ResourceType as AclResourceType
from mirrorsim.drills.chaos.journal import (
    ABORTED,
    ACLS,
    COMMITTED,
    CONFIGS,
    CONVERGED,
    EPOCHS,
    FENCED,
    LOST,
    SETTLES,
    WRITABLE,
    ChaosJournal,
    Divergence,
    Grant,
    MirrorStart,
    RemoveRecord,
)
from mirrorsim.drills.chaos.observe import (
    OFFLINE,
    UNANSWERED,
    LogRecords,
    batch_digest,
    log_end,
    mirror_state,
    read_log,
)
from mirrorsim.drills.chaos.steps import REFUSALS, SETTLE_S, _admin, journal
from mirrorsim.drills.clusters import DrillCluster
from mirrorsim.drills.context import DrillContext
from mirrorsim.drills.polling import DrillTimeout, wait_until
from mirrorsim.drills.steps.checks import read_all

SETTLED = {"MIRRORING", "PAUSED", "STOPPED", "FAILED", None}
QUIET_S = 1.0
SYNC_WINDOW_S = 1.0
"""How long granted ACLs and configs must survive: several sync cycles at the explorer's
``mirror.metadata.refresh.interval.ms``."""


async def chaos_check(ctx: DrillContext) -> None:
    """Restore every cluster, let the mirrors settle, check every invariant; results
    ``chaos_violations`` (invariant names), ``chaos_details``, ``chaos_divergence``."""
    entry = journal(ctx)
    for cluster in ctx.clusters.values():
        await cluster.restart()
    logs: dict[tuple[str, str], LogRecords] = {}
    await _settle(ctx, entry)
    await asyncio.gather(_quiet(ctx, entry), _check_grants(ctx, entry))
    for cluster, topic in sorted(_touched(entry)):
        led = ctx.cluster(cluster)
        with contextlib.suppress(DrillTimeout):
            logs[(cluster, topic)] = await wait_until(
                lambda led=led, topic=topic: _led_log(led, topic),
                SETTLE_S,
                f"{topic} on {cluster} read from its leader",
            )
    _check_acks(entry, logs)
    _check_fences(entry, logs)
    _check_epochs(entry, logs)
    _check_resets_survive(entry, logs)
    await _check_convergence(ctx, entry, logs)
    await _check_read_committed(ctx, entry, logs)
    names = sorted({v.invariant for v in entry.violations})
    ctx.record("chaos_violations", names)
    ctx.record("chaos_details", [f"{v.invariant}: {v.detail}" for v in entry.violations])
    ctx.record(
        "chaos_divergence",
        [f"{d.cluster}/{d.topic}-{d.partition}@{d.offset} x{d.count}" for d in entry.divergence],
    )
    ctx.mark("chaos check", ", ".join(names) or "all invariants hold")


async def _led_log(cluster: DrillCluster, topic: str) -> LogRecords | None:
    """The partition leader's log, or None while no broker leads it: a leader moving
    back to its preferred replica (leader balancing) leaves it leaderless for a
    metadata refresh, and the checks read every log once."""
    try:
        return await read_log(cluster, topic)
    except (*REFUSALS, KeyError):
        return None


def _touched(entry: ChaosJournal) -> set[tuple[str, str]]:
    pairs = {(a.cluster, a.topic) for a in entry.acks}
    pairs |= {(s.cluster, s.topic) for s in entry.starts}
    pairs |= {(s.source, s.topic) for s in entry.starts}
    return pairs


def _latest_starts(entry: ChaosJournal) -> list[MirrorStart]:
    latest: dict[tuple[str, str], MirrorStart] = {}
    for start in entry.starts:
        latest[(start.cluster, start.topic)] = start
    return list(latest.values())


async def _settle(ctx: DrillContext, entry: ChaosJournal) -> None:
    for start in _latest_starts(entry):
        cluster = ctx.cluster(start.cluster)

        async def settled(cluster: DrillCluster = cluster, topic: str = start.topic) -> bool:
            return await mirror_state(cluster, topic) in SETTLED

        try:
            await wait_until(settled, SETTLE_S, f"{start.topic} settled on {start.cluster}")
        except DrillTimeout:
            state = None
            with contextlib.suppress(*REFUSALS):
                state = await mirror_state(cluster, start.topic)
            entry.violate(SETTLES, f"{start.topic} on {start.cluster} still {state} at the end")


async def _quiet(ctx: DrillContext, entry: ChaosJournal) -> None:
    """Wait until the states and log ends of every touched topic stay unchanged for
    ``QUIET_S``: a settled state can still be followed by a cut once a source answers
    again (it retries every few hundred milliseconds), and the logs are read after it."""
    previous: object = None
    since = time.monotonic()

    async def stable() -> bool:
        nonlocal previous, since
        now = [
            (await mirror_state(ctx.cluster(c), t), await log_end(ctx.cluster(c), t))
            for c, t in sorted(_touched(entry))
        ]
        if now != previous:
            previous, since = now, time.monotonic()
            return False
        return time.monotonic() - since >= QUIET_S

    try:
        await wait_until(stable, SETTLE_S, "states and log ends unchanged")
    except DrillTimeout:
        entry.violate(SETTLES, "states or log ends still changing at the end")


def _check_acks(entry: ChaosJournal, logs: dict[tuple[str, str], LogRecords]) -> None:
    for ack in entry.acks:
        log = logs.get((ack.cluster, ack.topic))
        if log is None:
            entry.violate(LOST, f"{ack.cluster}/{ack.topic} could not be read")
            continue
        missing = [
            ack.offset + i
            for i, value in enumerate(ack.values)
            if log.values.get(ack.offset + i) != value
        ]
        if not missing:
            continue
        if entry.started_after(ack.cluster, ack.topic, ack.step):
            entry.divergence.append(
                Divergence(ack.cluster, ack.topic, ack.partition, missing[0], len(missing))
            )
        else:
            entry.violate(
                LOST,
                f"{ack.cluster}/{ack.topic}: {len(missing)} record(s) acknowledged at "
                f"{missing[0]} (step {ack.step}) are gone (log end {log.log_end})",
            )


def _check_fences(entry: ChaosJournal, logs: dict[tuple[str, str], LogRecords]) -> None:
    """Writes acknowledged after a remove (until the topic is added again) lie past its
    MIRROR_PID_RESET and carry its epoch or a later one. The epoch is read only where the
    final log still holds the acknowledged record: a later add may have replaced it (a
    discard the loss check accounts for)."""
    for removal in entry.removes:
        if removal.pid_reset_offset is None:
            continue
        readded = [
            s.step
            for s in entry.starts
            if s.cluster == removal.cluster and s.topic == removal.topic and s.step > removal.step
        ]
        until = min(readded, default=entry.step + 1)
        log = logs.get((removal.cluster, removal.topic))
        for ack in entry.acks:
            if (ack.cluster, ack.topic) != (removal.cluster, removal.topic):
                continue
            if not removal.step <= ack.step < until:
                continue
            if ack.offset < removal.pid_reset_offset:
                entry.violate(
                    WRITABLE,
                    f"{ack.cluster}/{ack.topic}: write acknowledged at {ack.offset} before "
                    f"the MIRROR_PID_RESET at {removal.pid_reset_offset}",
                )
                continue
            if log is None or log.values.get(ack.offset) != ack.values[0]:
                continue
            epoch = log.epoch_at(ack.offset)
            fence = removal.pid_reset_epoch
            if epoch is not None and fence is not None and epoch < fence:
                entry.violate(
                    WRITABLE,
                    f"{ack.cluster}/{ack.topic}: write at {ack.offset} in epoch {epoch}, "
                    f"before the failover's epoch {fence}",
                )


def _check_epochs(entry: ChaosJournal, logs: dict[tuple[str, str], LogRecords]) -> None:
    for (cluster, topic), log in logs.items():
        previous = -1
        for offset, epoch in sorted(log.epochs.items()):
            if epoch < previous:
                entry.violate(
                    EPOCHS, f"{cluster}/{topic}: epoch {epoch} at {offset} after {previous}"
                )
                break
            previous = epoch


async def _check_convergence(
    ctx: DrillContext, entry: ChaosJournal, logs: dict[tuple[str, str], LogRecords]
) -> None:
    for start in _latest_starts(entry):
        destination = ctx.cluster(start.cluster)
        state = None
        with contextlib.suppress(*REFUSALS):
            state = await mirror_state(destination, start.topic)
        if state == "MIRRORING":
            await _check_copy(ctx, entry, start, None)
        elif state == "STOPPED":
            removal = next(
                (
                    r
                    for r in reversed(entry.removes)
                    if (r.cluster, r.topic) == (start.cluster, start.topic) and r.step > start.step
                ),
                None,
            )
            if (
                removal is not None
                and removal.pid_reset_offset is not None
                and stopped_a_copy(removal)
            ):
                may_be_uncut = removal.state_before in MAY_BE_UNCUT
                await _check_copy(
                    ctx,
                    entry,
                    start,
                    removal.pid_reset_offset,
                    f" ({removal.state_before} before the remove)",
                    _own_log_from(entry, start, removal),
                    start.log_at_add if may_be_uncut else None,
                )


NOT_COPYING = frozenset({"STOPPED", None})
"""Mirror states read before a remove in which no add had reached the partition (None:
the topic was in no mirror)."""


MAY_BE_UNCUT = frozenset({"PREPARING", "FAILED", OFFLINE, UNANSWERED})
"""Mirror states read before a remove in which the re-add's LME cut may not have been
made yet: a remove accepted then cuts nothing (the partition goes through STOPPING)."""


def _own_log_from(entry: ChaosJournal, start: MirrorStart, removal: RemoveRecord) -> int | None:
    """The offset of the MIRROR_PID_RESET of the failover before ``start`` when
    ``removal`` may have overtaken ``start``'s LME cut: from there the destination may
    still hold its own log."""
    if removal.state_before not in MAY_BE_UNCUT:
        return None
    earlier = [
        r
        for r in entry.removes
        if (r.cluster, r.topic) == (start.cluster, start.topic) and r.step < start.step
    ]
    return earlier[-1].pid_reset_offset if earlier else None


def copied_below(
    ours: LogRecords,
    own_from: int | None,
    limit: int,
    log_at_add: tuple[tuple[int, bytes], ...] | None = None,
) -> int:
    """Below which offset the destination must equal the source: ``limit``, or
    ``own_from`` when the destination still holds the MIRROR_PID_RESET it wrote there.
    Then no LME cut reached it (a cut to the source's log removes that batch), and from
    there the log is the destination's own, not a copy.

    Without an earlier failover on this cluster (a failback's destination was the
    source), the evidence is the log itself: still equal below ``limit`` to what it held
    when the add was answered (``log_at_add``), it took no cut and copied nothing, and
    it owes the source nothing (0)."""
    if own_from is not None and own_from < limit and own_from in dict(ours.pid_resets):
        return own_from
    if own_from is None and log_at_add is not None:
        at_add = {base: digest for base, digest in log_at_add if base < limit}
        if at_add and _digests(ours, 0, limit) == at_add:
            return 0
    return limit


def source_holds_below(theirs: LogRecords, limit: int, source_mirrored_since: bool) -> int:
    """Below which offset the source still holds what it had when the copy was made:
    ``limit``, unless a mirror has since started copying into the source itself (a
    failback). Its LME cut may have removed the records this destination copied, and
    what the failback has copied back so far (from this destination, byte for byte) ends
    at the source's log end."""
    if source_mirrored_since:
        return min(limit, theirs.log_end)
    return limit


def stopped_a_copy(removal: RemoveRecord) -> bool:
    """Whether ``removal`` stopped a copy, so the destination below its MIRROR_PID_RESET
    must equal the source. An add that a remove overtook before the partition left
    STOPPED (the destination was down in between, say) copied nothing: the destination
    keeps its own log, the remove only writes a second MIRROR_PID_RESET, and no
    convergence was promised. Any other state, or one that could not be read, counts as
    a copy."""
    return removal.state_before not in NOT_COPYING


async def _check_copy(
    ctx: DrillContext,
    entry: ChaosJournal,
    start: MirrorStart,
    stop: int | None,
    note: str = "",
    own_from: int | None = None,
    log_at_add: tuple[tuple[int, bytes], ...] | None = None,
) -> None:
    """The destination's batches equal the source's, below ``stop`` (everything when
    None, once the destination has caught up), or below ``own_from`` when the destination
    kept its own log from there, or not at all when it kept the log it had at the add
    (``copied_below``)."""
    destination = ctx.cluster(start.cluster)
    source = ctx.cluster(start.source)

    async def caught_up() -> tuple[LogRecords, LogRecords] | None:
        try:
            theirs = await read_log(source, start.topic)
            ours = await read_log(destination, start.topic)
        except KeyError:  # no leader in this process yet: a broker is just back
            return None
        if stop is None and ours.log_end != theirs.log_end:
            return None
        return theirs, ours

    try:
        theirs, ours = await wait_until(caught_up, SETTLE_S, f"{start.topic} caught up")
    except DrillTimeout:
        entry.violate(SETTLES, f"{start.topic} on {start.cluster} did not catch up")
        return
    limit = copied_below(ours, own_from, stop if stop is not None else ours.log_end, log_at_add)
    limit = source_holds_below(
        theirs, limit, entry.started_after(start.source, start.topic, start.step)
    )
    low = max(_first(theirs), _first(ours))
    mine = _digests(ours, low, limit)
    expected = _digests(theirs, low, limit)
    if mine != expected:
        differing = sorted(set(mine.items()) ^ set(expected.items()))
        entry.violate(
            CONVERGED,
            f"{start.cluster}/{start.topic} differs from {start.source} below {limit}: "
            f"first differing batch at {differing[0][0]}{note}",
        )


def _first(log: LogRecords) -> int:
    return log.batches[0].base_offset if log.batches else 0


def _digests(log: LogRecords, low: int, limit: int) -> dict[int, bytes]:
    return {
        b.base_offset: batch_digest(b)
        for b in log.batches
        if low <= b.base_offset and b.last_offset < limit
    }


async def _check_grants(ctx: DrillContext, entry: ChaosJournal) -> None:
    """Watch the granted ACLs and configs through the sync window: each must be there
    at every look, unless a mirror took its topic over again after the grant."""
    acls = [g for g in entry.acls if not entry.started_after(g.cluster, g.topic, g.step)]
    configs = watched_configs(entry)
    if not acls and not configs:
        return
    broken: dict[Grant, str] = {}

    async def any_broken() -> bool:
        for grant in acls:
            if grant not in broken and not await _acl_present(ctx, grant):
                broken[grant] = f"{grant.cluster}: ACL {grant.value} on {grant.topic} deleted"
        for grant in configs:
            value = await _config_value(ctx, grant)
            if grant not in broken and value != grant.value:
                broken[grant] = (
                    f"{grant.cluster}/{grant.topic}: {grant.what} became {value}, "
                    f"set to {grant.value}"
                )
        return len(broken) == len(acls) + len(configs)

    with contextlib.suppress(DrillTimeout):
        await wait_until(any_broken, SYNC_WINDOW_S, "granted ACLs and configs watched")
    for grant, detail in broken.items():
        entry.violate(ACLS if grant.what == "acl" else CONFIGS, detail)


def watched_configs(entry: ChaosJournal) -> list[Grant]:
    """The config grants whose value must still be there: neither a mirror start nor any
    later alter of the same topic (one the explorer could not count as a grant, because the
    topic's state was unknown then or the alter timed out, still replaced the value)
    came after them."""
    return [
        g
        for g in entry.configs
        if not entry.started_after(g.cluster, g.topic, g.step)
        and not any(
            (o.cluster, o.topic) == (g.cluster, g.topic) and o.step > g.step
            for o in entry.config_alters
        )
    ]


async def _acl_present(ctx: DrillContext, grant: Grant) -> bool:
    wanted = AclBindingFilter(AclResourceType.TOPIC, grant.topic, principal=grant.value)
    async with _admin(ctx.cluster(grant.cluster)) as admin:
        return bool(await admin.describe_acls(wanted))


async def _config_value(ctx: DrillContext, grant: Grant) -> str | None:
    resource = ConfigResource(ConfigResourceType.TOPIC, grant.topic)
    async with _admin(ctx.cluster(grant.cluster)) as admin:
        described = await admin.describe_configs([resource])
    entry = described[resource].get(grant.what)
    return None if entry is None else entry.value


async def _check_read_committed(
    ctx: DrillContext, entry: ChaosJournal, logs: dict[tuple[str, str], LogRecords]
) -> None:
    """A read_committed consumer (to the last stable offset) sees no record of an
    aborted transaction, and every record of a committed one that the log still holds
    at its acknowledged offset: a commit marker the partition lost leaves the
    transaction open, and the last stable offset stops below it for good."""
    if not entry.aborted and not entry.committed:
        return
    topics = {(a.cluster, a.topic) for a in entry.acks}
    for cluster, topic in sorted(topics):
        try:
            records = await read_all(ctx, cluster, topic, "read_committed", 15.0)
        except Exception:
            continue
        seen = {v.decode(errors="replace") for _, v in records if v is not None}
        leaked = seen & entry.aborted
        if leaked:
            entry.violate(
                ABORTED,
                f"{cluster}/{topic}: read_committed saw {len(leaked)} aborted record(s)",
            )
        held = _committed_held(entry, logs, cluster, topic)
        hidden = sorted(held - seen)
        if hidden:
            entry.violate(
                COMMITTED,
                f"{cluster}/{topic}: read_committed missed {len(hidden)} committed "
                f"record(s) the log holds, first {hidden[0]}",
            )


def _committed_held(
    entry: ChaosJournal, logs: dict[tuple[str, str], LogRecords], cluster: str, topic: str
) -> set[str]:
    log = logs.get((cluster, topic))
    if log is None:
        return set()
    return {
        ack.values[0]
        for ack in entry.acks
        if (ack.cluster, ack.topic) == (cluster, topic)
        and ack.values[0] in entry.committed
        and log.values.get(ack.offset) == ack.values[0]
    }


def _check_resets_survive(entry: ChaosJournal, logs: dict[tuple[str, str], LogRecords]) -> None:
    """A remove that reached STOPPED left a MIRROR_PID_RESET past the log end it found,
    and the log keeps one there until a mirror starts copying into it again (whose LME
    cut may take it): a leader that took over without it would keep the source's
    producers in its producer state, whose ids the cluster's own producers may get."""
    for removal in entry.removes:
        if removal.pid_reset_offset is None:
            continue
        if entry.started_after(removal.cluster, removal.topic, removal.step):
            continue
        log = logs.get((removal.cluster, removal.topic))
        if log is None:
            continue
        if not any(offset >= removal.log_end_before for offset, _ in log.pid_resets):
            entry.violate(
                FENCED,
                f"{removal.cluster}/{removal.topic}: the MIRROR_PID_RESET written at "
                f"{removal.pid_reset_offset} (step {removal.step}) is gone",
            )


STEPS = {"chaos_check": chaos_check}
