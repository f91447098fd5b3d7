"""When every destination replica of a PREPARING mirror partition has taken the LME cut.

The leader cuts its own log at the LME; its followers cut theirs by following it (their
next Fetch carries a last fetched epoch the leader no longer has, the diverging-epoch
answer makes them truncate). The leader sees a follower's log end offset only in the
fetches that passed epoch fencing and found no divergence, so a follower has completed the
truncation once such a fetch, made after the leader's cut, asked for an offset at or below
the leader's log end offset: nothing past the cut is left on it.

Whose cut the leader waits for (spec, "Log Convergence" and "Unclean Leader Election"):
every ISR member; with ``mirror.support.unclean.leader.election`` every replica, which
must also be back in the ISR, so that no replica that later wins an unclean election
still holds epochs above the LME. An ISR smaller than ``min.insync.replicas`` is not
enough either: the spec's "if less than min ISR are available, we will skip and retry",
so the leader keeps waiting, however long, and the timeout starts again once the ISR is
back (a follower cannot be blamed for not truncating while it was out of the ISR).

Only the replicas the unclean-election support requires can fail the partition: the
spec's "If some replicas cannot catch up ... the mirror partition moves to the FAILED
state" is about that config, and those that have not truncated within ``timeout_ms`` of
an ISR large enough do. An ISR member that stops fetching is instead what Kafka's ISR
shrink is for: the leader drops it from the ISR once it is ``replica.lag.time.max.ms``
behind, it is no longer required, and the cut is complete on the ISR that is left.
(Failing there raced the shrink and lost: a stalled but live follower put the partition
in FAILED, for an operator to restart, while mirroring could have gone on.)

Sans I/O: the coordinator passes what the partition knows, this module decides.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


class TruncationWait(enum.Enum):
    COMPLETE = "every required replica has truncated"
    WAITING = "some required replica has not truncated yet"
    BELOW_MIN_ISR = "the ISR is smaller than min.insync.replicas: skip, retry later"
    TIMED_OUT = "some required replica did not truncate in time"


@dataclass(frozen=True, slots=True)
class FollowerFetch:
    """The leader's view of a follower's latest counted fetch."""

    log_end_offset: int
    last_fetch_ms: int


@dataclass(frozen=True, slots=True)
class ReplicaTruncationCheck:
    leader: int
    replicas: Sequence[int]
    isr: Sequence[int]
    min_insync_replicas: int
    all_replicas_required: bool
    leader_log_end_offset: int
    truncated_at_ms: int
    timeout_ms: int
    waiting_since_ms: int | None = None
    """Start of the timeout: the cut, or the latest time the ISR was below the minimum."""

    def required(self) -> list[int]:
        """Followers whose cut the leader waits for."""
        members = self.replicas if self.all_replicas_required else self.isr
        return [r for r in members if r != self.leader]

    def pending(self, followers: Mapping[int, FollowerFetch]) -> list[int]:
        """Required followers that have not shown a post-cut log yet."""
        waiting = []
        for replica in self.required():
            fetch = followers.get(replica)
            truncated = (
                fetch is not None
                and fetch.last_fetch_ms >= self.truncated_at_ms
                and fetch.log_end_offset <= self.leader_log_end_offset
            )
            if not truncated or (self.all_replicas_required and replica not in self.isr):
                waiting.append(replica)
        return waiting

    def outcome(self, followers: Mapping[int, FollowerFetch], now_ms: int) -> TruncationWait:
        """COMPLETE, or why not yet. BELOW_MIN_ISR never times out; the caller passes
        ``now_ms`` as the next ``waiting_since_ms`` then, so the timeout restarts."""
        if len(self.isr) < self.min_insync_replicas:
            return TruncationWait.BELOW_MIN_ISR
        if not self.pending(followers):
            return TruncationWait.COMPLETE
        if not self.all_replicas_required:
            return TruncationWait.WAITING
        since = self.truncated_at_ms if self.waiting_since_ms is None else self.waiting_since_ms
        if now_ms - since > self.timeout_ms:
            return TruncationWait.TIMED_OUT
        return TruncationWait.WAITING
