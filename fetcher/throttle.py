"""Destination-side mirror throttling: Kafka's follower replication quota, for mirror fetchers.

Kafka throttles replica fetchers with one ``ReplicationQuotaManager`` per broker, shared by
all its fetcher threads: a partition listed for this broker in the topic's
``follower.replication.throttled.replicas`` is left out of a fetch while the bytes fetched
for throttled partitions exceed ``follower.replication.throttled.rate``, and the bytes a
response brings for them are recorded against the quota. Mirror fetchers get the same rules
under their own names (``mirror.replication.throttled.rate`` on the broker,
``mirror.replication.throttled.replicas`` on the topic), so mirror traffic and
intra-cluster replication are throttled independently, as KIP-1279 asks.

Kafka compares a rate sampled over 11 one-second windows with the bound; here the quota is
a token bucket that may go into debt. It holds the same long-run rate, and it says exactly
when the next fetch may go, so a throttled fetcher sleeps that long instead of polling.
A fetch that includes throttled partitions asks for no more bytes than the bucket holds
(the source still returns at least one batch), so one response cannot overshoot the rate
by a whole 8 MiB fetch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mirrorsim.broker.metrics.rate import RateMeter

UNTHROTTLED = 2**63 - 1
"""``mirror.replication.throttled.rate``'s default: no limit."""
BURST_S = 1.0
"""The bucket holds at most one second of the rate: an idle mirror may burst that much."""
MIN_FETCH_BYTES = 64 * 1024
"""A throttled fetch asks for at least this much, so tiny refills do not mean tiny fetches."""
ZERO_RATE_RECHECK_MS = 1000
"""How often a fetcher blocked by a rate of 0 looks again (the rate is dynamic)."""
QUOTA_WINDOW_S = 11
"""Kafka's ``replication.quota.window.num`` times 1 s: the span ``ByteRate`` averages over."""


@dataclass(frozen=True, slots=True)
class TopicThrottle:
    """The partitions of one topic that a replica list throttles on one broker.

    A fetcher asks once per topic rather than once per partition: a broker mirrors up
    to a few thousand topics but may hold a hundred thousand partitions of them.
    """

    every: bool = False
    partitions: frozenset[int] = frozenset()

    def __contains__(self, partition: int) -> bool:
        return self.every or partition in self.partitions


NOT_THROTTLED = TopicThrottle()
"""The answer for a topic without a replica list, the common case, shared."""


def throttled_partitions(entries: Iterable[str], broker_id: int) -> TopicThrottle:
    """What a parsed replica list throttles on ``broker_id``: ``*`` throttles every
    partition, ``p:b`` throttles partition p on broker b (p written as Kafka writes it)."""
    listed = set(entries)
    if not listed:
        return NOT_THROTTLED
    if "*" in listed:
        return TopicThrottle(every=True)
    suffix = f":{broker_id}"
    partitions: set[int] = set()
    for entry in listed:
        head = entry.removesuffix(suffix)
        if head != entry and head.isdecimal() and str(int(head)) == head:
            partitions.add(int(head))
    return TopicThrottle(partitions=frozenset(partitions))


def is_throttled_replica(entries: Iterable[str], partition: int, broker_id: int) -> bool:
    """Whether ``partition`` on ``broker_id`` is throttled by a parsed replica list."""
    return partition in throttled_partitions(entries, broker_id)


class MirrorReplicationQuota:
    """The broker's one mirror replication quota, shared by all its mirror fetchers."""

    def __init__(
        self,
        *,
        broker_id: int,
        rate: Callable[[], int],
        throttled_replicas: Callable[[str], Iterable[str]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._broker_id = broker_id
        self._rate = rate
        self._throttled_replicas = throttled_replicas
        self._clock = clock
        self._tokens = 0.0
        self._updated = clock()
        self._bound = UNTHROTTLED
        self._byte_rate = RateMeter(clock, window_s=QUOTA_WINDOW_S)

    def is_throttled(self, topic: str, partition: int) -> bool:
        return partition in self.throttled_partitions(topic)

    def throttled_partitions(self, topic: str) -> TopicThrottle:
        """The partitions of ``topic`` throttled on this broker (one topic config lookup)."""
        return throttled_partitions(self._throttled_replicas(topic), self._broker_id)

    def _refill(self) -> float:
        """Bring the bucket up to now under the current rate; the rate (bytes/s)."""
        bound = self._rate()
        now = self._clock()
        if bound != self._bound:
            self._bound = bound
            self._tokens = min(self._tokens, bound * BURST_S)
        if bound >= UNTHROTTLED:
            self._tokens = 0.0
        else:
            elapsed = max(0.0, now - self._updated)
            self._tokens = min(bound * BURST_S, self._tokens + elapsed * bound)
        self._updated = now
        return float(bound)

    def exceeded(self) -> bool:
        """Whether throttled partitions must sit out the next fetch."""
        bound = self._refill()
        return bound < UNTHROTTLED and self._tokens <= 0

    def delay_ms(self) -> int:
        """How long until throttled partitions may fetch again."""
        bound = self._refill()
        if bound >= UNTHROTTLED or self._tokens > 0:
            return 0
        if bound <= 0:
            return ZERO_RATE_RECHECK_MS
        return max(1, int(-self._tokens / bound * 1000) + 1)

    def fetch_bytes(self, limit: int) -> int:
        """The most a fetch with throttled partitions should ask for, at most ``limit``."""
        bound = self._refill()
        if bound >= UNTHROTTLED:
            return limit
        return max(MIN_FETCH_BYTES, min(limit, int(self._tokens)))

    def record(self, size: int) -> None:
        """``size`` bytes arrived for throttled partitions."""
        if size <= 0:
            return
        self._refill()
        if self._bound < UNTHROTTLED:
            self._tokens -= size
        self._byte_rate.mark(size)

    def byte_rate(self) -> float:
        """Throttled bytes per second over the quota window (MirrorReplication ByteRate)."""
        return self._byte_rate.rate()
