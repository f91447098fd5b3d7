"""Log compaction: how fast the cleaner cleans, and how long it holds the event loop.

Run: .venv/bin/python -m mirrorsim.bench.bench_cleaner [--megabytes 64] [--keys 1000]

One compacted log of 1 KiB records over ``--keys`` keys (16 records a batch, 8 MiB
segments) is cleaned twice, from the same files:
- by a broker's cleaner pass (``LogCleaner``: plan and swap on the event loop, the
  cleaning on a worker thread), while a ticker on the loop measures how late each 1 ms
  tick runs (the longest is what a request waiting on the loop would see);
- inline on the loop (``PartitionLog.compact``), the same ticker running.
The baseline, in the same run, reads the same segment files with plain file I/O.
Results go to bench/results/cleaner.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.broker.replica.log_cleaner import LogCleaner, PartitionKey
from mirrorsim.protocol.records import Record, build_batch

RESULTS = Path(__file__).parent / "results"
RECORDS_PER_BATCH = 16
VALUE_BYTES = 1_000
SEGMENT_BYTES = 8 << 20
TICK_S = 0.001
READ_BYTES = 1 << 20


class _OneLog:
    """The cleaner's host over one log, as a replica manager holding one partition."""

    def __init__(self, log: PartitionLog) -> None:
        self.log = log

    def cleanable_logs(self) -> list[tuple[PartitionKey, PartitionLog]]:
        return [(("bench", 0), self.log)]

    def may_clean(self, key: PartitionKey, partition_log: PartitionLog) -> bool:
        return partition_log is self.log

    def take_offline(self, key: PartitionKey, exc: OSError) -> None:
        raise exc


def _config() -> LogConfig:
    return LogConfig(
        cleanup_policy="compact", segment_bytes=SEGMENT_BYTES, min_cleanable_dirty_ratio=0.0
    )


def build_log(directory: Path, megabytes: int, keys: int) -> int:
    """Write the log; returns its size in bytes."""
    log = PartitionLog.open(directory, _config())
    value = os.urandom(VALUE_BYTES)
    written, i = 0, 0
    while written < megabytes << 20:
        records = [
            Record(n, 1_700_000_000_000, b"key-%d" % ((i + n) % keys), value)
            for n in range(RECORDS_PER_BATCH)
        ]
        i += RECORDS_PER_BATCH
        log.append_as_leader([build_batch(records)], leader_epoch=0)
        written += RECORDS_PER_BATCH * (VALUE_BYTES + 20)
    log.update_high_watermark(log.log_end_offset)
    size = log.size_in_bytes
    log.close()
    return size


def read_files(directory: Path) -> float:
    """The baseline: every segment file read once with plain file I/O."""
    started = time.perf_counter()
    for path in sorted(directory.glob("*.log")):
        with open(path, "rb") as f:
            while f.read(READ_BYTES):
                pass
    return time.perf_counter() - started


async def _ticked(work: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(seconds ``work`` took, the latest a 1 ms tick ran meanwhile, in seconds)."""
    latest = 0.0
    done = False

    async def tick() -> None:
        nonlocal latest
        while not done:
            due = time.perf_counter() + TICK_S
            await asyncio.sleep(TICK_S)
            latest = max(latest, time.perf_counter() - due)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(TICK_S)  # the ticker is waiting on its first tick before the work
    started = time.perf_counter()
    await work()
    seconds = time.perf_counter() - started
    done = True
    await ticker
    return seconds, latest


async def clean_with_the_broker_cleaner(directory: Path) -> tuple[float, float, int]:
    log = PartitionLog.open(directory, _config())
    try:
        cleaner = LogCleaner(_OneLog(log))
        seconds, stall = await _ticked(cleaner.clean)
        return seconds, stall, log.size_in_bytes
    finally:
        log.close()


async def clean_inline(directory: Path) -> tuple[float, float, int]:
    log = PartitionLog.open(directory, _config())

    async def compact() -> None:
        log.compact()

    try:
        seconds, stall = await _ticked(compact)
        return seconds, stall, log.size_in_bytes
    finally:
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=64, help="at least 16: two segments")
    parser.add_argument("--keys", type=int, default=1_000)
    args = parser.parse_args()
    if args.megabytes << 20 < 2 * SEGMENT_BYTES:
        parser.error("--megabytes must fill two segments (16): the active one is never cleaned")
    root = Path(tempfile.mkdtemp(prefix="bench-cleaner-"))
    try:
        source = root / "built"
        size = build_log(source, args.megabytes, args.keys)
        runs: dict[str, tuple[float, float, int]] = {}
        for name, clean in (
            ("broker cleaner (worker thread)", clean_with_the_broker_cleaner),
            ("inline on the loop", clean_inline),
        ):
            copy = root / name.split()[0]
            shutil.copytree(source, copy)
            read_s = read_files(copy)
            runs[name] = asyncio.run(clean(copy))
            print(
                f"{name}: {size / runs[name][0] / 1e6:.1f} MB/s cleaned, "
                f"longest loop stall {runs[name][1] * 1000:.1f} ms "
                f"(plain read {size / read_s / 1e6:.0f} MB/s)",
                flush=True,
            )
        read_s = read_files(source)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    worker, inline = runs["broker cleaner (worker thread)"], runs["inline on the loop"]
    document = {
        "log_megabytes": round(size / 1e6, 1),
        "keys": args.keys,
        "cleaned_megabytes": round(worker[2] / 1e6, 2),
        "plain_read_mb_s": round(size / read_s / 1e6),
        "cleaner_mb_s": round(size / worker[0] / 1e6, 1),
        "inline_mb_s": round(size / inline[0] / 1e6, 1),
        "cleaner_vs_plain_read": round(read_s / worker[0], 3),
        "cleaner_longest_stall_ms": round(worker[1] * 1000, 1),
        "inline_longest_stall_ms": round(inline[1] * 1000, 1),
        "stall_ratio_inline_to_cleaner": round(inline[1] / max(worker[1], 1e-6), 1),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cleaner.json").write_text(json.dumps(document, indent=2) + "\n")
    lines = [
        f"# Log cleaner: {document['log_megabytes']} MB over {args.keys} keys",
        "",
        f"`.venv/bin/python -m mirrorsim.bench.bench_cleaner --megabytes {args.megabytes} "
        f"--keys {args.keys}`",
        "",
        "| measure | value |",
        "|---|---|",
        *(f"| {k.replace('_', ' ')} | {v} |" for k, v in document.items()),
        "",
    ]
    (RESULTS / "cleaner.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
