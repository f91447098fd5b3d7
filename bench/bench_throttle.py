"""Destination-side mirror throttling: a mirror held at a configured rate, then released.

Run: ``.venv/bin/python -m mirrorsim.bench.bench_throttle [--rate 2000000] [--window 10]``

Two in-process clusters and one mirror of a 4-partition topic of 1 KiB random records
(lz4 batches that do not shrink). Three phases in one run:

1. baseline: a backlog of ``--baseline-mb`` is mirrored unthrottled; its rate between
   10% and 90% of the backlog is the full speed of this machine.
2. throttled: the topic is paused while a backlog of what the rate lets through in the
   run's warm-up and window plus ``--baseline-mb`` is produced;
   ``mirror.replication.throttled.rate`` is set on the destination broker and
   ``mirror.replication.throttled.replicas=*`` on the topic (IncrementalAlterConfigs, as
   ``mirrorsim configs`` sends them) and the topic resumed. After a warm-up (the quota's
   one-second burst), the bytes the destination logs gain over ``--window`` seconds give
   the measured rate; the run reports the backlog left after the window (it must be
   positive: the mirror had data to fetch all along) and whether the rate is within ±10%.
3. released: the rate is deleted; the rest of the backlog drains, and its rate (between
   10% and 90% of it) is compared with the baseline.

Progress is read from the destination logs in process. Results go to
bench/results/throttle.json and throttle.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mirrorsim.bench.in_process import find_leader_log
from mirrorsim.bench.waiting import until
from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
)
from mirrorsim.client.cluster import ClusterClient
from mirrorsim.compare.workload import produce_batch
from mirrorsim.fetcher.throttle import UNTHROTTLED
from mirrorsim.protocol.records import Compression, Record, build_batch

RESULTS = Path(__file__).parent / "results"
TOPIC = "throttled"
MIRROR = "bench-throttle"
PARTITIONS = 4
RECORD_BYTES = 1024
BATCH_RECORDS = 16
BATCH_POOL = 32
RATE = "mirror.replication.throttled.rate"
REPLICAS = "mirror.replication.throttled.replicas"
WARMUP_S = 2.0
TOLERANCE = 0.10
POLL_S = 0.01
CLUSTER_CONFIGS = {"mirror.topic.num.partitions": 3, "mirror.fetch.max.wait.ms": 100}


@asynccontextmanager
async def _cluster(name: str, data_dir: Path) -> AsyncIterator[ClusterRunner]:
    spec = ClusterSpec(name=name, data_dir=data_dir / name, configs=CLUSTER_CONFIGS)
    runner = ClusterRunner(spec)
    await runner.start()
    try:
        yield runner
    finally:
        await runner.stop()


def _batches() -> list[bytes]:
    now_ms = int(time.time() * 1000)
    return [
        build_batch(
            [Record(i, now_ms, b"k", os.urandom(RECORD_BYTES)) for i in range(BATCH_RECORDS)],
            compression=Compression.LZ4,
        ).data
        for _ in range(BATCH_POOL)
    ]


async def _produce(bootstrap: str, megabytes: float, pool: list[bytes]) -> None:
    """About ``megabytes`` MB spread over the partitions, produced concurrently."""
    per_partition = int(megabytes * 1_000_000 / PARTITIONS / len(pool[0])) + 1

    async def partition(client: ClusterClient, p: int) -> None:
        for n in range(per_partition):
            await produce_batch(client, TOPIC, p, pool[n % len(pool)])

    async with ClusterClient(bootstrap, client_id="bench-throttle") as client:
        await client.refresh_metadata([TOPIC])
        await asyncio.gather(*(partition(client, p) for p in range(PARTITIONS)))


def _bytes(cluster: ClusterRunner) -> int:
    """Bytes in the topic's leader logs (0 for a partition without one yet)."""
    logs = (find_leader_log(cluster, TOPIC, p) for p in range(PARTITIONS))
    return sum(log.size_in_bytes for log in logs if log is not None)


def _states(cluster: ClusterRunner) -> set[str]:
    statuses = cluster.brokers[0].mirrors.partitions
    return {status.state.name for (topic, _), status in statuses.items() if topic == TOPIC}


def _caught_up(source: ClusterRunner, destination: ClusterRunner) -> bool:
    for p in range(PARTITIONS):
        src, dst = find_leader_log(source, TOPIC, p), find_leader_log(destination, TOPIC, p)
        if src is None or dst is None or dst.log_end_offset != src.log_end_offset:
            return False
    return True


async def _alter(destination: ClusterRunner, rate: int | None) -> None:
    """Set (or, with None, delete) the broker's rate and throttle every topic replica."""
    broker = destination.brokers[0]
    broker_ops = [
        AlterConfigOp(RATE, None, AlterConfigOpType.DELETE)
        if rate is None
        else AlterConfigOp(RATE, str(rate))
    ]
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (
            await admin.incremental_alter_configs(
                {
                    ConfigResource(ConfigResourceType.BROKER, str(broker.broker_id)): broker_ops,
                    ConfigResource(ConfigResourceType.TOPIC, TOPIC): [AlterConfigOp(REPLICAS, "*")],
                }
            )
        ).all()
    wanted = UNTHROTTLED if rate is None else rate
    quota = broker.mirrors.fetchers.quota
    await until(
        lambda: broker.config(RATE) == wanted and quota.is_throttled(TOPIC, 0),
        30,
        f"{RATE}={wanted} applied",
        POLL_S,
    )


