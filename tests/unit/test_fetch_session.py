"""KIP-227 fetch sessions: contexts, incremental responses, the bounded cache."""

from __future__ import annotations

import random

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
