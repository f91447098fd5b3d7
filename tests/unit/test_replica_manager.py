"""ReplicaManager over real partition logs: produce checks, fetch limits, long polls, offsets."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers.replica_manager import (
    NOW_MS,
    TOPIC,
    FakeClock,
    consumer_fetch,
    fetched_values,
    log_clock,
    records_bytes,
    state,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorsim.broker.log.log_manager import LogManager
from mirrorsim.broker.log.results import AppendOrigin
from mirrorsim.broker.replica import (
    FetchKey,
    FetchParams,
    PartitionRead,
    PartitionState,
    ReplicaManager,
)
from mirrorsim.broker.replica.follower_fetcher import FetcherConfig, ReplicaFetcherManager
from mirrorsim.client.config import ClientConfig
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    iter_batches,
)


@pytest.fixture
async def manager(tmp_path: Path) -> AsyncIterator[ReplicaManager]:
    log_manager = LogManager(tmp_path, clock=log_clock)
    rm = ReplicaManager(broker_id=1, log_manager=log_manager, clock=FakeClock())
    await rm.start()
    await rm.apply_partition_state(state(0))
    await rm.apply_partition_state(state(1))
    yield rm
    await rm.stop()
    log_manager.close()


async def produce(rm: ReplicaManager, values: list[bytes], partition: int = 0, **kw: int) -> int:
    result = await rm.append_records(
        TOPIC, partition, records_bytes(values, **kw), required_acks=-1, timeout_ms=1000
    )
    return result.base_offset


async def test_produce_assigns_offsets_and_advances_high_watermark(
    manager: ReplicaManager,
) -> None:
    assert await produce(manager, [b"a", b"b"]) == 0
    assert await produce(manager, [b"c"]) == 2
    partition = manager.partition(TOPIC, 0)
    assert partition.high_watermark == 3
    outcomes = await manager.fetch(FetchParams(), {FetchKey(TOPIC, 0): consumer_fetch(1)})
    assert fetched_values(outcomes[FetchKey(TOPIC, 0)], 1) == [b"b", b"c"]


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda data: data[:16] + b"\x01" + data[17:], ErrorCode.INVALID_RECORD),
        (lambda data: data + data, ErrorCode.INVALID_RECORD),
        (lambda data: data[:-3], ErrorCode.CORRUPT_MESSAGE),
        (lambda data: data[:-1] + bytes([data[-1] ^ 0xFF]), ErrorCode.CORRUPT_MESSAGE),
        (lambda data: (5).to_bytes(8, "big") + data[8:], ErrorCode.INVALID_RECORD),
    ],
    ids=["magic-1", "two-batches", "truncated", "bad-crc", "nonzero-base-offset"],
)
async def test_invalid_batches_are_refused(
    manager: ReplicaManager, mutate: Callable[[bytes], bytes], code: ErrorCode
) -> None:
    data = mutate(records_bytes([b"x"]))
    with pytest.raises(KafkaError) as err:
        await manager.append_records(TOPIC, 0, data, required_acks=1, timeout_ms=1000)
    assert err.value.code == code
    assert manager.partition(TOPIC, 0).log_end_offset == 0


async def test_message_too_large_and_timestamp_bounds(manager: ReplicaManager) -> None:
    await manager.apply_partition_state(
        state(
            0,
            configs={"max.message.bytes": "200", "message.timestamp.before.max.ms": "60000"},
        )
    )
    with pytest.raises(KafkaError) as err:
        await produce(manager, [b"x" * 500])
    assert err.value.code == ErrorCode.MESSAGE_TOO_LARGE
    with pytest.raises(KafkaError) as err:
        await produce(manager, [b"old"], timestamp=NOW_MS - 120_000)
    assert err.value.code == ErrorCode.INVALID_TIMESTAMP
    assert await produce(manager, [b"fresh"], timestamp=NOW_MS - 1_000) == 0


async def test_log_append_time_is_reported(manager: ReplicaManager) -> None:
    await manager.apply_partition_state(
        state(0, configs={"message.timestamp.type": "LogAppendTime"})
    )
    result = await manager.append_records(
        TOPIC, 0, records_bytes([b"a"], timestamp=5), required_acks=1, timeout_ms=1000
    )
    assert result.log_append_time_ms == NOW_MS


async def test_read_only_mirror_topic_refuses_produce_until_removed_and_stopped(
    manager: ReplicaManager,
) -> None:
    await manager.apply_partition_state(state(0, configs={"mirror.name": "dr"}))
    with pytest.raises(KafkaError) as err:
        await produce(manager, [b"a"])
    assert err.value.code == ErrorCode.READ_ONLY_TOPIC
    await manager.apply_partition_state(state(0, configs={"mirror.name": "dr.paused"}))
    with pytest.raises(KafkaError):
        await produce(manager, [b"a"])
    await manager.apply_partition_state(state(0, configs={"mirror.name": "dr.removed"}))
    with pytest.raises(KafkaError) as err:
        await produce(manager, [b"a"])
    assert err.value.code == ErrorCode.READ_ONLY_TOPIC, "removed, but not STOPPED yet"
    manager.open_stopped_mirror_partition(TOPIC, 0)
    assert await produce(manager, [b"a"]) == 0
    await manager.apply_partition_state(state(0, configs={"mirror.name": "dr"}))
    with pytest.raises(KafkaError) as err:
        await produce(manager, [b"a"])
    assert err.value.code == ErrorCode.READ_ONLY_TOPIC, "added again: the config closes it"
    await manager.apply_partition_state(state(0, configs={}))
    assert await produce(manager, [b"a"]) == 1, "not a mirror topic any more"


async def test_idempotent_producer_duplicates_and_gaps(manager: ReplicaManager) -> None:
    pid = 4242
    assert (
        await produce(manager, [b"a", b"b"], producer_id=pid, producer_epoch=0, base_sequence=0)
        == 0
    )
    assert await produce(manager, [b"c"], producer_id=pid, producer_epoch=0, base_sequence=2) == 2
    duplicate = await produce(
        manager, [b"a", b"b"], producer_id=pid, producer_epoch=0, base_sequence=0
    )
    assert duplicate == 0, "a retried batch answers with its original base offset"
    assert manager.partition(TOPIC, 0).log_end_offset == 3
    with pytest.raises(KafkaError) as err:
        await produce(manager, [b"d"], producer_id=pid, producer_epoch=0, base_sequence=7)
    assert err.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert await produce(manager, [b"e"], producer_id=pid, producer_epoch=1, base_sequence=0) == 3
    with pytest.raises(KafkaError) as err:
        await produce(manager, [b"f"], producer_id=pid, producer_epoch=0, base_sequence=3)
    assert err.value.code == ErrorCode.INVALID_PRODUCER_EPOCH


async def test_invalid_acks_and_unknown_partition(manager: ReplicaManager) -> None:
    with pytest.raises(KafkaError) as err:
        await manager.append_records(TOPIC, 0, records_bytes([b"a"]), required_acks=2, timeout_ms=1)
    assert err.value.code == ErrorCode.INVALID_REQUIRED_ACKS
    with pytest.raises(KafkaError) as err:
        await manager.append_records(TOPIC, 9, records_bytes([b"a"]), required_acks=1, timeout_ms=1)
    assert err.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_fetch_epoch_fencing_and_offset_range(manager: ReplicaManager) -> None:
    await manager.apply_partition_state(state(0, epoch=3))
    await produce(manager, [b"a"])
    key = FetchKey(TOPIC, 0)
    cases = {
        2: ErrorCode.FENCED_LEADER_EPOCH,
        4: ErrorCode.UNKNOWN_LEADER_EPOCH,
    }
    for epoch, code in cases.items():
        outcome = (
            await manager.fetch(FetchParams(), {key: consumer_fetch(0, current_leader_epoch=epoch)})
        )[key]
        assert isinstance(outcome, KafkaError) and outcome.code == code
    outcome = (await manager.fetch(FetchParams(), {key: consumer_fetch(5)}))[key]
    assert isinstance(outcome, KafkaError) and outcome.code == ErrorCode.OFFSET_OUT_OF_RANGE
    outcome = (
        await manager.fetch(FetchParams(), {key: consumer_fetch(1, current_leader_epoch=3)})
    )[key]
    assert isinstance(outcome, PartitionRead) and outcome.records == b""


async def test_diverging_epoch_is_reported(manager: ReplicaManager) -> None:
    await manager.apply_partition_state(state(0, epoch=1))
    await produce(manager, [b"a", b"b"])
    await manager.apply_partition_state(state(0, epoch=3))
    await produce(manager, [b"c"])
    key = FetchKey(TOPIC, 0)
    # The fetcher believes epoch 2 reached offset 3; here epoch 1 ended at 2.
    outcome = (await manager.fetch(FetchParams(), {key: consumer_fetch(3, last_fetched_epoch=2)}))[
        key
    ]
    assert isinstance(outcome, PartitionRead)
    assert outcome.diverging_epoch == (1, 2)
    outcome = (await manager.fetch(FetchParams(), {key: consumer_fetch(2, last_fetched_epoch=1)}))[
        key
    ]
    assert isinstance(outcome, PartitionRead) and outcome.diverging_epoch is None


async def test_fetch_max_bytes_first_batch_rule(manager: ReplicaManager) -> None:
    for _ in range(3):
        await produce(manager, [b"x" * 100], partition=0)
        await produce(manager, [b"y" * 100], partition=1)
    k0, k1 = FetchKey(TOPIC, 0), FetchKey(TOPIC, 1)
    outcomes = await manager.fetch(
        FetchParams(max_bytes=10), {k0: consumer_fetch(0, 10), k1: consumer_fetch(0, 10)}
    )
    assert fetched_values(outcomes[k0]) == [b"x" * 100], "the first batch is returned whole"
    assert fetched_values(outcomes[k1]) == [], "later partitions must fit in what is left"
    batch_size = len(records_bytes([b"x" * 100]))
    outcomes = await manager.fetch(
        FetchParams(max_bytes=3 * batch_size),
        {k0: consumer_fetch(0, 2 * batch_size), k1: consumer_fetch(0, 2 * batch_size)},
    )
    assert len(fetched_values(outcomes[k0])) == 2
    assert len(fetched_values(outcomes[k1])) == 1


async def test_long_poll_wakes_on_append(manager: ReplicaManager, wait_for: Any) -> None:
    key = FetchKey(TOPIC, 0)
    fetch = asyncio.create_task(
        manager.fetch(FetchParams(max_wait_ms=30_000, min_bytes=1), {key: consumer_fetch(0)})
    )
    await wait_for(
        lambda: manager.delayed_operation_count(TOPIC, 0) == 1, message="a parked request"
    )
    assert not fetch.done()
    await produce(manager, [b"late"])
    outcomes = await asyncio.wait_for(fetch, 5)
    assert fetched_values(outcomes[key]) == [b"late"]


async def test_long_poll_times_out_empty(manager: ReplicaManager) -> None:
    key = FetchKey(TOPIC, 0)
    outcomes = await manager.fetch(
        FetchParams(max_wait_ms=20, min_bytes=1), {key: consumer_fetch(0)}
    )
    assert fetched_values(outcomes[key]) == []


async def test_an_idle_long_poll_reads_its_partitions_at_its_start_and_its_expiry(
    manager: ReplicaManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka reads a delayed fetch's partitions when it arrives and when it expires; an
    idle broker with many partitions in fetch sessions spends its time on these reads."""
    reads: list[int] = []
    partition_class = type(manager.partition(TOPIC, 0))
    real_read = partition_class.read

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        reads.append(1)
        return real_read(self, *args, **kwargs)

    monkeypatch.setattr(partition_class, "read", counted)
    key = FetchKey(TOPIC, 0)
    await manager.fetch(FetchParams(max_wait_ms=20, min_bytes=1), {key: consumer_fetch(0)})
    assert len(reads) == 2


