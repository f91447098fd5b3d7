"""Cluster mirroring throughput, lag and failover against a client copy loop and the machine.

Run: .venv/bin/python -m mirrorsim.bench.bench_mirroring [--megabytes 128] [--partitions 64]
     [--lag-seconds 5] [--failover-partitions 1000] [--only throughput|failover]

For each record size (1 KiB and 100 bytes) the same lz4 topic is copied three ways in
one run: (mirroring) the destination's mirror fetchers, (a) an aiokafka consume →
produce loop between the same clusters (the shape of every MirrorMaker), and (b) a raw
asyncio socket-to-file copy of the same number of bytes over loopback (the most this
machine can move). Ratios are against (a) and (b). Then, with the 1 KiB records, the
replication lag of a running mirror is sampled while a producer offers half of the
measured mirroring throughput (``mirroring_lag``: the source of that run is a broker
process of its own), and a mirror of ``--failover-partitions`` partitions is
failed over (RemoveTopicsFromMirror) and timed until every partition is writable, against
the failover of a one-partition mirror in the same run.

The clusters run in this process with the broker defaults that matter here (notably
``mirror.fetch.max.wait.ms=500``, so a long poll that is not woken shows up as lag).
Completion is read from the destination leader's log in process: polling through an
admin client every few milliseconds would compete with the copy for the same CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from mirrorsim.bench.in_process import find_leader_log, leader_log
from mirrorsim.bench.mirroring_lag import LAG_NOTE, lag_at_rate, lag_table
from mirrorsim.bench.waiting import until
from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.cluster import ClusterClient
from mirrorsim.compare.kafka_io import consume_until, partitions_of
from mirrorsim.compare.workload import produce_batch
from mirrorsim.coordinator.state_machine import MirrorPartitionState
from mirrorsim.protocol.records import Compression, Record, build_batch

RESULTS = Path(__file__).parent / "results"
TOPIC = "bench"
MIRROR = "bench"
POLL_S = 0.001
CHUNK = 1 << 16
BATCH_BYTES = 16_384
BATCH_POOL = 64
WARMUP_MEGABYTES = 16.0
SOCKET_COPIES = 3
MIRROR_COPIES = 3
CLUSTER_CONFIGS = {"mirror.topic.num.partitions": 3}
FAILOVER_TOPIC = "failover"
FAILOVER_POLL_S = 0.01


@asynccontextmanager
async def _cluster(name: str, data_dir: Path) -> AsyncIterator[ClusterRunner]:
    runner = ClusterRunner(
        ClusterSpec(name=name, data_dir=data_dir / name, configs=CLUSTER_CONFIGS)
    )
    await runner.start()
    try:
        yield runner
    finally:
        await runner.stop()


def _random_batch(partition: int, first: int, count: int, size: int) -> bytes:
    """One lz4 batch of random values (so lz4 cannot shrink them away)."""
    now_ms = int(time.time() * 1000)
    records = [
        Record(i, now_ms, f"key-{partition}-{(first + i) % 97}".encode(), os.urandom(size))
        for i in range(count)
    ]
    return build_batch(records, compression=Compression.LZ4).data


async def produce_topic(
    bootstrap: str, partitions: int, records: int, size: int, topic: str = TOPIC
) -> int:
    """``records`` records on every partition of ``topic``; the bytes produced.

    Full batches come from a pool of ``BATCH_POOL`` random batches built once, since
    building one per batch in Python (random values, lz4) made producing the volume slow;
    the leader assigns each appended batch its own offsets, so a reused batch is a new
    batch in the log that lz4 still cannot shrink. Partitions are produced concurrently.
    """
    per_batch = max(1, BATCH_BYTES // size)
    pool = [_random_batch(i, 0, per_batch, size) for i in range(min(BATCH_POOL, records))]
    produced = [0] * partitions

    async def produce_partition(client: ClusterClient, p: int) -> None:
        for n, start in enumerate(range(0, records, per_batch)):
            count = min(per_batch, records - start)
            batch = (
                pool[n % len(pool)] if count == per_batch else _random_batch(p, start, count, size)
            )
            await produce_batch(client, topic, p, batch)
            produced[p] += len(batch)

    async with ClusterClient(bootstrap, client_id="bench") as client:
        await client.refresh_metadata([topic])
        await asyncio.gather(*(produce_partition(client, p) for p in range(partitions)))
    return sum(produced)


def _log_end(cluster: ClusterRunner, topic: str, partition: int) -> int:
    """The log end offset at the partition's leader, read in process; -1 without one."""
    log = find_leader_log(cluster, topic, partition)
    return -1 if log is None else int(log.log_end_offset)


