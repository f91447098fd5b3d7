"""Cluster mirroring throughput against a client-side copy loop and the machine's ceiling.

Run: .venv/bin/python -m mirrorsim.bench.bench_mirroring [--megabytes 8] [--partitions 64]

For each record size (1 KiB and 100 bytes) the same lz4 topic is copied three ways in
one run: (mirroring) the destination's mirror fetchers, (a) an aiokafka consume →
produce loop between the same clusters (the shape of every MirrorMaker), and (b) a raw
asyncio socket-to-file copy of the same number of bytes over loopback (the most this
machine can move). Ratios are against (a) and (b).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic, TopicPartition
from mirrorsim.client.cluster import ClusterClient
from mirrorsim.compare.kafka_io import consume_until, partitions_of
from mirrorsim.compare.scenario import running_cluster
from mirrorsim.compare.workload import produce_batch
from mirrorsim.protocol.records import Compression, Record, build_batch

RESULTS = Path(__file__).parent / "results"
TOPIC = "bench"
POLL_S = 0.01
CHUNK = 1 << 16


def _random_batches(partition: int, records: int, size: int) -> list[bytes]:
    """lz4 batches of ~16 KiB holding random values (so lz4 cannot shrink them away)."""
    per_batch = max(1, 16_384 // size)
    now_ms = int(time.time() * 1000)
    batches = []
    for start in range(0, records, per_batch):
        chunk = [
            Record(i - start, now_ms, f"key-{partition}-{i % 97}".encode(), os.urandom(size))
            for i in range(start, min(start + per_batch, records))
        ]
        batches.append(build_batch(chunk, compression=Compression.LZ4).data)
    return batches


async def _produce_topic(bootstrap: str, partitions: int, records: int, size: int) -> int:
    total = 0
    async with ClusterClient(bootstrap, client_id="bench") as client:
        await client.refresh_metadata([TOPIC])
        for p in range(partitions):
            for batch in _random_batches(p, records, size):
                await produce_batch(client, TOPIC, p, batch)
                total += len(batch)
    return total


async def _log_ends(bootstrap: str, topic: str, partitions: int) -> list[int]:
    async with Admin(bootstrap=bootstrap) as admin:
        ends = await admin.list_offsets({TopicPartition(topic, p): -1 for p in range(partitions)})
    return [ends[TopicPartition(topic, p)].offset for p in range(partitions)]


async def _mirror_paused(source: Any, destination: Any, partitions: int) -> None:
    """An established mirror of the empty topic, paused, so only the copy is timed."""
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, partitions)])).all()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror("bench", {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror("bench", [TOPIC])).all()
        await _until_states(admin, partitions, "MIRRORING")
        (await admin.pause_mirror_topics("bench", [TOPIC])).all()
        await _until_states(admin, partitions, "PAUSED")


async def _until_states(admin: Admin, partitions: int, state: str) -> None:
    async with asyncio.timeout(120):
        while True:
            described = (await admin.describe_mirrors(["bench"]))["bench"].partitions
            if len(described) == partitions and all(d.state == state for d in described):
                return
            await asyncio.sleep(POLL_S)


async def _mirror_seconds(destination: Any, partitions: int, records: int) -> float:
    started = time.monotonic()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        (await admin.resume_mirror_topics("bench", [TOPIC])).all()
    async with asyncio.timeout(600):
        while any(e != records for e in await _log_ends(destination.bootstrap, TOPIC, partitions)):
            await asyncio.sleep(POLL_S)
    return time.monotonic() - started


async def _client_copy_seconds(source: Any, destination: Any, partitions: int) -> float:
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


async def _socket_copy_seconds(total: int, directory: Path) -> float:
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
    return elapsed


async def _one_size(size: int, megabytes: float, partitions: int) -> dict[str, Any]:
    records = max(1, int(megabytes * 1_000_000 / size / partitions))
    with tempfile.TemporaryDirectory(prefix="bench-mirroring-") as tmp:
        data = Path(tmp)
        async with (
            running_cluster("primary", data) as source,
            running_cluster("backup", data) as destination,
            running_cluster("copy", data) as copy_destination,
        ):
            await _mirror_paused(source, destination, partitions)
            total = await _produce_topic(source.bootstrap, partitions, records, size)
            mirror_s = await _mirror_seconds(destination, partitions, records)
            client_s = await _client_copy_seconds(source, copy_destination, partitions)
        socket_s = await _socket_copy_seconds(total, data)
    mb = total / 1e6
    return {
        "record_bytes": size,
        "partitions": partitions,
        "records": records * partitions,
        "megabytes": round(mb, 3),
        "mirroring_mb_s": round(mb / mirror_s, 2),
        "client_copy_mb_s": round(mb / client_s, 2),
        "socket_copy_mb_s": round(mb / socket_s, 2),
        "mirroring_vs_client_copy": round(client_s / mirror_s, 2),
        "mirroring_vs_socket_copy": round(socket_s / mirror_s, 3),
    }


def _markdown(document: dict[str, Any]) -> str:
    lines = [
        "# Mirroring throughput",
        "",
        f"Command: `{document['command']}`",
        "",
        "| record bytes | MB | mirroring MB/s | (a) aiokafka copy MB/s | (b) socket copy MB/s "
        "| mirroring / (a) | mirroring / (b) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in document["results"]:
        lines.append(
            f"| {r['record_bytes']} | {r['megabytes']} | {r['mirroring_mb_s']} "
            f"| {r['client_copy_mb_s']} | {r['socket_copy_mb_s']} "
            f"| {r['mirroring_vs_client_copy']}x | {r['mirroring_vs_socket_copy']:.1%} |"
        )
    lines += ["", *document["notes"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=8.0, help="per record size")
    parser.add_argument("--partitions", type=int, default=64)
    arguments = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(arguments)
    results = [
        asyncio.run(_one_size(size, args.megabytes, args.partitions)) for size in (1024, 100)
    ]
    document = {
        "command": shlex.join(
            [".venv/bin/python", "-m", "mirrorsim.bench.bench_mirroring", *arguments]
        ),
        "targets": {"vs_client_copy_1k": 3.0, "vs_client_copy_100b": 15.0, "vs_socket": 0.5},
        "results": results,
        "notes": [
            "Targets: >=3x (a) with 1 KiB records, >=15x (a) with 100-byte records, >=50% of (b).",
            "Mirroring is timed from ResumeMirrorTopics (the mirror was established on the "
            "empty topic and paused while the data was produced) until every destination "
            "log end matches the source; values are random bytes, so lz4 keeps their size.",
        ],
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mirroring.json").write_text(json.dumps(document, indent=2) + "\n")
    (RESULTS / "mirroring.md").write_text(_markdown(document))
    print(_markdown(document))


if __name__ == "__main__":
    main()
