"""What one chaos schedule did, as the invariants need to know it afterwards.

The steps write here (every acknowledged write with the mirror state seen right after
its acknowledgement, every remove with the log end before it and the MIRROR_PID_RESET
it produced, every (re-)add that may legitimately discard earlier writes, every ACL and
config granted on the writable side); the final check reads it. Step numbers order the
entries: an add at step 7 may discard what was acknowledged at step 5, not at step 9.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Invariant names, as reports and replays show them.
LOST = "acked-not-lost"
WRITABLE = "writable-only-when-stopped"
CONVERGED = "destination-equals-source"
EPOCHS = "leader-epochs-monotonic"
SETTLES = "operations-settle"
ACLS = "acls-survive"
CONFIGS = "configs-survive"
ABORTED = "read-committed-no-aborted"
COMMITTED = "read-committed-sees-committed"
FENCED = "pid-reset-survives"
INVARIANTS = (
    LOST,
    WRITABLE,
    CONVERGED,
    EPOCHS,
    SETTLES,
    ACLS,
    CONFIGS,
    ABORTED,
    COMMITTED,
    FENCED,
)


@dataclass(frozen=True, slots=True)
class AckedWrite:
    """Records the cluster acknowledged in one batch, at ``offset`` onwards."""

    step: int
    cluster: str
    topic: str
    partition: int
    offset: int
    values: tuple[str, ...]
    state_at_ack: str | None
    """The topic's mirror state on ``cluster`` read right after the acknowledgement
    (None: not a mirror topic there; UNANSWERED: the cluster could not be asked). Any
    other state but STOPPED means the write was accepted while the mirror still owned
    the partition."""


@dataclass(slots=True)
class RemoveRecord:
    step: int
    cluster: str
    topic: str
    log_end_before: int
    pid_reset_offset: int | None = None
    pid_reset_epoch: int | None = None
    state_before: str | None = None
    """The topic's mirror state on ``cluster`` read just before the remove: STOPPED (or
    no mirror) means an earlier add had not reached the partition yet, so nothing was
    truncated or copied for it."""


@dataclass(frozen=True, slots=True)
class MirrorStart:
    """A topic added to a mirror on ``cluster``: from here the mirror owns its log and
    may truncate it to the source's (the documented discard of a failback or re-add)."""

    step: int
    cluster: str
    mirror: str
    source: str
    topic: str
    confirmed: bool = True
    """False when the add was not answered in time: it may still land later."""
    log_at_add: tuple[tuple[int, bytes], ...] | None = None
    """The destination's batches (base offset, digest) when the add was answered, or None
    when they could not be read: a log still equal to them took no LME cut."""


@dataclass(frozen=True, slots=True)
class Grant:
    """An ACL or a topic config set on the writable side after failover."""

    step: int
    cluster: str
    topic: str
    what: str
    value: str


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str
    detail: str


@dataclass(frozen=True, slots=True)
class Divergence:
    """Acknowledged records a later mirror start discarded, as documented."""

    cluster: str
    topic: str
    partition: int
    offset: int
    count: int


@dataclass
class ChaosJournal:
    step: int = 0
    acks: list[AckedWrite] = field(default_factory=list)
    removes: list[RemoveRecord] = field(default_factory=list)
    starts: list[MirrorStart] = field(default_factory=list)
    acls: list[Grant] = field(default_factory=list)
    configs: list[Grant] = field(default_factory=list)
    config_alters: list[Grant] = field(default_factory=list)
    """Every config alter sent, answered or not (a timed-out one may still have been
    applied): any of them replaces what an earlier grant set."""
    aborted: set[str] = field(default_factory=set)
    committed: set[str] = field(default_factory=set)
    """Values of committed transactions: a read_committed consumer must see each one
    the final log still holds."""
    violations: list[Violation] = field(default_factory=list)
    divergence: list[Divergence] = field(default_factory=list)
    faults: int = 0
    refused: int = 0
    skipped: int = 0

    def violate(self, invariant: str, detail: str) -> None:
        violation = Violation(invariant, detail)
        if violation not in self.violations:
            self.violations.append(violation)

    def started_after(self, cluster: str, topic: str, step: int) -> bool:
        """Whether a mirror may have started copying ``topic`` into ``cluster`` after
        ``step``: an add at a later step, or an unanswered earlier one that no accepted
        remove has since shown to have landed."""
        for start in self.starts:
            if (start.cluster, start.topic) != (cluster, topic):
                continue
            if start.step > step:
                return True
            if not start.confirmed and not any(
                (r.cluster, r.topic) == (cluster, topic) and start.step < r.step <= step
                for r in self.removes
            ):
                return True
        return False

    def still_mirrored(self, cluster: str, topic: str) -> bool:
        """Whether this schedule added ``topic`` to a mirror on ``cluster`` (answered or
        not) and no accepted remove came after the last such add."""
        started = [s.step for s in self.starts if (s.cluster, s.topic) == (cluster, topic)]
        removed = [r.step for r in self.removes if (r.cluster, r.topic) == (cluster, topic)]
        return bool(started) and max(started) > max(removed, default=-1)

    def mirror_of(self, cluster: str, topic: str) -> MirrorStart | None:
        """The latest mirror start of ``topic`` on ``cluster``."""
        matching = [s for s in self.starts if s.cluster == cluster and s.topic == topic]
        return matching[-1] if matching else None