def _states(cluster: ClusterRunner, topic: str) -> list[str]:
    return [
        status.state.name
        for broker in cluster.brokers
        for (name, _), status in broker.mirrors.partitions.items()
        if name == topic
    ]


async def _until(predicate: Any, timeout_s: float, what: str, poll_s: float = POLL_S) -> None:
    await until(predicate, timeout_s, what, poll_s)


async def _mirror(destination: ClusterRunner, source: ClusterRunner, topic: str) -> None:
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [topic])).all()


async def _mirror_paused(
    source: ClusterRunner, destination: ClusterRunner, partitions: int
) -> None:
    """An established mirror, paused, so only the copy is timed.

    Each partition holds one record before the pause: a partition's first append at a
    leader epoch writes its leader-epoch checkpoint, a one-off cost per partition and
    epoch that is not throughput.
    """
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, partitions)])).all()
    await produce_topic(source.bootstrap, partitions, 1, 100)
    await _mirror(destination, source, TOPIC)
    await _until(
        lambda: (
            _states(destination, TOPIC) == ["MIRRORING"] * partitions
            and all(_log_end(destination, TOPIC, p) == 1 for p in range(partitions))
        ),
        120,
        "mirror",
    )
    await _pause(destination, partitions)


async def _pause(destination: ClusterRunner, partitions: int) -> None:
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.pause_mirror_topics(MIRROR, [TOPIC])).all()
    await _until(lambda: _states(destination, TOPIC) == ["PAUSED"] * partitions, 120, "pause")


async def _mirror_seconds(destination: ClusterRunner, partitions: int, end: int) -> float:
    """From ResumeMirrorTopics until every destination log end reaches ``end``.

    The leaders' logs are looked up before the clock starts (the copy moves no
    leadership), and each poll reads only the log ends of partitions still copying: the
    poll shares the event loop with both brokers, so its cost would be taken from the copy.
    """
    logs = [leader_log(destination, TOPIC, p) for p in range(partitions)]
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.start()
        started = time.monotonic()
        (await admin.resume_mirror_topics(MIRROR, [TOPIC])).all()
        copying = logs

        def complete() -> bool:
            nonlocal copying
            copying = [log for log in copying if log.log_end_offset != end]
            return not copying

        await _until(complete, 600, "complete copy")
        return time.monotonic() - started


async def _client_copy_seconds(
    source: ClusterRunner, destination: ClusterRunner, partitions: int
) -> float:
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.create_topics([NewTopic("copy", partitions)])).all()
    consumer = AIOKafkaConsumer(bootstrap_servers=source.bootstrap, enable_auto_commit=False)
    producer = AIOKafkaProducer(
        bootstrap_servers=destination.bootstrap, compression_type="lz4", acks="all", linger_ms=5
    )
    await consumer.start()
    await producer.start()
    try:
        tps = list(partitions_of({TOPIC: partitions}))
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        started = time.monotonic()
        async for tp, records in consume_until(consumer, ends, timeout_s=600):
            for r in records:
                await producer.send("copy", r.value, key=r.key, partition=tp.partition)
        await producer.flush()
        return time.monotonic() - started
    finally:
        await consumer.stop()
        await producer.stop()


