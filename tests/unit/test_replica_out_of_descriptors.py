"""A Produce that the file system refuses (out of descriptors) answers the partition with
KAFKA_STORAGE_ERROR and leaves the log as it was; the next one succeeds."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.descriptors import no_descriptors_left
from helpers.replica_manager import (
    TOPIC,
    FakeClock,
    consumer_fetch,
    fetched_values,
    log_clock,
    records_bytes,
    state,
)

from mirrorsim.broker.log.epoch_cache import CHECKPOINT_NAME, LeaderEpochFileCache
from mirrorsim.broker.log.file_handles import FileHandles
from mirrorsim.broker.log.log_manager import LogManager
from mirrorsim.broker.replica import FetchKey, FetchParams, ReplicaManager
from mirrorsim.protocol.errors import ErrorCode, KafkaError

ROLL_EVERY_BATCH = {"segment.bytes": "100"}


async def test_an_append_out_of_descriptors_answers_storage_error(tmp_path: Path) -> None:
    log_manager = LogManager(tmp_path, clock=log_clock, handles=FileHandles(64))
    rm = ReplicaManager(broker_id=1, log_manager=log_manager, clock=FakeClock())
    await rm.start()
    try:
        await rm.apply_partition_state(state(0, configs=ROLL_EVERY_BATCH))
        first = await rm.append_records(
            TOPIC, 0, records_bytes([b"kept"]), required_acks=1, timeout_ms=1000
        )
        with no_descriptors_left(), pytest.raises(KafkaError) as refused:
            await rm.append_records(
                TOPIC, 0, records_bytes([b"refused"]), required_acks=1, timeout_ms=1000
            )
        assert refused.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        second = await rm.append_records(
            TOPIC, 0, records_bytes([b"after"]), required_acks=1, timeout_ms=1000
        )
        assert (first.base_offset, second.base_offset) == (0, 1)
        values = []
        for offset in (0, 1):
            fetch = {FetchKey(TOPIC, 0): consumer_fetch(offset)}
            values += fetched_values((await rm.fetch(FetchParams(), fetch))[FetchKey(TOPIC, 0)])
        assert values == [b"kept", b"after"]
    finally:
        await rm.stop()
        log_manager.close()


async def test_a_leader_change_out_of_descriptors_takes_the_partition_offline(
    tmp_path: Path,
) -> None:
    """A new leader epoch is written to the epoch checkpoint: when that write fails the
    partition answers KAFKA_STORAGE_ERROR (the broker's refresh, even during a controlled
    shutdown, goes on), and the next refresh brings it back at the new epoch."""
    log_manager = LogManager(tmp_path, clock=log_clock, handles=FileHandles(64))
    rm = ReplicaManager(broker_id=1, log_manager=log_manager, clock=FakeClock())
    await rm.start()
    try:
        await rm.apply_partition_state(state(0, epoch=0))
        await rm.append_records(TOPIC, 0, records_bytes([b"e0"]), required_acks=1, timeout_ms=1000)
        with no_descriptors_left():
            await rm.apply_partition_state(state(0, epoch=1))
        assert set(rm.offline_partitions()) == {(TOPIC, 0)}
        with pytest.raises(KafkaError) as refused:
            await rm.append_records(
                TOPIC, 0, records_bytes([b"refused"]), required_acks=1, timeout_ms=1000
            )
        assert refused.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        await rm.apply_partition_state(state(0, epoch=1))
        assert rm.offline_partitions() == {}
        after = await rm.append_records(
            TOPIC, 0, records_bytes([b"e1"]), required_acks=1, timeout_ms=1000
        )
        assert after.base_offset == 1
        log = rm.partition(TOPIC, 0).log
        log.flush()
        durable = LeaderEpochFileCache.load(log.dir / CHECKPOINT_NAME).epoch_entries
        assert [(e.epoch, e.start_offset) for e in durable] == [(0, 0), (1, 1)]
    finally:
        await rm.stop()
        log_manager.close()
