"""The broker's cleaner passes: a log that does not decode is left alone, others cleaned."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.broker.log.cleaner import CLEANER_CHECKPOINT
from mirrorsim.broker.replica.log_cleaner import LogCleaner, PartitionKey
from mirrorsim.protocol.records import Record, build_batch
from mirrorsim.protocol.records.raw_batch import HEADER_SIZE


class Host:
    """The replica manager's part, over logs held in a dict."""

    def __init__(self, logs: dict[PartitionKey, PartitionLog]) -> None:
        self.logs = logs
        self.offline: dict[PartitionKey, OSError] = {}

    def cleanable_logs(self) -> list[tuple[PartitionKey, PartitionLog]]:
        return [(key, log) for key, log in self.logs.items() if log.config.compact]

    def may_clean(self, key: PartitionKey, partition_log: PartitionLog) -> bool:
        return self.logs.get(key) is partition_log

    def take_offline(self, key: PartitionKey, exc: OSError) -> None:
        self.offline[key] = exc
        del self.logs[key]


def compacted(path: Path) -> PartitionLog:
    config = LogConfig(cleanup_policy="compact", segment_bytes=300, min_cleanable_dirty_ratio=0.0)
    log = PartitionLog.open(path, config)
    for i in range(12):
        batch = build_batch([Record(0, 1_000, b"k%d" % (i % 3), b"value-%d" % i)])
        log.append_as_leader([batch], leader_epoch=0)
        log.update_high_watermark(log.log_end_offset)
    return log


def corrupt_first_record(log: PartitionLog) -> bytes:
    """Overwrite the first batch's records with bytes no varint reader accepts; the
    segment's bytes as they are then."""
    path = log.segments[0].log_path
    data = bytearray(path.read_bytes())
    data[HEADER_SIZE : HEADER_SIZE + 12] = b"\xff" * 12
    path.write_bytes(bytes(data))
    return bytes(data)


def test_a_log_that_does_not_decode_is_uncleanable_and_the_others_are_cleaned(
    tmp_path: Path,
) -> None:
    good, bad = compacted(tmp_path / "good-0"), compacted(tmp_path / "bad-0")
    damaged = corrupt_first_record(bad)
    host = Host({("good", 0): good, ("bad", 0): bad})
    cleaner = LogCleaner(host)

    stats = asyncio.run(cleaner.clean())

    assert [s.segments_cleaned > 0 for s in stats] == [True]
    assert (good.dir / CLEANER_CHECKPOINT).exists()
    assert not (bad.dir / CLEANER_CHECKPOINT).exists()
    assert bad.segments[0].log_path.read_bytes() == damaged
    assert not list(bad.dir.glob("*.cleaned"))
    assert host.offline == {}
    # the next pass does not try it again; a new log in its place is cleaned
    del host.logs[("good", 0)]
    assert asyncio.run(cleaner.clean()) == []
    bad.close()
    host.logs[("bad", 0)] = compacted(tmp_path / "bad-again-0")
    assert len(asyncio.run(cleaner.clean())) == 1


def test_a_pass_cancelled_mid_cleaning_stops_its_worker_and_leaves_the_log_as_it_was(
    tmp_path: Path,
) -> None:
    """A broker stopping cancels the pass: the worker thread stops at its next batch and
    its copies go before the cancellation completes, so no thread writes into a log's
    directory after the broker closed its logs."""
    config = LogConfig(cleanup_policy="compact", segment_bytes=4096, min_cleanable_dirty_ratio=0.0)
    log = PartitionLog.open(tmp_path / "big-0", config)
    for i in range(20_000):
        batch = build_batch([Record(0, 1_000, b"k%d" % (i % 7), b"v%d" % i)])
        log.append_as_leader([batch], leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    files = sorted((p.name, p.stat().st_size) for p in log.dir.iterdir())
    cleaner = LogCleaner(Host({("big", 0): log}))

    async def cancel_mid_cleaning() -> None:
        task = asyncio.ensure_future(cleaner.clean())
        while not list(log.dir.glob("*.cleaned")):
            assert not task.done()
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert sorted((p.name, p.stat().st_size) for p in log.dir.iterdir()) == files

    asyncio.run(cancel_mid_cleaning())