async def test_acks_all_waits_for_the_isr(manager: ReplicaManager, wait_for: Any) -> None:
    await manager.apply_partition_state(state(0, replicas=(1, 2), isr=(1, 2)))
    append = asyncio.create_task(produce(manager, [b"a"]))
    await wait_for(
        lambda: manager.delayed_operation_count(TOPIC, 0) == 1, message="a parked request"
    )
    assert manager.partition(TOPIC, 0).high_watermark == 0
    follower = FetchParams(replica_id=2)
    await manager.fetch(follower, {FetchKey(TOPIC, 0): consumer_fetch(0)})
    assert not append.done()
    await manager.fetch(follower, {FetchKey(TOPIC, 0): consumer_fetch(1)})
    assert await asyncio.wait_for(append, 5) == 0
    assert manager.partition(TOPIC, 0).high_watermark == 1


async def test_a_follower_asked_into_the_isr_holds_acks_all_until_it_has_the_append(
    manager: ReplicaManager, wait_for: Any
) -> None:
    """The controller counts a follower in the ISR, and may elect it, once it writes the
    leader's expansion, before the leader reads the change back. An append acknowledged
    by the leader alone in that window was lost when the follower, elected without it,
    made the old leader truncate (Kafka's maximal ISR keeps the follower counted)."""
    await manager.apply_partition_state(state(0, replicas=(1, 2), isr=(1,)))
    written = asyncio.Event()
    read_back = asyncio.Event()

    async def controller_writes_then_leader_reads_back(
        current: PartitionState, new_isr: tuple[int, ...], _epochs: Mapping[int, int]
    ) -> None:
        written.set()
        await read_back.wait()
        await manager.apply_partition_state(dataclasses.replace(current, isr=new_isr))

    fetchers = ReplicaFetcherManager(
        broker_id=1,
        replica_manager=manager,
        endpoint=lambda _broker: None,
        config=FetcherConfig(),
        security=ClientConfig(),
    )
    manager.enable_replication(fetchers, controller_writes_then_leader_reads_back)
    follower = FetchParams(replica_id=2)
    await manager.fetch(follower, {FetchKey(TOPIC, 0): consumer_fetch(0)})
    await asyncio.wait_for(written.wait(), 5)
    append = asyncio.create_task(produce(manager, [b"a"]))
    await wait_for(
        lambda: manager.delayed_operation_count(TOPIC, 0) == 1, message="a parked request"
    )
    assert manager.partition(TOPIC, 0).high_watermark == 0
    read_back.set()
    await wait_for(lambda: manager.partition(TOPIC, 0).state.isr == (1, 2), message="ISR 1, 2")
    assert not append.done()
    await manager.fetch(follower, {FetchKey(TOPIC, 0): consumer_fetch(1)})
    assert await asyncio.wait_for(append, 5) == 0


