"""Partition log throughput: raw-batch appends and reads against plain file I/O.

Run: .venv/bin/python -m mirrorsim.bench.bench_log [--megabytes 128] [--batch-bytes 16384]

The baseline writes (and reads) the very same bytes with plain buffered file calls in the
same run, so the ratios say what the log's own bookkeeping costs on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.protocol.records import RawBatch, Record, build_batch

RESULTS = Path(__file__).parent / "results"
READ_BYTES = 1 << 20
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")


def make_batches(total_bytes: int, batch_bytes: int) -> list[RawBatch]:
    record_value = os.urandom(1_000)
    per_batch = max(1, batch_bytes // 1_010)
    template = build_batch(
        [Record(i, 1_700_000_000_000 + i, None, record_value) for i in range(per_batch)]
    )
    count = max(1, total_bytes // template.size)
    return [template] * count


def baseline_write(path: Path, batches: list[RawBatch]) -> float:
    start = time.perf_counter()
    with open(path, "wb") as f:
        for batch in batches:
            f.write(batch.data)
    return time.perf_counter() - start


def baseline_read(path: Path) -> float:
    start = time.perf_counter()
    with open(path, "rb") as f:
        while f.read(READ_BYTES):
            pass
    return time.perf_counter() - start


def leader_append(log: PartitionLog, batches: list[RawBatch]) -> float:
    """One batch per call, as a Produce request carries one batch per partition."""
    start = time.perf_counter()
    for batch in batches:
        log.append_as_leader([batch], leader_epoch=1)
    return time.perf_counter() - start


def follower_append(log: PartitionLog, batches: list[RawBatch]) -> float:
    """64 batches per call, as a replica fetch returns about 1 MB at a time."""
    placed: list[RawBatch] = []
    offset = 0
    for batch in batches:
        placed.append(batch.with_offset_and_epoch(offset, 1))
        offset = placed[-1].next_offset
    start = time.perf_counter()
    for i in range(0, len(placed), 64):
        log.append_as_follower(placed[i : i + 64])
    return time.perf_counter() - start


def timed_read(log: PartitionLog, expected_bytes: int) -> float:
    start = time.perf_counter()
    total = log_read(log)
    elapsed = time.perf_counter() - start
    if total != expected_bytes:
        raise AssertionError(f"read {total} bytes, appended {expected_bytes}")
    return elapsed


def log_read(log: PartitionLog) -> int:
    offset, total = 0, 0
    while offset < log.log_end_offset:
        records = log.read(offset, READ_BYTES).records
        total += len(records)
        offset = next_offset_after(records)
    return total


def next_offset_after(records: bytes) -> int:
    """The offset after the last batch, from the headers alone (no copies)."""
    position, next_offset = 0, 0
    while position < len(records):
        base_offset, length = _OFFSET_AND_LENGTH.unpack_from(records, position)
        (last_offset_delta,) = _LAST_OFFSET_DELTA.unpack_from(records, position + 23)
        next_offset = base_offset + last_offset_delta + 1
        position += length + 12
    return next_offset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=128)
    parser.add_argument("--batch-bytes", type=int, default=16_384)
    args = parser.parse_args(argv)
    batches = make_batches(args.megabytes << 20, args.batch_bytes)
    total = sum(b.size for b in batches)
    mb = total / 1e6
    work = Path(tempfile.mkdtemp(prefix="bench-log-"))
    try:
        base_write = baseline_write(work / "plain.bin", batches)
        base_read = baseline_read(work / "plain.bin")
        leader_log = PartitionLog.open(work / "leader-0", LogConfig())
        leader = leader_append(leader_log, batches)
        read = timed_read(leader_log, total)
        follower_log = PartitionLog.open(work / "follower-0", LogConfig())
        follower = follower_append(follower_log, batches)
        leader_log.close()
        follower_log.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "command": " ".join(
            [".venv/bin/python -m mirrorsim.bench.bench_log", *(argv or sys.argv[1:])]
        ),
        "bytes": total,
        "batch_bytes": batches[0].size,
        "batches": len(batches),
        "baseline_write_mb_s": round(mb / base_write, 1),
        "baseline_read_mb_s": round(mb / base_read, 1),
        "leader_append_mb_s": round(mb / leader, 1),
        "follower_append_mb_s": round(mb / follower, 1),
        "read_mb_s": round(mb / read, 1),
        "leader_append_vs_baseline": round(base_write / leader, 3),
        "follower_append_vs_baseline": round(base_write / follower, 3),
        "read_vs_baseline": round(base_read / read, 3),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "log.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "log.md").write_text(render_markdown(result))
    print(render_markdown(result))
    return 0


def render_markdown(result: dict[str, object]) -> str:
    rows = [
        ("plain file write (baseline)", result["baseline_write_mb_s"], 1.0),
        (
            "append_as_leader, 1 batch/call",
            result["leader_append_mb_s"],
            result["leader_append_vs_baseline"],
        ),
        (
            "append_as_follower, 64 batches/call",
            result["follower_append_mb_s"],
            result["follower_append_vs_baseline"],
        ),
        ("plain file read (baseline)", result["baseline_read_mb_s"], 1.0),
        ("read, 1 MiB per call", result["read_mb_s"], result["read_vs_baseline"]),
    ]
    lines = [
        "# Partition log throughput",
        "",
        f"Command: `{result['command']}`",
        "",
        f"{result['batches']} batches of {result['batch_bytes']} bytes ({result['bytes']} bytes).",
        "",
        "| operation | MB/s | vs baseline |",
        "|---|---:|---:|",
        *(f"| {name} | {rate} | {ratio} |" for name, rate, ratio in rows),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
