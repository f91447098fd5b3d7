"""A Produce that the file system refuses (out of descriptors) answers the partition with
KAFKA_STORAGE_ERROR and leaves the log as it was; the next one succeeds."""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.replica_manager import (
    TOPIC,
    FakeClock,
    consumer_fetch,
    fetched_values,
    log_clock,
    records_bytes,
    state,
)

from mirrorsim.broker.log.file_handles import FileHandles
from mirrorsim.broker.log.log_manager import LogManager
from mirrorsim.broker.replica import FetchKey, FetchParams, ReplicaManager
from mirrorsim.protocol.errors import ErrorCode, KafkaError

ROLL_EVERY_BATCH = {"segment.bytes": "100"}


@contextmanager
def no_descriptors_left() -> Iterator[None]:
    """Every descriptor this process may open is taken until the block ends."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 32, hard))
    hog: list[int] = []
    try:
        while True:
            try:
                hog.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                break
        yield
    finally:
        for fd in hog:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


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
