"""Share consumers (KIP-932) against a classic consumer reading the same records.

Run: ``.venv/bin/python -m mirrorsim.bench.bench_share_groups [--records N]``

One broker in its own ``mirrorsim up`` process, one topic of three partitions, records of
``--record-bytes``. The baseline is confluent-kafka's classic `Consumer` reading them all
from assigned partitions (no group join, whose initial rebalance delay would dominate);
then one and two `ShareConsumer`s (implicit acknowledgement: each poll's records are
accepted by the next poll) read the same records under a share group that starts at the
earliest offset. A share consumer does more per record than a classic one: the broker
acquires each record under a lock and stores every acknowledgement in the metadata
database before answering, so the ratio shows what that costs.
Results go to bench/results/share_groups.json and share_groups.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from mirrorsim.bench.bench_clients import broker_process

RESULTS = Path(__file__).resolve().parent / "results"
TOPIC = "share-bench"
PARTITIONS = 3
TIMEOUT_S = 300.0


def prepare(bootstrap: str, records: int, record_bytes: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        future.result(timeout=TIMEOUT_S)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    value = os.urandom(record_bytes)
    for i in range(records):
        producer.produce(TOPIC, value=value, partition=i % PARTITIONS)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0


def earliest(bootstrap: str, group: str) -> None:
    resource = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry(
                "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
            )
        ],
    )
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=TIMEOUT_S)


def classic_seconds(bootstrap: str, records: int) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"classic-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    read = 0
    try:
        start = time.perf_counter()
        while read < records:
            read += sum(1 for m in consumer.consume(5000, timeout=1.0) if m.error() is None)
        return time.perf_counter() - start
    finally:
        consumer.close()


def share_seconds(bootstrap: str, records: int, members: int) -> float:
    """Wall time until ``members`` share consumers together have read every record."""
    group = f"share-{uuid.uuid4().hex}"
    earliest(bootstrap, group)
    read = [0]
    lock = threading.Lock()
    done = threading.Event()

    def member() -> None:
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        consumer.subscribe([TOPIC])
        try:
            while not done.is_set():
                got = sum(1 for m in consumer.poll(1.0) if m.error() is None)
                with lock:
                    read[0] += got
                    if read[0] >= records:
                        done.set()
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, daemon=True) for _ in range(members)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    if not done.wait(TIMEOUT_S):
        raise RuntimeError(f"{members} share consumers read {read[0]} of {records}")
    elapsed = time.perf_counter() - start
    for thread in threads:
        thread.join(TIMEOUT_S)
    return elapsed


def run(records: int, record_bytes: int, work: Path) -> dict[str, Any]:
    with broker_process(work) as bootstrap:
        prepare(bootstrap, records, record_bytes)
        timings = {
            "classic consumer": classic_seconds(bootstrap, records),
            "1 share consumer": share_seconds(bootstrap, records, 1),
            "2 share consumers": share_seconds(bootstrap, records, 2),
        }
    megabytes = records * record_bytes / 1e6
    baseline = timings["classic consumer"]
    return {
        "records": records,
        "record_bytes": record_bytes,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "rows": [
            {
                "name": name,
                "seconds": round(seconds, 3),
                "records_s": round(records / seconds),
                "mb_s": round(megabytes / seconds, 2),
                "vs_classic": round(baseline / seconds, 3),
            }
            for name, seconds in timings.items()
        ],
    }


def render_markdown(result: dict[str, Any], command: str) -> str:
    lines = [
        "# Share consumers against a classic consumer",
        "",
        f"Command: `{command}`",
        "",
        f"{result['records']} records of {result['record_bytes']} bytes, three partitions, "
        "one broker process; confluent-kafka 2.16. Throughput relative to the classic "
        f"consumer of the same run. Load average after the run: {result['load_average_1m']}.",
        "",
        "| reader | seconds | records/s | MB/s | vs classic |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['name']} | {row['seconds']} | {row['records_s']} | {row['mb_s']} | "
            f"{row['vs_classic']} |"
        )
    return "\n".join([*lines, ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--record-bytes", type=int, default=1_000)
    args = parser.parse_args(argv)
    command = " ".join(
        [".venv/bin/python -m mirrorsim.bench.bench_share_groups", *(argv or sys.argv[1:])]
    )
    work = Path(tempfile.mkdtemp(prefix="bench-share-"))
    try:
        result = run(args.records, args.record_bytes, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "share_groups.json").write_text(
        json.dumps({"command": command, **result}, indent=2) + "\n"
    )
    (RESULTS / "share_groups.md").write_text(render_markdown(result, command))
    print(render_markdown(result, command))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