async def socket_copy_seconds(total: int, directory: Path) -> float:
    """Loopback TCP into a file, the same byte count: the ceiling for any copy here."""
    payload = b"\x00" * CHUNK

    async def serve(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sent = 0
        while sent < total:
            writer.write(payload[: min(CHUNK, total - sent)])
            sent += min(CHUNK, total - sent)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    with open(directory / "socket-copy.bin", "wb") as sink:
        while chunk := await reader.read(CHUNK):
            sink.write(chunk)
    elapsed = time.monotonic() - started
    writer.close()
    server.close()
    await server.wait_closed()
    # Untimed: the next copy must write a new file, as the mirror does, not cut this one.
    (directory / "socket-copy.bin").unlink()
    return elapsed


async def _one_size(
    size: int, megabytes: float, partitions: int, lag_seconds: float
) -> dict[str, Any]:
    records = max(1, int(megabytes * 1_000_000 / size / partitions))
    with tempfile.TemporaryDirectory(prefix="bench-mirroring-") as tmp:
        data = Path(tmp)
        async with (
            _cluster("primary", data) as source,
            _cluster("backup", data) as destination,
            _cluster("copy", data) as copy_destination,
        ):
            await _mirror_paused(source, destination, partitions)
            mirror_s, produced = [], []
            for copy in range(MIRROR_COPIES):
                if copy:
                    await _pause(destination, partitions)
                produced.append(await produce_topic(source.bootstrap, partitions, records, size))
                end = 1 + (copy + 1) * records
                mirror_s.append(await _mirror_seconds(destination, partitions, end))
            client_s = await _client_copy_seconds(source, copy_destination, partitions)
            total = produced[0]
            copy_rates = [b / 1e6 / t for b, t in zip(produced, mirror_s, strict=True)]
            mirror_rate = statistics.median(copy_rates)
            client_rate = sum(produced) / 1e6 / client_s
            lag = None
            if lag_seconds > 0:
                half_load = mirror_rate / 2
                lag = await lag_at_rate(data, partitions, half_load, lag_seconds, CLUSTER_CONFIGS)
        # The median of a few: one copy of a fraction of a second swings with the load.
        socket_s = statistics.median(
            [await socket_copy_seconds(total, data) for _ in range(SOCKET_COPIES)]
        )
    mb = total / 1e6
    return {
        "record_bytes": size,
        "partitions": partitions,
        "records": records * partitions,
        "megabytes": round(mb, 3),
        "mirroring_mb_s": round(mirror_rate, 2),
        "mirroring_copies_mb_s": [round(rate, 2) for rate in copy_rates],
        "client_copy_mb_s": round(client_rate, 2),
        "socket_copy_mb_s": round(mb / socket_s, 2),
        "mirroring_vs_client_copy": round(mirror_rate / client_rate, 2),
        "mirroring_vs_socket_copy": round(mirror_rate / (mb / socket_s), 3),
        "lag_at_half_load": lag,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


async def _failover(partitions: int) -> dict[str, Any]:
    """Seconds from RemoveTopicsFromMirror until every partition is STOPPED and a produce
    to the last one is accepted; then (untimed) every partition must accept a produce.

    Completion is polled every 10 ms: walking a thousand partition states every
    millisecond on the brokers' own event loop would slow down what it measures.
    """
    with tempfile.TemporaryDirectory(prefix="bench-failover-") as tmp:
        data = Path(tmp)
        async with _cluster("primary", data) as source, _cluster("backup", data) as destination:
            async with Admin(bootstrap=source.bootstrap) as admin:
                (await admin.create_topics([NewTopic(FAILOVER_TOPIC, partitions)])).all()
            async with ClusterClient(source.bootstrap, client_id="bench-failover") as client:
                await client.refresh_metadata([FAILOVER_TOPIC])
                for p in range(partitions):
                    await produce_batch(client, FAILOVER_TOPIC, p, _random_batch(p, 0, 4, 100))
            setup_started = time.monotonic()
            await _mirror(destination, source, FAILOVER_TOPIC)
            await _until(
                lambda: (
                    _states(destination, FAILOVER_TOPIC) == ["MIRRORING"] * partitions
                    and all(
                        _log_end(destination, FAILOVER_TOPIC, p) == 4 for p in range(partitions)
                    )
                ),
                600,
                "mirror of every failover partition",
                FAILOVER_POLL_S,
            )
            setup_s = time.monotonic() - setup_started
            async with ClusterClient(destination.bootstrap, client_id="bench-failover") as client:
                await client.refresh_metadata([FAILOVER_TOPIC])
                started = time.monotonic()
                async with Admin(bootstrap=destination.bootstrap) as admin:
                    (await admin.remove_topics_from_mirror(MIRROR, [FAILOVER_TOPIC])).all()
                await _until(
                    lambda: _stopped(destination, FAILOVER_TOPIC) == partitions,
                    600,
                    "failover of every partition",
                    FAILOVER_POLL_S,
                )
                last = partitions - 1
                await produce_batch(client, FAILOVER_TOPIC, last, _random_batch(last, 4, 1, 100))
                failover_s = time.monotonic() - started
                for p in range(partitions - 1):
                    await produce_batch(client, FAILOVER_TOPIC, p, _random_batch(p, 4, 1, 100))
    return {
        "partitions": partitions,
        "mirror_setup_s": round(setup_s, 2),
        "failover_s": round(failover_s, 2),
    }


def _stopped(cluster: ClusterRunner, topic: str) -> int:
    """How many of the topic's mirror partitions are STOPPED: compared by identity, as
    an enum's ``name`` costs more than the rest of the poll."""
    return sum(
        status.state is MirrorPartitionState.STOPPED
        for broker in cluster.brokers
        for (name, _), status in broker.mirrors.partitions.items()
        if name == topic
    )


async def _failover_scaling(partitions: int) -> dict[str, Any]:
    """The failover of ``partitions`` against one of a single partition, in the same run:
    the ratio is what the extra partitions cost (1x when the work is fully batched)."""
    baseline = await _failover(1)
    measured = await _failover(partitions)
    return {
        **measured,
        "one_partition_failover_s": baseline["failover_s"],
        "vs_one_partition": round(measured["failover_s"] / max(baseline["failover_s"], 0.01), 1),
    }


def _markdown(document: dict[str, Any]) -> str:
    lines = [
        "# Mirroring throughput, lag and failover",
        "",
        f"Command: `{document['command']}`",
        "",
        "| record bytes | partitions | MB | mirroring MB/s (median) | mirroring copies MB/s "
        "| (a) aiokafka copy MB/s | (b) socket copy MB/s | mirroring / (a) | mirroring / (b) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in document["results"]:
        lines.append(
            f"| {r['record_bytes']} | {r['partitions']} | {r['megabytes']} | {r['mirroring_mb_s']} "
            f"| {', '.join(map(str, r.get('mirroring_copies_mb_s', [])))} "
            f"| {r['client_copy_mb_s']} | {r['socket_copy_mb_s']} "
            f"| {r['mirroring_vs_client_copy']}x | {r['mirroring_vs_socket_copy']:.1%} |"
        )
    loads = [str(r["load_average_1m"]) for r in document["results"] if "load_average_1m" in r]
    if loads:
        lines += [
            "",
            f"Machine load average (1 min, 2 cores shared) after each size: {', '.join(loads)}; "
            "every copy runs on one event loop, so wall-clock rates fall as the load rises.",
        ]
    lines += lag_table([(r["record_bytes"], r["lag_at_half_load"]) for r in document["results"]])
    failover = document.get("failover")
    if failover:
        lines += [
            "",
            f"Failover of {failover['partitions']} partitions (RemoveTopicsFromMirror until "
            f"every partition is STOPPED and accepts produce): {failover['failover_s']} s "
            f"(establishing that mirror took {failover['mirror_setup_s']} s).",
        ]
        if "one_partition_failover_s" in failover:
            lines += [
                "",
                f"One partition, same run: {failover['one_partition_failover_s']} s; "
                f"{failover['partitions']} partitions take {failover['vs_one_partition']}x "
                f"that. Command: `{failover['command']}`",
            ]
    lines += ["", *document["notes"]]
    return "\n".join(lines) + "\n"


def _previous_document() -> dict[str, Any]:
    path = RESULTS / "mirroring.json"
    return json.loads(path.read_text()) if path.exists() else {}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=128.0, help="per record size")
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--lag-seconds", type=float, default=5.0, help="0 skips the lag run")
    parser.add_argument("--failover-partitions", type=int, default=1000, help="0 skips it")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 100])
    parser.add_argument(
        "--only",
        choices=["throughput", "failover"],
        help="run one part; the other part's last results are kept in bench/results",
    )
    arguments = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(arguments)
    command = shlex.join([".venv/bin/python", "-m", "mirrorsim.bench.bench_mirroring", *arguments])
    previous = _previous_document() if args.only else {}
    if args.only == "failover":
        results = previous.get("results", [])
    else:
        # A first copy in this process ran 10-20% slower in CPU than the ones after it
        # (a growing heap, first calls); a long-running mirror is past that, so a small
        # copy of the same shape goes first and is not reported.
        asyncio.run(_one_size(args.sizes[0], WARMUP_MEGABYTES, args.partitions, 0))
        results = [
            asyncio.run(
                _one_size(
                    size, args.megabytes, args.partitions, args.lag_seconds if size == 1024 else 0
                )
            )
            for size in args.sizes
        ]
    if args.only == "throughput" or not args.failover_partitions:
        failover = previous.get("failover")
    else:
        failover = {
            **asyncio.run(_failover_scaling(args.failover_partitions)),
            "command": command,
        }
    document = {
        "command": previous.get("command", command) if args.only == "failover" else command,
        "targets": {
            "vs_client_copy_1k": 3.0,
            "vs_client_copy_100b": 15.0,
            "vs_socket": 0.5,
            "lag_p99_ms_at_half_load": 100,
            "failover_1000_partitions_s": 2.0,
        },
        "results": results,
        "failover": failover,
        "notes": [
            "Targets: >=3x (a) with 1 KiB records, >=15x (a) with 100-byte records, >=50% of (b), "
            "lag p99 < 100 ms at half of the mirroring throughput, 1,000 partitions writable "
            "within 2 s of a failover.",
            f"Mirroring is the median of {MIRROR_COPIES} copies of the MB column each, each "
            "timed from ResumeMirrorTopics (the mirror is paused while its data is produced) until "
            "every destination log end matches the source; values are random bytes, so lz4 "
            f"keeps their size. A {WARMUP_MEGABYTES:g} MB copy runs first and is not reported; "
            f"(a) copies all {MIRROR_COPIES} copies' records once; (b) is the median of "
            f"{SOCKET_COPIES} socket copies of that many bytes.",
            LAG_NOTE,
        ],
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mirroring.json").write_text(json.dumps(document, indent=2) + "\n")
    (RESULTS / "mirroring.md").write_text(_markdown(document))
    print(_markdown(document))


if __name__ == "__main__":
    main()