async def _drain(source: ClusterRunner, destination: ClusterRunner, timeout_s: float) -> float:
    """Bytes/s at which the destination catches up with the source from now, measured
    between 10% and 90% of what is left, so the mirror's reaction time (a metadata
    refresh, a fetch round) does not count as slowness."""
    start, total = _bytes(destination), _bytes(source)
    marks = []
    for share in (0.1, 0.9):
        goal = start + share * (total - start)
        await until(lambda g=goal: _bytes(destination) >= g, timeout_s, "mirror progress", POLL_S)
        marks.append((_bytes(destination), time.monotonic()))
    await until(lambda: _caught_up(source, destination), timeout_s, "mirror caught up", POLL_S)
    (first, t0), (last, t1) = marks
    return (last - first) / max(t1 - t0, POLL_S)


async def run(rate: int, window_s: float, baseline_mb: float) -> dict[str, Any]:
    pool = _batches()
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            _cluster("source", Path(tmp)) as source,
            _cluster("destination", Path(tmp)) as destination,
        ):
            async with Admin(bootstrap=source.bootstrap) as admin:
                (await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])).all()
            await _produce(source.bootstrap, baseline_mb, pool)
            async with Admin(bootstrap=destination.bootstrap) as admin:
                await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
                (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
            baseline = await _drain(source, destination, 300)

            async with Admin(bootstrap=destination.bootstrap) as admin:
                (await admin.pause_mirror_topics(MIRROR, [TOPIC])).all()
            await until(lambda: _states(destination) == {"PAUSED"}, 60, "paused", POLL_S)
            await _produce(source.bootstrap, rate * (WARMUP_S + window_s) / 1e6 + baseline_mb, pool)
            await _alter(destination, rate)
            async with Admin(bootstrap=destination.bootstrap) as admin:
                (await admin.resume_mirror_topics(MIRROR, [TOPIC])).all()
            await asyncio.sleep(WARMUP_S)
            first, t0 = _bytes(destination), time.monotonic()
            await asyncio.sleep(window_s)
            last, t1 = _bytes(destination), time.monotonic()
            byte_rate = destination.brokers[0].mirrors.fetchers.quota.byte_rate()
            backlog_left = _bytes(source) - _bytes(destination)
            measured = (last - first) / (t1 - t0)

            await _alter(destination, None)
            released = await _drain(source, destination, 300)
    deviation = measured / rate - 1
    return {
        "rate_bytes_per_s": rate,
        "window_s": window_s,
        "baseline_bytes_per_s": round(baseline),
        "throttled_bytes_per_s": round(measured),
        "deviation": round(deviation, 4),
        "within_tolerance": abs(deviation) <= TOLERANCE,
        "byte_rate_metric": round(byte_rate),
        "backlog_left_after_window_bytes": backlog_left,
        "released_bytes_per_s": round(released),
        "released_vs_baseline": round(released / baseline, 3),
    }


def _markdown(result: dict[str, Any]) -> str:
    mb = 1_000_000
    return "\n".join(
        [
            "# Mirror replication throttling",
            "",
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}. Command: "
            f"`.venv/bin/python -m mirrorsim.bench.bench_throttle --rate "
            f"{result['rate_bytes_per_s']} --window {result['window_s']:g}`.",
            "",
            "| phase | MB/s | note |",
            "|---|---|---|",
            f"| baseline (unthrottled) | {result['baseline_bytes_per_s'] / mb:.2f} | "
            "full speed of this run |",
            f"| throttled at {result['rate_bytes_per_s'] / mb:.2f} MB/s | "
            f"{result['throttled_bytes_per_s'] / mb:.2f} | deviation "
            f"{result['deviation']:+.1%} (within ±10%: {result['within_tolerance']}); "
            f"ByteRate metric {result['byte_rate_metric'] / mb:.2f} MB/s; backlog left after "
            f"the window {result['backlog_left_after_window_bytes'] / mb:.1f} MB |",
            f"| released (rate deleted) | {result['released_bytes_per_s'] / mb:.2f} | "
            f"{result['released_vs_baseline']:.2f}x the baseline |",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=2_000_000, help="bytes/s to throttle to")
    parser.add_argument("--window", type=float, default=10.0, help="seconds measured")
    parser.add_argument("--baseline-mb", type=float, default=24.0, help="unthrottled backlog")
    args = parser.parse_args()
    result = asyncio.run(run(args.rate, args.window, args.baseline_mb))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "throttle.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "throttle.md").write_text(_markdown(result))
    print(_markdown(result))


if __name__ == "__main__":
    main()
