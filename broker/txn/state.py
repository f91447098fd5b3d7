"""Transaction states and the coordinator's decisions, as pure functions of the metadata.

Theory of operation (Kafka's ``TransactionCoordinator``). A transactional id owns one
producer id and epoch. InitProducerId bumps the epoch, which fences every older instance
of the producer. AddPartitionsToTxn / AddOffsetsToTxn move the transaction to Ongoing and
record the partitions that will need a marker. EndTxn moves it to PrepareCommit or
PrepareAbort; once that is durable the client is answered, and the coordinator writes a
COMMIT/ABORT marker to every partition, then moves to CompleteCommit/CompleteAbort. While
a Prepare* state waits for its markers every request for the id answers
CONCURRENT_TRANSACTIONS (clients retry). A transaction Ongoing for longer than its
timeout is aborted by the coordinator with the epoch bumped, so the late producer is
fenced.

Each decision returns the next metadata (or raises ``TxnError``); the coordinator
persists it. The allowed predecessor of each state is data (``VALID_PREVIOUS``);
anything else raises ``IllegalTxnTransition``.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mirrorsim.protocol.errors import ErrorCode, KafkaError

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 2**15 - 1
GROUP_OFFSETS_TOPIC = "__consumer_offsets"
"""AddOffsetsToTxn adds the group's offsets partition, so its marker reaches the group."""


class TxnState(enum.Enum):
    """Values are Kafka's names, as ListTransactions and DescribeTransactions print them."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"

    @property
    def is_prepare(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)


_S = TxnState
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
}


class IllegalTxnTransition(Exception):
    def __init__(self, transactional_id: str, source: TxnState, target: TxnState) -> None:
        super().__init__(f"transaction {transactional_id!r} cannot go from {source} to {target}")
        self.source = source
        self.target = target


class TxnError(KafkaError):
    """A request the transaction's current metadata refuses."""


TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[TopicPartition] = frozenset()
    txn_start_ms: int = -1
    last_update_ms: int = -1
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH

    def transition(self, target: TxnState, now_ms: int, **changes: object) -> TxnMetadata:
        if self.state not in VALID_PREVIOUS[target]:
            raise IllegalTxnTransition(self.transactional_id, self.state, target)
        return dataclasses.replace(self, state=target, last_update_ms=now_ms, **changes)  # type: ignore[arg-type]

    def has_expired(self, now_ms: int) -> bool:
        return self.state is TxnState.ONGOING and now_ms > self.txn_start_ms + self.timeout_ms


@dataclass(frozen=True, slots=True)
class InitDecision:
    """What InitProducerId persists, and either the (id, epoch) to answer or an error."""

    metadata: TxnMetadata
    error: ErrorCode = ErrorCode.NONE


def _bumped(current: TxnMetadata, new_producer_id: Callable[[], int]) -> TxnMetadata:
    """The next epoch, or a fresh producer id at epoch 0 when the epoch is exhausted."""
    if current.producer_epoch >= MAX_PRODUCER_EPOCH - 1:
        return dataclasses.replace(
            current,
            producer_id=new_producer_id(),
            producer_epoch=0,
            last_producer_id=current.producer_id,
            last_producer_epoch=current.producer_epoch,
        )
    return dataclasses.replace(
        current,
        producer_epoch=current.producer_epoch + 1,
        last_producer_id=current.producer_id,
        last_producer_epoch=current.producer_epoch,
    )


def _fenced(current: TxnMetadata) -> TxnMetadata:
    """The epoch an abort by the coordinator writes its markers with: one above the
    producer's, so the producer is fenced (kept when exhausted, as Kafka does)."""
    if current.producer_epoch >= MAX_PRODUCER_EPOCH - 1:
        return current
    return dataclasses.replace(
        current,
        producer_epoch=current.producer_epoch + 1,
        last_producer_epoch=current.producer_epoch,
    )