async def test_acks_all_with_too_small_isr(manager: ReplicaManager) -> None:
    await manager.apply_partition_state(
        state(0, replicas=(1, 2), isr=(1,), configs={"min.insync.replicas": "2"})
    )
    with pytest.raises(KafkaError) as err:
        await produce(manager, [b"a"])
    assert err.value.code == ErrorCode.NOT_ENOUGH_REPLICAS


async def test_follower_role_refuses_produce_and_consumer_fetch(manager: ReplicaManager) -> None:
    await manager.apply_partition_state(state(0, leader=2, epoch=1, replicas=(1, 2)))
    with pytest.raises(KafkaError) as err:
        await produce(manager, [b"a"])
    assert err.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_list_offsets(manager: ReplicaManager) -> None:
    await manager.apply_partition_state(state(0, epoch=2))
    await produce(manager, [b"a"], timestamp=NOW_MS - 3000)
    await produce(manager, [b"b"], timestamp=NOW_MS - 1000)
    await produce(manager, [b"c"], timestamp=NOW_MS - 2000)
    earliest = manager.list_offset(TOPIC, 0, -2)
    assert (earliest.offset, earliest.leader_epoch) == (0, 2)
    latest = manager.list_offset(TOPIC, 0, -1)
    assert (latest.offset, latest.timestamp, latest.leader_epoch) == (3, -1, 2)
    largest = manager.list_offset(TOPIC, 0, -3)
    assert (largest.offset, largest.timestamp) == (1, NOW_MS - 1000)
    by_time = manager.list_offset(TOPIC, 0, NOW_MS - 2500)
    assert (by_time.offset, by_time.timestamp) == (1, NOW_MS - 1000)
    assert manager.list_offset(TOPIC, 0, NOW_MS).offset == -1


