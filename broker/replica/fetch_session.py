"""Incremental fetch sessions (KIP-227), sans-I/O.

Theory of operation. A fetcher that polls many partitions would resend every partition on
every Fetch; a session lets it send only what changed. The request's (session id, epoch)
pair picks one of four contexts:

==========  ======  ===================================================================
session id  epoch   context
==========  ======  ===================================================================
0           -1      sessionless: a full request, a full response, nothing cached
0           0       full: a full request; the response opens a new session if the cache
                    has room (``session_id`` 0 in the response means it had none)
X           -1      close X, then sessionless
X           0       close X, then full (a new session replaces X)
X           n > 0   incremental: the request carries only added/changed partitions plus
                    the ones to forget; the response carries only partitions whose HW,
                    LSO, log start offset or error changed, or that returned records
==========  ======  ===================================================================

An incremental request for an unknown session fails with FETCH_SESSION_ID_NOT_FOUND, one
with the wrong epoch with INVALID_FETCH_SESSION_EPOCH; in both cases the session (if any)
is left as it was, as in Kafka. Every successful incremental request bumps the epoch.

Reading only what changed. Kafka reads every partition of a session at every Fetch; with
100,000 idle partitions that is most of a broker's idle CPU. A consumer's session (a mirror
fetcher's, say) here reads only its *changed* partitions: the ones the request added or
changed, the ones whose last read had something to say (records, an error, a divergence,
or a fetch offset short of the readable end), and the ones the broker has announced as
changed since (``mark_changed``: an append, a high-watermark or log-start move, a
truncation, a leadership change). A partition whose last read found the fetcher at the end
of what it may read is *settled*: until the broker announces a change, reading it again
would find the same nothing, and the response would leave it out anyway. Followers'
sessions keep reading everything, because each read also counts as the follower's
catch-up time for the ISR.

The cache is bounded: when it is full, a new session may evict the least recently used
session that has been idle longer than the eviction time, or else the smallest session that
is smaller than the new one (a replica's session is only evicted for another replica's).
The clock is passed in, so tests drive time explicitly.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from mirrorsim.protocol.errors import ErrorCode, KafkaError

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INVALID_OFFSET = -1
DEFAULT_MAX_SESSIONS = 1000
DEFAULT_EVICTION_MS = 120_000


@dataclass(frozen=True, slots=True, order=True)
class FetchKey:
    """A partition as a Fetch request names it: by topic id (v13+) and/or by name."""

    topic: str
    partition: int
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class PartitionFetch:
    """What the fetcher asks of one partition."""

    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1
    mirror_leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class PartitionOutcome:
    """The parts of a partition's fetch result that decide whether it must be sent."""

    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    record_bytes: int
    diverging: bool = False
    at_end: bool = False
    """The read found the fetcher at the end of what it may read (log end, high watermark
    or LSO): nothing new until the partition changes."""

    @property
    def settled(self) -> bool:
        """Reading the partition again before it changes would find the same nothing."""
        return (
            self.at_end
            and self.error_code == ErrorCode.NONE
            and self.record_bytes == 0
            and not self.diverging
        )


@dataclass(slots=True)
class _CachedPartition:
    fetch: PartitionFetch
    high_watermark: int = INVALID_OFFSET
    last_stable_offset: int = INVALID_OFFSET
    log_start_offset: int = INVALID_OFFSET

    def must_respond(self, outcome: PartitionOutcome) -> bool:
        """Record what the fetcher now knows; True when it has something new to learn."""
        changed = (
            outcome.error_code != ErrorCode.NONE
            or outcome.record_bytes > 0
            or outcome.diverging
            or outcome.high_watermark != self.high_watermark
            or outcome.last_stable_offset != self.last_stable_offset
            or outcome.log_start_offset != self.log_start_offset
        )
        self.high_watermark = outcome.high_watermark
        self.last_stable_offset = outcome.last_stable_offset
        self.log_start_offset = outcome.log_start_offset
        return changed


class SessionWatch(Protocol):
    """What a parked Fetch needs of the session it reads for (``FetchSession``)."""

    @property
    def session_id(self) -> int: ...

    @property
    def woken(self) -> bool: ...

    def holds_partitions(self) -> bool: ...


def session_wait_key(session_id: int) -> tuple[str, int]:
    """The purgatory key a session's parked Fetch also waits on: announced when a partition
    the session had settled changes."""
    return ("fetch session", session_id)