def decide_init_producer_id(
    current: TxnMetadata | None,
    *,
    transactional_id: str,
    timeout_ms: int,
    expected_producer_id: int,
    expected_epoch: int,
    now_ms: int,
    new_producer_id: Callable[[], int],
) -> InitDecision:
    """Kafka's ``handleInitProducerId`` for a transactional id (timeout already checked).

    An Ongoing transaction of the previous instance is aborted with a bumped epoch
    (which fences that instance) and the caller gets CONCURRENT_TRANSACTIONS: it retries
    and gets the next epoch once the abort markers are written.
    """
    if current is None:
        return InitDecision(
            TxnMetadata(
                transactional_id,
                new_producer_id(),
                0,
                timeout_ms,
                last_update_ms=now_ms,
            )
        )
    if expected_producer_id != NO_PRODUCER_ID and not _is_known_instance(
        current, expected_producer_id, expected_epoch
    ):
        raise TxnError(ErrorCode.PRODUCER_FENCED)
    if current.state.is_prepare:
        return InitDecision(current, ErrorCode.CONCURRENT_TRANSACTIONS)
    if current.state is TxnState.ONGOING:
        aborting = _fenced(current).transition(TxnState.PREPARE_ABORT, now_ms)
        return InitDecision(aborting, ErrorCode.CONCURRENT_TRANSACTIONS)
    bumped = _bumped(current, new_producer_id)
    return InitDecision(
        bumped.transition(
            TxnState.EMPTY,
            now_ms,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            txn_start_ms=-1,
        )
    )


def _is_known_instance(current: TxnMetadata, producer_id: int, epoch: int) -> bool:
    """KIP-360: a producer re-initializing with the id and epoch it last had."""
    if producer_id == current.producer_id:
        return epoch in (current.producer_epoch, current.last_producer_epoch)
    return producer_id == current.last_producer_id and epoch == current.last_producer_epoch


def check_producer(
    current: TxnMetadata | None, producer_id: int, producer_epoch: int
) -> TxnMetadata:
    """The checks every request after InitProducerId makes, in Kafka's order."""
    if current is None or current.producer_id != producer_id:
        raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    if current.producer_epoch != producer_epoch:
        raise TxnError(ErrorCode.PRODUCER_FENCED)
    if current.state.is_prepare:
        raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
    return current


def decide_add_partitions(
    current: TxnMetadata | None,
    *,
    producer_id: int,
    producer_epoch: int,
    partitions: Iterable[TopicPartition],
    now_ms: int,
) -> TxnMetadata:
    checked = check_producer(current, producer_id, producer_epoch)
    added = frozenset(partitions)
    if checked.state is TxnState.ONGOING and added <= checked.partitions:
        return checked
    start_ms = checked.txn_start_ms if checked.state is TxnState.ONGOING else now_ms
    base = checked.partitions if checked.state is TxnState.ONGOING else frozenset()
    return checked.transition(
        TxnState.ONGOING, now_ms, partitions=base | added, txn_start_ms=start_ms
    )


def decide_end_txn(
    current: TxnMetadata | None,
    *,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    now_ms: int,
) -> TxnMetadata:
    """Ongoing → Prepare*; a retried EndTxn of a completed or preparing transaction is
    answered as Kafka does (NONE, or CONCURRENT_TRANSACTIONS while still preparing)."""
    if current is None or current.producer_id != producer_id:
        raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    if current.producer_epoch != producer_epoch:
        raise TxnError(ErrorCode.PRODUCER_FENCED)
    wanted_prepare = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
    wanted_complete = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
    if current.state is TxnState.ONGOING:
        return current.transition(wanted_prepare, now_ms)
    if current.state is wanted_complete:
        return current
    if current.state is wanted_prepare:
        raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
    raise TxnError(
        ErrorCode.INVALID_TXN_STATE,
        f"EndTxn({'commit' if commit else 'abort'}) of a transaction in state "
        f"{current.state.value}",
    )


def decide_complete(current: TxnMetadata, now_ms: int) -> TxnMetadata:
    """Every marker is written: Prepare* → Complete*, with no partitions left."""
    target = (
        TxnState.COMPLETE_COMMIT
        if current.state is TxnState.PREPARE_COMMIT
        else TxnState.COMPLETE_ABORT
    )
    return current.transition(target, now_ms, partitions=frozenset())


def decide_timeout_abort(current: TxnMetadata, now_ms: int) -> TxnMetadata:
    """An expired Ongoing transaction is aborted under a bumped epoch (fencing its producer)."""
    return _fenced(current).transition(TxnState.PREPARE_ABORT, now_ms)
