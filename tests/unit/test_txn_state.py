"""The transaction state machine and the coordinator's decisions (pure functions)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from mirrorsim.broker.txn.state import (
    MAX_PRODUCER_EPOCH,
    VALID_PREVIOUS,
    IllegalTxnTransition,
    TxnError,
    TxnMetadata,
    TxnState,
    decide_add_partitions,
    decide_complete,
    decide_end_txn,
    decide_init_producer_id,
    decide_timeout_abort,
)
from mirrorsim.protocol.errors import ErrorCode

states = st.sampled_from(list(TxnState))


def meta(state: TxnState = TxnState.EMPTY, epoch: int = 0, **kw: object) -> TxnMetadata:
    return TxnMetadata("t", 7, epoch, 60_000, state=state, **kw)  # type: ignore[arg-type]


@given(states, states)
def test_every_state_pair_follows_the_table(source: TxnState, target: TxnState) -> None:
    if source in VALID_PREVIOUS[target]:
        assert meta(source).transition(target, 1).state is target
    else:
        with pytest.raises(IllegalTxnTransition):
            meta(source).transition(target, 1)


def init(current: TxnMetadata | None, pid: int = -1, epoch: int = -1) -> object:
    return decide_init_producer_id(
        current,
        transactional_id="t",
        timeout_ms=60_000,
        expected_producer_id=pid,
        expected_epoch=epoch,
        now_ms=5,
        new_producer_id=lambda: 99,
    )


def test_first_init_allocates_epoch_zero_and_reinit_bumps() -> None:
    first = init(None).metadata  # type: ignore[attr-defined]
    assert (first.producer_id, first.producer_epoch, first.state) == (99, 0, TxnState.EMPTY)
    again = init(first).metadata  # type: ignore[attr-defined]
    assert (again.producer_id, again.producer_epoch) == (99, 1)


def test_init_during_an_ongoing_transaction_fences_and_aborts_it() -> None:
    ongoing = meta(TxnState.ONGOING, epoch=4, partitions=frozenset({("a", 0)}))
    decision = init(ongoing)
    assert decision.error is ErrorCode.CONCURRENT_TRANSACTIONS  # type: ignore[attr-defined]
    aborting = decision.metadata  # type: ignore[attr-defined]
    assert (aborting.state, aborting.producer_epoch) == (TxnState.PREPARE_ABORT, 5)
    assert aborting.partitions == {("a", 0)}
    assert init(aborting).error is ErrorCode.CONCURRENT_TRANSACTIONS  # type: ignore[attr-defined]


def test_exhausted_epoch_takes_a_new_producer_id() -> None:
    old = meta(TxnState.COMPLETE_COMMIT, epoch=MAX_PRODUCER_EPOCH - 1)
    fresh = init(old).metadata  # type: ignore[attr-defined]
    assert (fresh.producer_id, fresh.producer_epoch, fresh.last_producer_id) == (99, 0, 7)


def test_unknown_instance_is_fenced() -> None:
    with pytest.raises(TxnError) as raised:
        init(meta(epoch=3), pid=7, epoch=1)
    assert raised.value.code is ErrorCode.PRODUCER_FENCED


def test_end_txn_rules() -> None:
    ongoing = meta(TxnState.ONGOING, partitions=frozenset({("a", 0)}))
    kw = {"producer_id": 7, "producer_epoch": 0, "now_ms": 9}
    assert decide_end_txn(ongoing, commit=True, **kw).state is TxnState.PREPARE_COMMIT
    done = meta(TxnState.COMPLETE_COMMIT)
    assert decide_end_txn(done, commit=True, **kw) is done
    for current, commit, code in [
        (meta(TxnState.COMPLETE_COMMIT), False, ErrorCode.INVALID_TXN_STATE),
        (meta(TxnState.PREPARE_ABORT), False, ErrorCode.CONCURRENT_TRANSACTIONS),
        (meta(TxnState.EMPTY), True, ErrorCode.INVALID_TXN_STATE),
        (meta(TxnState.ONGOING, epoch=1), True, ErrorCode.PRODUCER_FENCED),
    ]:
        with pytest.raises(TxnError) as raised:
            decide_end_txn(current, commit=commit, **kw)
        assert raised.value.code is code


class TxnMachine(RuleBasedStateMachine):
    """Random request sequences: epochs never go back, Prepare* only follows Ongoing, and
    only Ongoing and Prepare* hold partitions."""

    def __init__(self) -> None:
        super().__init__()
        self.current: TxnMetadata = init(None).metadata  # type: ignore[attr-defined]
        self.highest_epoch = self.current.producer_epoch
        self.now = 10

    def _apply(self, step: object) -> None:
        self.now += 1
        try:
            new = step()  # type: ignore[operator]
        except TxnError:
            return
        if new.state.is_prepare and not self.current.state.is_prepare:
            assert self.current.state is TxnState.ONGOING
        self.current = new

    @rule()
    def init_producer(self) -> None:
        self._apply(lambda: init(self.current).metadata)  # type: ignore[attr-defined]

    @rule(partition=st.integers(0, 3))
    def add(self, partition: int) -> None:
        c = self.current
        self._apply(
            lambda: decide_add_partitions(
                c,
                producer_id=c.producer_id,
                producer_epoch=c.producer_epoch,
                partitions=[("t", partition)],
                now_ms=self.now,
            )
        )

    @rule(commit=st.booleans())
    def end(self, commit: bool) -> None:
        c = self.current
        self._apply(
            lambda: decide_end_txn(
                c,
                producer_id=c.producer_id,
                producer_epoch=c.producer_epoch,
                commit=commit,
                now_ms=self.now,
            )
        )

    @rule()
    def markers_written(self) -> None:
        if self.current.state.is_prepare:
            self._apply(lambda: decide_complete(self.current, self.now))

    @rule()
    def timeout(self) -> None:
        if self.current.state is TxnState.ONGOING:
            self._apply(lambda: decide_timeout_abort(self.current, self.now))

    @invariant()
    def epochs_only_grow(self) -> None:
        assert self.current.producer_epoch >= self.highest_epoch
        self.highest_epoch = self.current.producer_epoch

    @invariant()
    def partitions_only_while_open(self) -> None:
        if self.current.state in (
            TxnState.EMPTY,
            TxnState.COMPLETE_COMMIT,
            TxnState.COMPLETE_ABORT,
        ):
            assert self.current.partitions == frozenset()
        else:
            assert self.current.partitions


TestTxnMachine = TxnMachine.TestCase