async def test_offset_for_leader_epoch_and_delete_records(manager: ReplicaManager) -> None:
    await manager.apply_partition_state(state(0, epoch=1))
    await produce(manager, [b"a", b"b"])
    await manager.apply_partition_state(state(0, epoch=2))
    await produce(manager, [b"c"])
    assert manager.last_offset_for_leader_epoch(TOPIC, 0, 1) == (1, 2)
    assert manager.last_offset_for_leader_epoch(TOPIC, 0, 2) == (2, 3)
    with pytest.raises(KafkaError) as err:
        manager.last_offset_for_leader_epoch(TOPIC, 0, 1, current_leader_epoch=1)
    assert err.value.code == ErrorCode.FENCED_LEADER_EPOCH
    assert manager.delete_records(TOPIC, 0, 2) == 2
    with pytest.raises(KafkaError) as err:
        manager.delete_records(TOPIC, 0, 10)
    assert err.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert manager.delete_records(TOPIC, 0, -1) == 3
    assert manager.list_offset(TOPIC, 0, -2).offset == 3


async def test_read_committed_stops_at_lso_and_lists_aborted_transactions(
    manager: ReplicaManager,
) -> None:
    pid = 9
    batch = build_batch(
        [Record(0, NOW_MS, None, b"t0"), Record(1, NOW_MS, None, b"t1")],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    await manager.append_records(TOPIC, 0, batch.data, required_acks=1, timeout_ms=1000)
    key = FetchKey(TOPIC, 0)
    committed = FetchParams(isolation_level=1)
    read = (await manager.fetch(committed, {key: consumer_fetch(0)}))[key]
    assert isinstance(read, PartitionRead)
    assert (read.records, read.high_watermark, read.last_stable_offset) == (b"", 2, 0)
    assert read.aborted_transactions == ()
    assert manager.list_offset(TOPIC, 0, -1, isolation_level=1).offset == 0
    assert manager.list_offset(TOPIC, 0, -1, isolation_level=0).offset == 2

    partition = manager.partition(TOPIC, 0)
    marker = build_control_batch(
        ControlRecordType.ABORT, producer_id=pid, producer_epoch=0, timestamp=NOW_MS
    )
    partition.log.append_as_leader([marker], 0, origin=AppendOrigin.COORDINATOR)
    partition.maybe_increment_high_watermark()
    read = (await manager.fetch(committed, {key: consumer_fetch(0)}))[key]
    assert isinstance(read, PartitionRead)
    assert read.last_stable_offset == 3
    assert read.aborted_transactions == ((pid, 0),)
    assert [b.is_control for b in iter_batches(read.records)] == [False, True]


async def test_producer_ids_are_unique_across_restarts(tmp_path: Path) -> None:
    from mirrorsim.broker.replica.producer_ids import ProducerIdAllocator

    first = ProducerIdAllocator(tmp_path, broker_id=3)
    issued = {first.allocate() for _ in range(5)}
    second = ProducerIdAllocator(tmp_path, broker_id=3)
    again = {second.allocate() for _ in range(5)}
    other_broker = {ProducerIdAllocator(tmp_path / "b", broker_id=4).allocate() for _ in range(5)}
    assert len(issued | again | other_broker) == 15


@settings(max_examples=30, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 300), min_size=1, max_size=8),
    max_bytes=st.integers(1, 3000),
    start=st.integers(0, 7),
)
def test_fetch_never_exceeds_max_bytes_except_for_one_first_batch(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], max_bytes: int, start: int
) -> None:
    async def scenario() -> None:
        log_manager = LogManager(tmp_path_factory.mktemp("log"), clock=log_clock)
        rm = ReplicaManager(broker_id=1, log_manager=log_manager, clock=FakeClock())
        await rm.apply_partition_state(state(0))
        for size in sizes:
            await produce(rm, [b"v" * size])
        offset = min(start, len(sizes))
        key = FetchKey(TOPIC, 0)
        read = (await rm.fetch(FetchParams(max_bytes=max_bytes), {key: consumer_fetch(offset)}))[
            key
        ]
        assert isinstance(read, PartitionRead)
        batches = list(iter_batches(read.records))
        assert sum(b.size for b in batches) == len(read.records)
        if len(batches) > 1:
            assert len(read.records) <= max_bytes
        if offset < len(sizes):
            assert batches and batches[0].base_offset == offset
        log_manager.close()

    asyncio.run(scenario())
