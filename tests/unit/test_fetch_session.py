"""KIP-227 fetch sessions: contexts, incremental responses, the bounded cache."""

from __future__ import annotations

import random
from collections.abc import Iterable

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from mirrorsim.broker.replica.fetch_session import (
    FetchKey,
    FetchSessionCache,
    FullContext,
    IncrementalContext,
    PartitionFetch,
    PartitionOutcome,
    SessionlessContext,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def key(partition: int, topic: str = "t") -> FetchKey:
    return FetchKey(topic, partition)


def fetch(offset: int = 0) -> PartitionFetch:
    return PartitionFetch(fetch_offset=offset, partition_max_bytes=1024)


def outcome(hw: int = 0, records: int = 0, error: int = ErrorCode.NONE) -> PartitionOutcome:
    return PartitionOutcome(error, hw, hw, 0, records)


def open_session(cache: FetchSessionCache, keys: list[FetchKey]) -> int:
    context = cache.new_context(0, 0, {k: fetch() for k in keys}, [])
    assert isinstance(context, FullContext)
    session_id, included = context.build_response({k: outcome() for k in keys})
    assert included == keys
    return session_id


def test_sessionless_fetch_caches_nothing() -> None:
    cache = FetchSessionCache(clock=FakeClock())
    context = cache.new_context(0, -1, {key(0): fetch(), key(1): fetch()}, [])
    assert isinstance(context, SessionlessContext)
    session_id, included = context.build_response({})
    assert session_id == 0
    assert included == [key(0), key(1)]
    assert len(cache) == 0


def test_full_fetch_opens_session_and_incremental_sends_only_changes() -> None:
    cache = FetchSessionCache(clock=FakeClock())
    session_id = open_session(cache, [key(0), key(1)])
    assert session_id != 0

    context = cache.new_context(session_id, 1, {}, [])
    assert isinstance(context, IncrementalContext)
    assert set(context.partitions()) == {key(0), key(1)}
    _, included = context.build_response({key(0): outcome(), key(1): outcome(hw=5)})
    assert included == [key(1)]

    context = cache.new_context(session_id, 2, {}, [])
    _, included = context.build_response({key(0): outcome(), key(1): outcome(hw=5)})
    assert included == []

    context = cache.new_context(session_id, 3, {}, [])
    _, included = context.build_response(
        {key(0): outcome(records=10), key(1): outcome(hw=5, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)}
    )
    assert included == [key(0), key(1)]


def test_partitions_with_data_move_to_the_back() -> None:
    cache = FetchSessionCache(clock=FakeClock())
    session_id = open_session(cache, [key(0), key(1), key(2)])
    context = cache.new_context(session_id, 1, {}, [])
    context.build_response({key(0): outcome(records=3)})
    context = cache.new_context(session_id, 2, {}, [])
    assert list(context.partitions()) == [key(1), key(2), key(0)]


def test_incremental_adds_updates_and_forgets() -> None:
    cache = FetchSessionCache(clock=FakeClock())
    session_id = open_session(cache, [key(0), key(1)])
    context = cache.new_context(session_id, 1, {key(2): fetch(7), key(0): fetch(3)}, [key(1)])
    assert context.partitions() == {key(0): fetch(3), key(2): fetch(7)}
    _, included = context.build_response({key(0): outcome(), key(2): outcome()})
    assert included == [key(2)], "a newly added partition is always answered once"


def test_unknown_session_and_wrong_epoch_are_rejected_without_side_effects() -> None:
    cache = FetchSessionCache(clock=FakeClock())
    session_id = open_session(cache, [key(0)])
    with pytest.raises(KafkaError) as err:
        cache.new_context(session_id + 1, 1, {}, [])
    assert err.value.code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    with pytest.raises(KafkaError) as err:
        cache.new_context(session_id, 2, {key(5): fetch()}, [key(0)])
    assert err.value.code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    context = cache.new_context(session_id, 1, {}, [])
    assert set(context.partitions()) == {key(0)}


def test_final_epoch_closes_the_session() -> None:
    cache = FetchSessionCache(clock=FakeClock())
    session_id = open_session(cache, [key(0)])
    context = cache.new_context(session_id, -1, {key(1): fetch()}, [])
    assert isinstance(context, SessionlessContext)
    assert cache.get(session_id) is None


def test_full_cache_declines_a_new_session_that_is_not_larger() -> None:
    cache = FetchSessionCache(clock=FakeClock(), max_sessions=2, eviction_ms=1000)
    first = open_session(cache, [key(0), key(1)])
    second = open_session(cache, [key(0), key(1)])
    assert open_session(cache, [key(0)]) == 0
    assert cache.get(first) is not None
    assert cache.get(second) is not None


def test_full_cache_evicts_a_smaller_session_for_a_larger_one() -> None:
    cache = FetchSessionCache(clock=FakeClock(), max_sessions=2, eviction_ms=1000)
    small = open_session(cache, [key(0)])
    large = open_session(cache, [key(0), key(1), key(2)])
    newest = open_session(cache, [key(0), key(1)])
    assert newest != 0
    assert cache.get(small) is None
    assert cache.get(large) is not None


def test_full_cache_evicts_an_idle_session_first() -> None:
    clock = FakeClock()
    cache = FetchSessionCache(clock=clock, max_sessions=2, eviction_ms=1000)
    idle = open_session(cache, [key(0), key(1), key(2)])
    clock.now = 500
    busy = open_session(cache, [key(0), key(1), key(2)])
    clock.now = 1200
    cache.new_context(busy, 1, {}, [])
    newest = open_session(cache, [key(0)])
    assert newest != 0
    assert cache.get(idle) is None
    assert cache.get(busy) is not None


def test_replica_sessions_are_not_evicted_for_consumers() -> None:
    cache = FetchSessionCache(clock=FakeClock(), max_sessions=1, eviction_ms=1000)
    context = cache.new_context(0, 0, {key(0): fetch()}, [], privileged=True)
    replica_session, _ = context.build_response({})
    assert open_session(cache, [key(0), key(1)]) == 0
    assert cache.get(replica_session) is not None


keys_strategy = st.lists(
    st.builds(FetchKey, st.sampled_from(["a", "b"]), st.integers(0, 3)), max_size=5, unique=True
)


class SessionModel(RuleBasedStateMachine):
    """Random full/incremental/erroneous requests keep exactly the model's partition set."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.cache = FetchSessionCache(clock=self.clock, rng=random.Random(0))
        self.session_id = 0
        self.epoch = 0
        self.model: dict[FetchKey, PartitionFetch] = {}

    @rule(keys=keys_strategy, offset=st.integers(0, 100))
    def full_request(self, keys: list[FetchKey], offset: int) -> None:
        requested = {k: fetch(offset) for k in keys}
        context = self.cache.new_context(self.session_id, 0, requested, [])
        assert context.partitions() == requested
        self.session_id, included = context.build_response({})
        assert included == keys
        self.epoch = 1
        self.model = dict(requested)

    @precondition(lambda self: self.session_id != 0)
    @rule(added=keys_strategy, forgotten=keys_strategy, offset=st.integers(0, 100))
    def incremental_request(
        self, added: list[FetchKey], forgotten: list[FetchKey], offset: int
    ) -> None:
        requested = {k: fetch(offset) for k in added}
        context = self.cache.new_context(self.session_id, self.epoch, requested, forgotten)
        self.model.update(requested)
        for k in forgotten:
            self.model.pop(k, None)
        assert context.partitions() == self.model
        context.build_response({k: outcome() for k in self.model})
        self.epoch += 1

    @precondition(lambda self: self.session_id != 0)
    @rule(skew=st.integers(1, 3))
    def stale_epoch(self, skew: int) -> None:
        with pytest.raises(KafkaError) as err:
            self.cache.new_context(self.session_id, self.epoch + skew, {}, [])
        assert err.value.code == ErrorCode.INVALID_FETCH_SESSION_EPOCH

    @precondition(lambda self: self.session_id != 0)
    @rule()
    def close(self) -> None:
        self.cache.new_context(self.session_id, -1, {}, [])
        self.session_id, self.model = 0, {}

    @invariant()
    def cache_matches_model(self) -> None:
        if self.session_id == 0:
            assert len(self.cache) == 0
            return
        session = self.cache.get(self.session_id)
        assert session is not None
        assert session.epoch == self.epoch
        assert {k: p.fetch for k, p in session.partitions.items()} == self.model


TestSessionModel = SessionModel.TestCase
TestSessionModel.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)


def settled(hw: int = 0) -> PartitionOutcome:
    return PartitionOutcome(ErrorCode.NONE, hw, hw, 0, 0, at_end=True)


def test_a_consumer_session_reads_a_settled_partition_again_only_once_it_changed() -> None:
    cache = FetchSessionCache(clock=FakeClock())
    context = cache.new_context(0, 0, {key(0): fetch(), key(1): fetch(), key(2): fetch()}, [])
    session_id, _ = context.build_response(
        {key(0): settled(), key(1): settled(), key(2): outcome()}
    )
    context = cache.new_context(session_id, 1, {}, [])
    assert list(context.partitions()) == [key(2)]
    context.build_response({key(2): settled()})
    context = cache.new_context(session_id, 2, {}, [])
    assert context.partitions() == {}
    assert cache.mark_changed("t", 1) == [session_id]
    assert cache.mark_changed("t", 1) == []
    session = cache.get(session_id)
    assert session is not None and session.woken
    context = cache.new_context(session_id, 3, {}, [])
    assert list(context.partitions()) == [key(1)]
    assert not session.woken
    _, included = context.build_response({key(1): settled(hw=5)})
    assert included == [key(1)]


def test_a_partition_that_returned_records_is_read_again_after_the_others() -> None:
    cache = FetchSessionCache(clock=FakeClock())
    keys = [key(0), key(1), key(2)]
    session_id = open_session(cache, keys)
    context = cache.new_context(session_id, 1, {}, [])
    assert list(context.partitions()) == keys
    context.build_response({key(0): outcome(records=10), key(1): outcome(), key(2): settled()})
    context = cache.new_context(session_id, 2, {}, [])
    assert list(context.partitions()) == [key(1), key(0)]


def test_a_follower_session_reads_every_partition_and_watches_none() -> None:
    cache = FetchSessionCache(clock=FakeClock())
    context = cache.new_context(0, 0, {key(0): fetch(), key(1): fetch()}, [], privileged=True)
    session_id, _ = context.build_response({key(0): settled(), key(1): settled()})
    context = cache.new_context(session_id, 1, {}, [])
    assert list(context.partitions()) == [key(0), key(1)]
    assert cache.mark_changed("t", 0) == []


def test_forgotten_partitions_and_closed_sessions_are_no_longer_watched() -> None:
    cache = FetchSessionCache(clock=FakeClock())
    context = cache.new_context(0, 0, {key(0): fetch(), key(1): fetch()}, [])
    session_id, _ = context.build_response({key(0): settled(), key(1): settled()})
    cache.new_context(session_id, 1, {}, [key(0)])
    assert cache.mark_changed("t", 0) == []
    assert cache.mark_changed("t", 1) == [session_id]
    cache.new_context(session_id, -1, {}, [])
    assert cache.mark_changed("t", 1) == []


class SettledSessionModel(RuleBasedStateMachine):
    """A consumer's session that reads only what changed answers exactly as a session that
    reads everything (a follower's), as long as the broker announces every change."""

    PARTITIONS = 4

    def __init__(self) -> None:
        super().__init__()
        self.cache = FetchSessionCache(clock=FakeClock(), rng=random.Random(0))
        self.high_watermarks = [0] * self.PARTITIONS
        self.keys = [key(p) for p in range(self.PARTITIONS)]
        self.sessions: dict[bool, tuple[int, int]] = {}
        self.offsets: dict[bool, dict[FetchKey, int]] = {}
        for privileged in (False, True):
            self.offsets[privileged] = dict.fromkeys(self.keys, 0)
            context = self.cache.new_context(
                0, 0, {k: fetch() for k in self.keys}, [], privileged=privileged
            )
            session_id, _ = context.build_response(self._outcomes(privileged, self.keys))
            self.sessions[privileged] = (session_id, 1)

    def _outcomes(
        self, privileged: bool, keys: Iterable[FetchKey]
    ) -> dict[FetchKey, PartitionOutcome]:
        found = {}
        for k in keys:
            hw = self.high_watermarks[k.partition]
            behind = hw - self.offsets[privileged][k]
            found[k] = PartitionOutcome(ErrorCode.NONE, hw, hw, 0, behind, at_end=behind == 0)
        return found

    @rule(partition=st.integers(0, PARTITIONS - 1), records=st.integers(1, 3))
    def append(self, partition: int, records: int) -> None:
        self.high_watermarks[partition] += records
        self.cache.mark_changed("t", partition)

    @rule(consume=st.booleans())
    def fetch_both(self, consume: bool) -> None:
        answers = []
        for privileged in (False, True):
            session_id, epoch = self.sessions[privileged]
            offsets = self.offsets[privileged]
            context = self.cache.new_context(session_id, epoch, {}, [])
            outcomes = self._outcomes(privileged, context.partitions())
            _, included = context.build_response(outcomes)
            answers.append({(k, outcomes[k]) for k in included})
            requested = {}
            if consume:
                for k in included:
                    offsets[k] += outcomes[k].record_bytes
                    requested[k] = fetch(offsets[k])
            self.sessions[privileged] = (session_id, epoch + 1)
            if requested:
                context = self.cache.new_context(session_id, epoch + 1, requested, [])
                outcomes = self._outcomes(privileged, context.partitions())
                _, included = context.build_response(outcomes)
                answers[-1] |= {(k, outcomes[k]) for k in included}
                self.sessions[privileged] = (session_id, epoch + 2)
        assert answers[0] == answers[1]


TestSettledSessionModel = SettledSessionModel.TestCase
TestSettledSessionModel.settings = settings(max_examples=80, stateful_step_count=30, deadline=None)
