"""Real clients against a broker: produce and consume throughput, produce latency.

Run: .venv/bin/python -m mirrorsim.bench.bench_clients [--records 20000] [--record-bytes 1000]

The broker runs as its own process (``mirrorsim up``) so that the clients in this
process do not share its event loop. aiokafka and confluent-kafka each produce
``--records`` values at acks=all into a one-partition topic, then read them back; the
latency of a record is the time from ``send``/``produce`` to its acknowledgement. The
baseline, measured in the same run, writes the very same values to a local file (length
prefixed, flushed every record for the latency figure) and reads them back: the floor of
this machine, so the ratios say what the wire, the broker and the client cost on top.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from mirrorsim.broker.ports import free_port
from mirrorsim.client.admin import Admin
from mirrorsim.client.admin_types import NewTopic

RESULTS = Path(__file__).parent / "results"
READY = re.compile(r"cluster bench ready bootstrap=(\S+)")
START_TIMEOUT_S = 60
LENGTH = struct.Struct(">i")


class Measurement:
    """One client's (or the baseline's) numbers for one direction."""

    def __init__(self, records: int, total_bytes: int, seconds: float) -> None:
        self.records = records
        self.total_bytes = total_bytes
        self.seconds = seconds
        self.latencies_ms: list[float] = []

    @property
    def mb_s(self) -> float:
        return self.total_bytes / 1e6 / self.seconds

    @property
    def records_s(self) -> float:
        return self.records / self.seconds

    def percentile_ms(self, p: int) -> float:
        return statistics.quantiles(self.latencies_ms, n=100)[p - 1]


def make_values(count: int, size: int) -> list[bytes]:
    body = os.urandom(size)
    return [b"%08d" % i + body[8:] for i in range(count)]


def baseline_produce(path: Path, values: list[bytes]) -> Measurement:
    latencies = []
    start = time.perf_counter()
    with open(path, "wb") as f:
        for value in values:
            sent = time.perf_counter()
            f.write(LENGTH.pack(len(value)) + value)
            f.flush()
            latencies.append((time.perf_counter() - sent) * 1000)
    result = Measurement(len(values), sum(map(len, values)), time.perf_counter() - start)
    result.latencies_ms = latencies
    return result


def baseline_consume(path: Path, count: int) -> Measurement:
    start = time.perf_counter()
    total = read = 0
    with open(path, "rb") as f:
        while read < count:
            (size,) = LENGTH.unpack(f.read(LENGTH.size))
            total += len(f.read(size))
            read += 1
    return Measurement(read, total, time.perf_counter() - start)


async def aiokafka_produce(bootstrap: str, topic: str, values: list[bytes]) -> Measurement:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    latencies: list[float] = []

    def acked(sent: float) -> Any:
        return lambda _: latencies.append((time.perf_counter() - sent) * 1000)

    try:
        start = time.perf_counter()
        futures = []
        for value in values:
            sent = time.perf_counter()
            future = await producer.send(topic, value, partition=0)
            future.add_done_callback(acked(sent))
            futures.append(future)
        await asyncio.gather(*futures)
        elapsed = time.perf_counter() - start
    finally:
        await producer.stop()
    result = Measurement(len(values), sum(map(len, values)), elapsed)
    result.latencies_ms = latencies
    return result


async def aiokafka_consume(bootstrap: str, topic: str, count: int) -> Measurement:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    await consumer.seek_to_beginning(partition)
    total = read = 0
    try:
        start = time.perf_counter()
        while read < count:
            batches = await consumer.getmany(timeout_ms=1000, max_records=5000)
            for messages in batches.values():
                read += len(messages)
                total += sum(len(m.value) for m in messages)
        elapsed = time.perf_counter() - start
    finally:
        await consumer.stop()
    return Measurement(read, total, elapsed)


def confluent_produce(bootstrap: str, topic: str, values: list[bytes]) -> Measurement:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    latencies: list[float] = []
    failures: list[Any] = []

    def acked(sent: float) -> Any:
        def report(error: Any, _: Any) -> None:
            if error is not None:
                failures.append(error)
            latencies.append((time.perf_counter() - sent) * 1000)

        return report

    start = time.perf_counter()
    for value in values:
        while True:
            try:
                producer.produce(topic, value, partition=0, on_delivery=acked(time.perf_counter()))
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    remaining = producer.flush(60)
    elapsed = time.perf_counter() - start
    if remaining or failures:
        raise RuntimeError(f"confluent-kafka: {remaining} undelivered, failures {failures[:3]}")
    result = Measurement(len(values), sum(map(len, values)), elapsed)
    result.latencies_ms = latencies
    return result


def confluent_consume(bootstrap: str, topic: str, count: int) -> Measurement:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([ConfluentTopicPartition(topic, 0, 0)])
    total = read = 0
    try:
        start = time.perf_counter()
        while read < count:
            for message in consumer.consume(5000, timeout=1.0):
                if message.error() is None:
                    read += 1
                    total += len(message.value())
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    return Measurement(read, total, elapsed)


@contextmanager
def broker_process(work: Path) -> Iterator[str]:
    """A one-broker cluster in its own ``mirrorsim up`` process; yields its bootstrap."""
    config = work / "clusters.toml"
    config.write_text(
        f'[cluster.bench]\nbrokers = 1\nhost = "127.0.0.1"\nport = {free_port()}\n'
        f'data_dir = "{work / "data"}"\n'
    )
    command = [str(Path(sys.executable).parent / "mirrorsim"), "up", "--config", str(config)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        for line in process.stdout:
            ready = READY.search(line)
            if ready:
                yield ready.group(1)
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the broker did not start")
        else:
            raise RuntimeError("the broker exited before it was ready")
    finally:
        process.terminate()
        process.wait(START_TIMEOUT_S)


async def _create_topics(bootstrap: str, topics: list[str]) -> None:
    async with Admin(bootstrap) as admin:
        (await admin.create_topics([NewTopic(t, 1, 1) for t in topics])).all()


def run(records: int, record_bytes: int, work: Path) -> dict[str, Measurement]:
    values = make_values(records, record_bytes)
    measured = {
        "baseline produce": baseline_produce(work / "baseline.bin", values),
        "baseline consume": baseline_consume(work / "baseline.bin", records),
    }
    with broker_process(work) as bootstrap:
        asyncio.run(_create_topics(bootstrap, ["aiokafka", "confluent"]))
        measured["aiokafka produce"] = asyncio.run(aiokafka_produce(bootstrap, "aiokafka", values))
        measured["aiokafka consume"] = asyncio.run(aiokafka_consume(bootstrap, "aiokafka", records))
        measured["confluent-kafka produce"] = confluent_produce(bootstrap, "confluent", values)
        measured["confluent-kafka consume"] = confluent_consume(bootstrap, "confluent", records)
    return measured


def summarize(measured: dict[str, Measurement], command: str, record_bytes: int) -> dict[str, Any]:
    rows = []
    for name, m in measured.items():
        baseline = measured["baseline produce" if "produce" in name else "baseline consume"]
        row: dict[str, Any] = {
            "name": name,
            "records": m.records,
            "mb_s": round(m.mb_s, 2),
            "records_s": round(m.records_s),
            "vs_baseline": round(m.mb_s / baseline.mb_s, 4),
        }
        if m.latencies_ms:
            row["p50_ms"] = round(m.percentile_ms(50), 3)
            row["p99_ms"] = round(m.percentile_ms(99), 3)
            row["p50_vs_baseline"] = round(m.percentile_ms(50) / baseline.percentile_ms(50), 1)
        rows.append(row)
    return {"command": command, "record_bytes": record_bytes, "acks": "all", "rows": rows}


def render_markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Client throughput and produce latency",
        "",
        f"Command: `{result['command']}`",
        "",
        f"Records of {result['record_bytes']} bytes, one partition, acks={result['acks']}. "
        "Baseline: the same values written to (flushed per record) and read from a local file.",
        "",
        "| run | records | MB/s | records/s | vs baseline | p50 ms | p99 ms | p50 vs baseline |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['name']} | {row['records']} | {row['mb_s']} | {row['records_s']} | "
            f"{row['vs_baseline']} | {row.get('p50_ms', '')} | {row.get('p99_ms', '')} | "
            f"{row.get('p50_vs_baseline', '')} |"
        )
    return "\n".join([*lines, ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--record-bytes", type=int, default=1_000)
    args = parser.parse_args(argv)
    command = " ".join(
        [".venv/bin/python -m mirrorsim.bench.bench_clients", *(argv or sys.argv[1:])]
    )
    work = Path(tempfile.mkdtemp(prefix="bench-clients-"))
    try:
        measured = run(args.records, args.record_bytes, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = summarize(measured, command, args.record_bytes)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "clients.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "clients.md").write_text(render_markdown(result))
    print(render_markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
