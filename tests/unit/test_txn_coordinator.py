"""TransactionCoordinator over a real metadata store (SQLite file) with a recording
marker sink: markers, retries, restarts that resume Prepare*, timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

import pytest

from mirrorsim.broker.metadata.store import MetadataStore
from mirrorsim.broker.txn.coordinator import TransactionCoordinator, TxnCoordinatorConfig
from mirrorsim.broker.txn.state import TopicPartition, TxnError, TxnState
from mirrorsim.broker.txn.store import TxnStore
from mirrorsim.protocol.errors import ErrorCode


class Cluster:
    def owns(self, transactional_id: str) -> bool:
        return True

    def partition_exists(self, topic: str, partition: int) -> bool:
        return topic != "missing"

    def offsets_partition(self, group_id: str) -> int:
        return 7


class Markers:
    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.calls: list[tuple[int, int, bool, int, frozenset[TopicPartition]]] = []
        self.written = asyncio.Event()

    async def write(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        parts = frozenset(partitions)
        self.calls.append((producer_id, producer_epoch, commit, coordinator_epoch, parts))
        if self.failures:
            self.failures -= 1
            return dict.fromkeys(parts, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self.written.set()
        return dict.fromkeys(parts, ErrorCode.NONE)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> TxnStore:
    metadata = MetadataStore.open(f"sqlite:///{tmp_path / 'metadata.db'}")
    yield TxnStore(metadata)
    metadata.close()


def coordinator(
    store: TxnStore, markers: Markers, clock: Clock, *, hold: bool = False
) -> TransactionCoordinator:
    ids = iter(range(100, 200))
    return TransactionCoordinator(
        store=store,
        cluster=Cluster(),
        markers=markers,
        allocate_producer_id=lambda: next(ids),
        clock_ms=clock,
        config=TxnCoordinatorConfig(
            max_timeout_ms=10_000, cleanup_interval_ms=3_600_000, stop_before_markers=hold
        ),
    )


async def test_commit_writes_markers_then_completes(store: TxnStore) -> None:
    markers, clock = Markers(failures=2), Clock()
    coord = coordinator(store, markers, clock)
    await coord.start()
    try:
        pid, epoch = await coord.init_producer_id("t", 5_000, -1, -1)
        await coord.add_partitions("t", pid, epoch, [("a", 0), ("a", 1)])
        await coord.add_offsets("t", pid, epoch, "g")
        await coord.end_txn("t", pid, epoch, True)
        await asyncio.wait_for(coord.wait_for_completion("t"), 10)
        meta = await coord.describe("t")
        assert (meta.state, meta.partitions) == (TxnState.COMPLETE_COMMIT, frozenset())
        expected = frozenset({("a", 0), ("a", 1), ("__consumer_offsets", 7)})
        assert [c[4] for c in markers.calls] == [expected] * 3  # two failed tries, then done
        assert {c[:4] for c in markers.calls} == {(pid, epoch, True, coord.coordinator_epoch)}
    finally:
        await coord.stop()


async def test_restart_resumes_a_prepared_transaction(store: TxnStore) -> None:
    held, clock = Markers(), Clock()
    first = coordinator(store, held, clock, hold=True)
    await first.start()
    pid, epoch = await first.init_producer_id("t", 5_000, -1, -1)
    await first.add_partitions("t", pid, epoch, [("a", 0)])
    await first.end_txn("t", pid, epoch, False)
    await first.stop()
    assert held.calls == []
    assert (await asyncio.to_thread(store.get, "t")).state is TxnState.PREPARE_ABORT

    markers = Markers()
    second = coordinator(store, markers, clock)
    await second.start()
    try:
        await asyncio.wait_for(second.wait_for_completion("t"), 10)
        assert second.coordinator_epoch == first.coordinator_epoch + 1
        assert markers.calls == [
            (pid, epoch, False, second.coordinator_epoch, frozenset({("a", 0)}))
        ]
        assert (await second.describe("t")).state is TxnState.COMPLETE_ABORT
    finally:
        await second.stop()


async def test_expired_transaction_is_aborted_with_a_bumped_epoch(store: TxnStore) -> None:
    markers, clock = Markers(), Clock()
    coord = coordinator(store, markers, clock)
    await coord.start()
    try:
        pid, epoch = await coord.init_producer_id("t", 500, -1, -1)
        await coord.add_partitions("t", pid, epoch, [("a", 0)])
        clock.now += 501
        await coord.scan()
        await asyncio.wait_for(coord.wait_for_completion("t"), 10)
        assert markers.calls[0][:3] == (pid, epoch + 1, False)
        with pytest.raises(TxnError) as raised:
            await coord.end_txn("t", pid, epoch, True)
        assert raised.value.code is ErrorCode.PRODUCER_FENCED
    finally:
        await coord.stop()


async def test_unknown_partition_adds_nothing(store: TxnStore) -> None:
    coord = coordinator(store, Markers(), Clock())
    await coord.start()
    try:
        pid, epoch = await coord.init_producer_id("t", 5_000, -1, -1)
        results = await coord.add_partitions("t", pid, epoch, [("a", 0), ("missing", 0)])
        assert results == {
            ("a", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
            ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert (await coord.describe("t")).state is TxnState.EMPTY
        with pytest.raises(TxnError) as raised:
            await coord.init_producer_id("t", 20_000, -1, -1)
        assert raised.value.code is ErrorCode.INVALID_TRANSACTION_TIMEOUT
    finally:
        await coord.stop()
