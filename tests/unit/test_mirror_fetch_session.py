"""The client side of incremental fetch sessions, against a model of the source's cache."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.fetcher.fetch_session import FULL_EPOCH, FetchSessionHandler, PartitionRequest
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


@given(st.lists(ROUND, min_size=1, max_size=12))
def test_the_source_session_always_holds_exactly_what_is_wanted(rounds: list) -> None:
    """Replaying what was sent onto a model of the source session reproduces the wish."""
    handler = FetchSessionHandler()
    session: dict = {}
    epoch = FULL_EPOCH
    for wanted, error in rounds:
        request = handler.build(wanted)
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
    first = PartitionRequest(0, 0, -1)
    handler.build({("orders", 0): first, ("orders", 1): first})
    handler.handle_response(ErrorCode.NONE, 7)
    moved = PartitionRequest(3, 0, 0)
    request = handler.build({("orders", 0): moved})
    assert (request.session_id, request.epoch) == (7, 1)
    assert request.partitions == {("orders", 0): moved}
    assert request.forgotten == [("orders", 1)]


def test_a_source_without_room_for_a_session_gets_full_requests() -> None:
    handler = FetchSessionHandler()
    handler.build({("orders", 0): PartitionRequest(0, 0, -1)})
    handler.handle_response(ErrorCode.NONE, 0)
    assert handler.build({("orders", 0): PartitionRequest(1, 0, 0)}).is_full
