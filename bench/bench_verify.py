"""Verification throughput: the Spark convergence job against a plain Python loop.

Run: .venv/bin/python -m mirrorsim.bench.bench_verify [--megabytes 2048] [--partitions 4]

Generates a source data dir and an identical destination (a real copy, not a link), then
verifies them at batch level and at record level, twice each: with the Spark job in
local[2] and with a single-process loop that walks both logs side by side doing the same
per-unit work (fingerprint and CRC32C per batch; decode and compare per record). MB/s
counts the source log's bytes (each is read on both sides). Spark runs each level twice
in the same session: the first run pays for JVM warm-up and Python worker start, the
second is the steady state a long verification sees. Each row records the 1-minute load
average just before its run: on a shared machine a load above the CPU count means the
run shared its cores, and its seconds are an upper bound.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from mirrorsim.protocol.records import RawBatch, Record, build_batch, decode_records
from mirrorsim.verify.job import read_segments, verify_logs
from mirrorsim.verify.segments import discover_partitions, list_segments, read_segment
from mirrorsim.verify.session import verification_session
from mirrorsim.verify.views import fingerprint

RESULTS = Path(__file__).parent / "results"
DISTINCT_BATCHES = 64


def template_batches(records_per_batch: int, value_bytes: int) -> list[RawBatch]:
    """A few distinct batches; the log repeats them at increasing offsets."""
    templates = []
    for index in range(DISTINCT_BATCHES):
        value = os.urandom(value_bytes)
        records = [
            Record(i, 1_700_000_000_000 + i, f"key-{index}-{i}".encode(), value)
            for i in range(records_per_batch)
        ]
        templates.append(build_batch(records, partition_leader_epoch=1))
    return templates


def write_log(
    data_dir: Path, partitions: int, total_bytes: int, segment_bytes: int, templates: list[RawBatch]
) -> tuple[int, int, int]:
    """Write ``total_bytes`` of batches over ``partitions``; return (batches, records, bytes)."""
    batches = records = written = 0
    per_partition = total_bytes // partitions
    for partition in range(partitions):
        directory = data_dir / f"bench-{partition}"
        directory.mkdir(parents=True)
        offset = partition_bytes = 0
        segment = None
        segment_size = 0
        while partition_bytes < per_partition:
            batch = templates[batches % len(templates)].with_base_offset(offset)
            if segment is None or segment_size + batch.size > segment_bytes:
                if segment is not None:
                    segment.close()
                segment = (directory / f"{offset:020d}.log").open("wb")
                segment_size = 0
            segment.write(batch.data)
            segment_size += batch.size
            partition_bytes += batch.size
            offset = batch.next_offset
            batches += 1
            records += batch.records_count
        if segment is not None:
            segment.close()
        written += partition_bytes
    return batches, records, written


def log_batches(data_dir: Path) -> Iterator[tuple[str, Iterator[RawBatch]]]:
    for directory in discover_partitions(data_dir):
        segments = list_segments(directory)
        yield directory.name, (b for s in segments for b in read_segment(s.path))


def python_batch_level(source: Path, destination: Path) -> int:
    """Walk both logs in lockstep comparing what the Spark job compares; count batches."""
    compared = 0
    for (name, source_batches), (_, destination_batches) in zip(
        log_batches(source), log_batches(destination), strict=True
    ):
        for expected, found in zip(source_batches, destination_batches, strict=True):
            same = (
                expected.base_offset == found.base_offset
                and expected.last_offset == found.last_offset
                and expected.partition_leader_epoch == found.partition_leader_epoch
                and expected.crc == found.crc
                and expected.is_valid() == found.is_valid()
                and fingerprint(expected.data) == fingerprint(found.data)
            )
            if not same:
                raise AssertionError(f"{name} diverges at {expected.base_offset}")
            compared += 1
    return compared


def python_record_level(source: Path, destination: Path) -> int:
    compared = 0
    for (name, source_batches), (_, destination_batches) in zip(
        log_batches(source), log_batches(destination), strict=True
    ):
        for expected, found in zip(source_batches, destination_batches, strict=True):
            for want, got in zip(decode_records(expected), decode_records(found), strict=True):
                if want != got:
                    raise AssertionError(f"{name} diverges at {want.offset}")
                compared += 1
    return compared


def spark_level(level: str, source: Path, destination: Path) -> Callable[[], int]:
    spark = verification_session("local[2]", app_name="mirrorsim-bench-verify")

    def run() -> int:
        report = verify_logs(
            read_segments(spark, str(source), level=level),
            read_segments(spark, str(destination), level=level),
            level=level,
        )
        if not report.converged:
            raise AssertionError(f"identical logs reported as diverged: {report.divergences[:3]}")
        return sum(row["matched"] for row in report.partitions)

    return run


def timed(run: Callable[[], int]) -> tuple[int, float, float]:
    """Units compared, seconds taken, and the 1-minute load average before the run."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    units = run()
    return units, time.perf_counter() - start, load


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=2048, help="source log size")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--records-per-batch", type=int, default=16)
    parser.add_argument("--value-bytes", type=int, default=1000)
    parser.add_argument("--segment-megabytes", type=int, default=128)
    parser.add_argument("--work-dir", type=Path, help="where to generate (default: a temp dir)")
    args = parser.parse_args(argv)
    command = shlex.join([".venv/bin/python", "-m", "mirrorsim.bench.bench_verify", *sys.argv[1:]])

    work = Path(tempfile.mkdtemp(prefix="bench-verify-", dir=args.work_dir))
    try:
        source, destination = work / "source", work / "destination"
        templates = template_batches(args.records_per_batch, args.value_bytes)
        batches, records, size = write_log(
            source, args.partitions, args.megabytes << 20, args.segment_megabytes << 20, templates
        )
        shutil.copytree(source, destination)
        rows = []
        for level, units_total, python_loop in (
            ("batch", batches, python_batch_level),
            ("record", records, python_record_level),
        ):
            baseline_units, baseline_seconds, baseline_load = timed(
                lambda f=python_loop: f(source, destination)
            )
            spark_run = spark_level(level, source, destination)
            cold_units, cold_seconds, cold_load = timed(spark_run)
            warm_units, warm_seconds, warm_load = timed(spark_run)
            assert baseline_units == cold_units == warm_units == units_total
            for name, seconds, load in (
                ("python loop (baseline)", baseline_seconds, baseline_load),
                ("spark local[2], first run", cold_seconds, cold_load),
                ("spark local[2], second run", warm_seconds, warm_load),
            ):
                rows.append(
                    {
                        "level": level,
                        "runner": name,
                        "seconds": round(seconds, 3),
                        "units_per_second": round(units_total / seconds),
                        "megabytes_per_second": round(size / (1 << 20) / seconds, 1),
                        "vs_baseline": round(baseline_seconds / seconds, 3),
                        "load_average_1m": round(load, 2),
                    }
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    result = {
        "command": command,
        "source_bytes": size,
        "partitions": args.partitions,
        "batches": batches,
        "records": records,
        "cpus": os.cpu_count(),
        "results": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "verify.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "verify.md").write_text(markdown(result))
    print(markdown(result))


def markdown(result: dict) -> str:
    lines = [
        "# Verification throughput",
        "",
        f"Command: `{result['command']}`",
        "",
        f"Source log: {result['source_bytes']} bytes in {result['partitions']} partitions, "
        f"{result['batches']} batches, {result['records']} records (destination identical). "
        f"MB/s counts source bytes; both logs are read. Machine: {result['cpus']} CPUs.",
        "",
        "| level | runner | seconds | units/s | MB/s | speed vs baseline | load (1 min) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['level']} | {r['runner']} | {r['seconds']} | {r['units_per_second']} | "
        f"{r['megabytes_per_second']} | {r['vs_baseline']} | {r['load_average_1m']} |"
        for r in result["results"]
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