@dataclass(slots=True)
class FetchSession:
    session_id: int
    privileged: bool
    created_ms: float
    last_used_ms: float
    epoch: int = 1
    partitions: dict[FetchKey, _CachedPartition] = field(default_factory=dict)
    changed: dict[FetchKey, None] = field(default_factory=dict)
    """Partitions to read at the next Fetch, in reading order (an ordered set); only kept
    for a session that reads what changed (``reads_changed``)."""
    woken: bool = False
    """A partition outside the reading Fetch changed while it was parked."""

    @property
    def size(self) -> int:
        return len(self.partitions)

    def holds_partitions(self) -> bool:
        return bool(self.partitions)

    @property
    def reads_changed(self) -> bool:
        """A consumer's session reads only changed partitions; a follower's reads all."""
        return not self.privileged

    def to_read(self) -> dict[FetchKey, PartitionFetch]:
        """The partitions the next read covers, in order; starts a new parked period."""
        self.woken = False
        if not self.reads_changed:
            return {key: entry.fetch for key, entry in self.partitions.items()}
        return {key: self.partitions[key].fetch for key in self.changed}

    def settle(self, outcomes: Mapping[FetchKey, PartitionOutcome]) -> None:
        """After a response: settled partitions leave the changed set, the ones that
        returned records go to its back (the next read serves the others first)."""
        if not self.reads_changed:
            return
        for key, outcome in outcomes.items():
            if key not in self.changed:
                continue
            if outcome.settled:
                del self.changed[key]
            elif outcome.record_bytes > 0:
                del self.changed[key]
                self.changed[key] = None


class FetchContext:
    """One request's view of the cache: what to read, then which results to send back."""

    def partitions(self) -> Mapping[FetchKey, PartitionFetch]:
        raise NotImplementedError

    def build_response(
        self, outcomes: Mapping[FetchKey, PartitionOutcome]
    ) -> tuple[int, list[FetchKey]]:
        """(session id for the response, the partitions to include, in order)."""
        raise NotImplementedError

    def throttled_session_id(self) -> int:
        """The session id of a response withheld by a quota: no session is created for a
        full request, an incremental one keeps its session unchanged (Kafka's
        ``getThrottledResponse``)."""
        return INVALID_SESSION_ID


class SessionlessContext(FetchContext):
    def __init__(self, fetch: Mapping[FetchKey, PartitionFetch]) -> None:
        self._fetch = dict(fetch)

    def partitions(self) -> Mapping[FetchKey, PartitionFetch]:
        return self._fetch

    def build_response(
        self, outcomes: Mapping[FetchKey, PartitionOutcome]
    ) -> tuple[int, list[FetchKey]]:
        return INVALID_SESSION_ID, list(self._fetch)


class FullContext(FetchContext):
    """A full request that asks for a new session; the session is created on response."""

    def __init__(
        self, cache: FetchSessionCache, fetch: Mapping[FetchKey, PartitionFetch], privileged: bool
    ) -> None:
        self._cache = cache
        self._fetch = dict(fetch)
        self._privileged = privileged

    def partitions(self) -> Mapping[FetchKey, PartitionFetch]:
        return self._fetch

    def build_response(
        self, outcomes: Mapping[FetchKey, PartitionOutcome]
    ) -> tuple[int, list[FetchKey]]:
        cached: dict[FetchKey, _CachedPartition] = {}
        for key, fetch in self._fetch.items():
            entry = _CachedPartition(fetch)
            outcome = outcomes.get(key)
            if outcome is not None:
                entry.must_respond(outcome)
            cached[key] = entry
        session_id = self._cache.maybe_create(cached, outcomes, privileged=self._privileged)
        return session_id, list(self._fetch)


class IncrementalContext(FetchContext):
    def __init__(self, cache: FetchSessionCache, session: FetchSession) -> None:
        self._cache = cache
        self._session = session

    def partitions(self) -> Mapping[FetchKey, PartitionFetch]:
        return self._session.to_read()

    @property
    def session(self) -> FetchSession:
        return self._session

    def throttled_session_id(self) -> int:
        return self._session.session_id

    def build_response(
        self, outcomes: Mapping[FetchKey, PartitionOutcome]
    ) -> tuple[int, list[FetchKey]]:
        session = self._session
        included: list[FetchKey] = []
        with_records: list[FetchKey] = []
        # A session that reads what changed answers in reading order, which already puts
        # the partitions that last returned records at the back.
        keys = session.partitions if not session.reads_changed else outcomes
        for key in keys:
            entry = session.partitions.get(key)
            outcome = outcomes.get(key)
            if entry is None or outcome is None or not entry.must_respond(outcome):
                continue
            included.append(key)
            if outcome.record_bytes > 0:
                with_records.append(key)
        # Partitions that just returned data go to the back, so that a size-limited
        # response does not keep serving the same partitions first (Kafka does the same).
        for key in with_records:
            session.partitions[key] = session.partitions.pop(key)
        session.settle(outcomes)
        return session.session_id, included


