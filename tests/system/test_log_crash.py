"""Crash safety of PartitionLog: SIGKILL mid-stream and hand-made torn tails."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.broker.log.partition_log import CLEAN_SHUTDOWN_FILE
from mirrorsim.protocol.records import Record, build_batch, decode_records, iter_batches

pytestmark = pytest.mark.system

CONFIG = {"segment_bytes": 4_096, "index_interval_bytes": 200, "flush_messages": 1}

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from mirrorsim.broker.log import LogConfig, PartitionLog
    from mirrorsim.protocol.records import Record, build_batch

    log = PartitionLog.open(Path(sys.argv[1]), LogConfig(**{config!r}))
    i = 0
    while True:
        records = [Record(j, 1_000 + i, b"%d" % i, b"payload-%d-%d" % (i, j) * 4) for j in range(3)]
        info = log.append_as_leader([build_batch(records)], leader_epoch=i // 50)
        print(i, info.first_offset, flush=True)
        i += 1
    """
).format(config=CONFIG)


def all_batches(log: PartitionLog) -> list:
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        batches = list(iter_batches(log.read(offset, 1 << 20).records))
        assert batches, f"nothing readable at {offset}"
        out.extend(batches)
        offset = batches[-1].next_offset
    return out


def assert_indexes_agree(log: PartitionLog) -> None:
    for segment in log.segments:
        by_position = {h.position: h for h in segment.headers()}
        for offset, position in segment.offset_index.entries():
            assert by_position[position].last_offset == offset


def test_sigkill_loses_nothing_flushed(tmp_path: Path) -> None:
    path = tmp_path / "crash-0"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reported: dict[int, int] = {}
    try:
        assert proc.stdout is not None
        while len(reported) < 300:
            line = proc.stdout.readline()
            assert line, f"writer died: {proc.stderr.read() if proc.stderr else ''}"
            i, offset = map(int, line.split())
            reported[i] = offset
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()

    log = PartitionLog.open(path, LogConfig(**CONFIG))
    try:
        batches = all_batches(log)
        assert all(b.is_valid() for b in batches)
        by_offset = {b.base_offset: b for b in batches}
        for i, offset in reported.items():
            records = decode_records(by_offset[offset])
            assert [r.key for r in records] == [b"%d" % i] * 3
            assert by_offset[offset].partition_leader_epoch == i // 50
        assert len(log.segments) > 3
        assert log.log_end_offset == batches[-1].next_offset
        assert_indexes_agree(log)
        assert log.end_offset_for_epoch(0) == (0, 150)
    finally:
        log.close()


def make_log(path: Path, batches: int) -> list[bytes]:
    log = PartitionLog.open(path, LogConfig(segment_bytes=1_000))
    for i in range(batches):
        log.append_as_leader([build_batch([Record(0, i, b"k", b"v" * 40)])], leader_epoch=0)
    data = [b.data for b in all_batches(log)]
    log.close()
    (path / CLEAN_SHUTDOWN_FILE).unlink()
    return data


def test_torn_tail_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "torn-0"
    data = make_log(path, 30)
    active = sorted(path.glob("*.log"))[-1]
    intact = active.stat().st_size
    with open(active, "ab") as f:
        f.write(data[0][:40])
    log = PartitionLog.open(path, LogConfig(segment_bytes=1_000))
    assert active.stat().st_size == intact
    assert [b.data for b in all_batches(log)] == data
    log.append_as_leader([build_batch([Record(0, 99, b"k", b"v")])], leader_epoch=1)
    assert log.log_end_offset == 31
    log.close()


def test_corrupt_batch_cuts_the_log_there(tmp_path: Path) -> None:
    path = tmp_path / "corrupt-0"
    data = make_log(path, 30)
    (path / "recovery-point-offset-checkpoint").write_text("0\n1\n0\n")
    segments = sorted(path.glob("*.log"))
    victim = segments[1]
    base = int(victim.name[:20])
    with open(victim, "r+b") as f:
        f.seek(len(data[0]) + 70)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    log = PartitionLog.open(path, LogConfig(segment_bytes=1_000))
    assert log.log_end_offset == base + 1
    assert [b.data for b in all_batches(log)] == data[: base + 1]
    assert len(log.segments) == 2
    assert_indexes_agree(log)
    log.close()


def test_insane_length_is_treated_as_torn(tmp_path: Path) -> None:
    path = tmp_path / "length-0"
    data = make_log(path, 5)
    active = sorted(path.glob("*.log"))[-1]
    with open(active, "ab") as f:
        f.write(struct.pack(">qi", 5, 2**31 - 1) + b"\x00" * 60)
    log = PartitionLog.open(path, LogConfig(segment_bytes=1_000))
    assert [b.data for b in all_batches(log)] == data
    log.close()
