"""The client side of incremental fetch sessions, against a model of the source's cache."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.fetcher.fetch_session import (
    FULL_EPOCH,
    FetchSessionHandler,
    Key,
    PartitionRequest,
    SessionRequest,
)
from mirrorsim.protocol.errors import ErrorCode

KEYS = st.sampled_from([("orders", p) for p in range(4)] + [("audit", 0)])
REQUESTS = st.builds(
    PartitionRequest,
    fetch_offset=st.integers(0, 5),
    current_leader_epoch=st.integers(0, 2),
    last_fetched_epoch=st.integers(-1, 2),
)
ROUND = st.tuples(
    st.dictionaries(KEYS, REQUESTS, max_size=5),
    st.sampled_from([ErrorCode.NONE] * 4 + [ErrorCode.FETCH_SESSION_ID_NOT_FOUND]),
)


def build(
    handler: FetchSessionHandler,
    wish: dict[Key, PartitionRequest],
    wanted: Mapping[Key, PartitionRequest],
) -> SessionRequest:
    """Tell ``handler`` that ``wanted`` replaces ``wish`` (every key set again, the keys
    no longer wanted removed), then build the next request."""
    for key in wish.keys() - wanted.keys():
        handler.remove(key)
    for key, request in wanted.items():
        handler.set(key, request)
    wish.clear()
    wish.update(wanted)
    return handler.build()


@given(st.lists(ROUND, min_size=1, max_size=12))
def test_the_source_session_always_holds_exactly_what_is_wanted(rounds: list) -> None:
    """Replaying what was sent onto a model of the source session reproduces the wish."""
    handler = FetchSessionHandler()
    wish: dict = {}
    session: dict = {}
    epoch = FULL_EPOCH
    for wanted, error in rounds:
        request = build(handler, wish, wanted)
        if request.is_full:
            assert request.session_id == 0 and request.forgotten == []
            assert request.partitions == wanted
            candidate = dict(wanted)
        else:
            assert request.epoch == epoch
            candidate = {**session, **request.partitions}
            for key in request.forgotten:
                candidate.pop(key)
        assert candidate == wanted
        if error is ErrorCode.NONE:
            session = candidate
            handler.handle_response(error, 42)
            epoch = request.epoch + 1
        else:
            handler.handle_response(error, 0)
            session, epoch = {}, FULL_EPOCH


def test_incremental_requests_send_only_changes() -> None:
    handler = FetchSessionHandler()
    wish: dict = {}
    first = PartitionRequest(0, 0, -1)
    build(handler, wish, {("orders", 0): first, ("orders", 1): first})
    handler.handle_response(ErrorCode.NONE, 7)
    moved = PartitionRequest(3, 0, 0)
    request = build(handler, wish, {("orders", 0): moved})
    assert (request.session_id, request.epoch) == (7, 1)
    assert request.partitions == {("orders", 0): moved}
    assert request.forgotten == [("orders", 1)]


def test_a_source_without_room_for_a_session_gets_full_requests() -> None:
    handler = FetchSessionHandler()
    wish: dict = {}
    build(handler, wish, {("orders", 0): PartitionRequest(0, 0, -1)})
    handler.handle_response(ErrorCode.NONE, 0)
    assert build(handler, wish, {("orders", 0): PartitionRequest(1, 0, 0)}).is_full


@dataclass(slots=True)
class FullDiff:
    """The straightforward client: each request diffs the whole wish against what the
    source acknowledged, the last wish built becoming known when its answer arrives."""

    session_id: int = 0
    epoch: int = FULL_EPOCH
    known: dict[Key, PartitionRequest] = field(default_factory=dict)
    pending: dict[Key, PartitionRequest] = field(default_factory=dict)

    def build(self, wanted: Mapping[Key, PartitionRequest]) -> SessionRequest:
        self.pending = dict(wanted)
        if self.epoch == FULL_EPOCH:
            return SessionRequest(0, FULL_EPOCH, dict(wanted), [])
        changed = {k: v for k, v in wanted.items() if self.known.get(k) != v}
        forgotten = [k for k in self.known if k not in wanted]
        return SessionRequest(self.session_id, self.epoch, changed, forgotten)

    def handle_response(self, error: ErrorCode, session_id: int) -> None:
        if error != ErrorCode.NONE or session_id == 0:
            self.reset()
            return
        self.session_id = session_id
        self.known = self.pending
        self.epoch += 1

    def reset(self) -> None:
        self.session_id, self.epoch, self.known = 0, FULL_EPOCH, {}


ANSWERED = st.tuples(
    st.just("respond"),
    st.sampled_from([ErrorCode.NONE] * 6 + [ErrorCode.FETCH_SESSION_ID_NOT_FOUND]),
    st.sampled_from([42] * 6 + [0]),
)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), KEYS, REQUESTS),
        st.tuples(st.just("remove"), KEYS),
        st.tuples(st.just("build")),
        st.tuples(st.just("build"), ANSWERED),
        ANSWERED,
        st.tuples(st.just("reset")),
    ),
    max_size=40,
)


@settings(max_examples=300)
@given(OPERATIONS)
def test_incremental_requests_match_a_full_diff_of_the_whole_wish(operations: list) -> None:
    """Changes declared one key at a time, including while a request is outstanding, a
    request superseded before its answer came, session errors and resets: every request
    asks for what a diff of the whole wish against the source's session would."""
    handler = FetchSessionHandler()
    reference = FullDiff()
    wanted: dict[Key, PartitionRequest] = {}
    outstanding = False
    for operation in operations:
        match operation:
            case ("set", key, request):
                handler.set(key, request)
                wanted[key] = request
            case ("remove", key):
                handler.remove(key)
                wanted.pop(key, None)
            case ("build", *answer):
                ours, theirs = handler.build(), reference.build(wanted)
                assert (ours.session_id, ours.epoch) == (theirs.session_id, theirs.epoch)
                assert ours.partitions == theirs.partitions
                assert set(ours.forgotten) == set(theirs.forgotten)
                assert len(ours.forgotten) == len(theirs.forgotten)
                assert handler.wanted == len(wanted)
                outstanding = True
                for _, error, session_id in answer:
                    handler.handle_response(error, session_id)
                    reference.handle_response(error, session_id)
                    outstanding = False
            case ("respond", error, session_id) if outstanding:
                handler.handle_response(error, session_id)
                reference.handle_response(error, session_id)
                outstanding = False
            case ("reset",):
                handler.reset()
                reference.reset()
                outstanding = False