class FetchSessionCache:
    """The broker's bounded set of incremental fetch sessions."""

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        eviction_ms: float = DEFAULT_EVICTION_MS,
        rng: random.Random | None = None,
    ) -> None:
        self._clock = clock
        self._max_sessions = max_sessions
        self._eviction_ms = eviction_ms
        self._rng = rng or random.Random()
        self._sessions: dict[int, FetchSession] = {}
        self._watchers: dict[tuple[str, int], dict[int, FetchKey]] = {}
        """(topic, partition) -> the sessions that read only what changed and hold it."""

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def new_context(
        self,
        session_id: int,
        epoch: int,
        fetch: Mapping[FetchKey, PartitionFetch],
        forgotten: Iterable[FetchKey],
        *,
        privileged: bool = False,
    ) -> FetchContext:
        """The context for one Fetch request; raises KafkaError for a bad session/epoch."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)
            if epoch == FINAL_EPOCH:
                return SessionlessContext(fetch)
            return FullContext(self, fetch, privileged)
        session = self._sessions.get(session_id)
        if session is None:
            raise KafkaError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            raise KafkaError(
                ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                f"expected epoch {session.epoch} for session {session_id}, got {epoch}",
            )
        for key, partition_fetch in fetch.items():
            entry = session.partitions.get(key)
            if entry is None:
                session.partitions[key] = _CachedPartition(partition_fetch)
                self._watch(session, key)
            else:
                entry.fetch = partition_fetch
            if session.reads_changed:
                session.changed[key] = None
        for key in forgotten:
            if session.partitions.pop(key, None) is not None:
                self._unwatch(session, key)
            session.changed.pop(key, None)
        session.epoch = _next_epoch(session.epoch)
        session.last_used_ms = self._clock()
        self._touch(session)
        return IncrementalContext(self, session)

    def maybe_create(
        self,
        partitions: dict[FetchKey, _CachedPartition],
        outcomes: Mapping[FetchKey, PartitionOutcome],
        *,
        privileged: bool,
    ) -> int:
        """Cache a new session and return its id, or INVALID_SESSION_ID when there is no room.
        ``outcomes``: what the full request read, so that settled partitions start settled."""
        now = self._clock()
        if len(self._sessions) >= self._max_sessions and not self._evict_for(
            len(partitions), privileged, now
        ):
            return INVALID_SESSION_ID
        session_id = self._new_session_id()
        session = FetchSession(session_id, privileged, now, now, partitions=partitions)
        self._sessions[session_id] = session
        if session.reads_changed:
            for key in partitions:
                self._watch(session, key)
                outcome = outcomes.get(key)
                if outcome is None or not outcome.settled:
                    session.changed[key] = None
        return session_id

    def remove(self, session_id: int) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            for key in session.partitions:
                self._unwatch(session, key)

    def mark_changed(self, topic: str, partition: int) -> list[int]:
        """The broker changed ``topic``-``partition``: every session holding it reads it at
        its next Fetch. The ids of the sessions that had it settled, whose parked Fetch
        (if any) should wake and answer so that the next one reads it."""
        watchers = self._watchers.get((topic, partition))
        if not watchers:
            return []
        woken: list[int] = []
        for session_id, key in watchers.items():
            session = self._sessions[session_id]
            if key not in session.changed:
                session.changed[key] = None
                session.woken = True
                woken.append(session_id)
        return woken

    def _watch(self, session: FetchSession, key: FetchKey) -> None:
        if session.reads_changed:
            self._watchers.setdefault((key.topic, key.partition), {})[session.session_id] = key

    def _unwatch(self, session: FetchSession, key: FetchKey) -> None:
        watchers = self._watchers.get((key.topic, key.partition))
        if watchers is not None:
            watchers.pop(session.session_id, None)
            if not watchers:
                del self._watchers[(key.topic, key.partition)]

    def _touch(self, session: FetchSession) -> None:
        """Keep ``_sessions`` in least-recently-used order."""
        self._sessions[session.session_id] = self._sessions.pop(session.session_id)

    def _evict_for(self, size: int, privileged: bool, now: float) -> bool:
        oldest = next(iter(self._sessions.values()), None)
        if oldest is not None and now - oldest.last_used_ms > self._eviction_ms:
            self.remove(oldest.session_id)
            return True
        candidates = [
            s for s in self._sessions.values() if s.size < size and (privileged or not s.privileged)
        ]
        if not candidates:
            return False
        victim = min(candidates, key=lambda s: (s.privileged, s.size, s.last_used_ms))
        self.remove(victim.session_id)
        return True

    def _new_session_id(self) -> int:
        while True:
            candidate = self._rng.randint(1, 2**31 - 1)
            if candidate not in self._sessions:
                return candidate


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1
