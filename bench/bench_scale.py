"""Partitions per broker: create time, RSS and open descriptors of two single-broker clusters.

Run: .venv/bin/python -m mirrorsim.bench.bench_scale [--topics 20] [--partitions 100]

Two clusters of one broker each run as OS processes (``ProcessCluster``). Each gets the
same topics (CreateTopics, 10 topics per request) and one record per partition; then
every broker's resident memory (``VmRSS``), open descriptors and, among them, open
segment files are read from ``/proc``. The descriptor limit and the segment-file budget
are the ones the broker logs at start (``log.md``, "Open files"). Results go to
``bench/results/scale.json`` and ``scale.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from mirrorsim.broker.cluster import ClusterSpec
from mirrorsim.broker.log.file_handles import budget_for
from mirrorsim.broker.supervisor import ProcessCluster

RESULTS = Path(__file__).parent / "results"
TOPICS_PER_REQUEST = 10
TIMEOUT_S = 600


def create_topics(bootstrap: str, topics: list[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for start in range(0, len(topics), TOPICS_PER_REQUEST):
        chunk = [NewTopic(t, partitions, 1) for t in topics[start : start + TOPICS_PER_REQUEST]]
        for future in admin.create_topics(chunk, request_timeout=TIMEOUT_S).values():
            future.result(TIMEOUT_S)


def produce_one_record_each(bootstrap: str, topics: list[str], partitions: int) -> None:
    failures: list[Any] = []
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 50, "message.timeout.ms": TIMEOUT_S * 1000}
    )
    for topic in topics:
        for partition in range(partitions):
            producer.produce(
                topic,
                value=b"x",
                partition=partition,
                on_delivery=lambda error, _: failures.append(error) if error else None,
            )
        producer.poll(0)
    if producer.flush(TIMEOUT_S) or failures:
        raise RuntimeError(f"{len(failures)} records not delivered: {failures[:1]}")


def process_view(pid: int, data_dir: str) -> dict[str, int]:
    """RSS and descriptors of one broker process, read from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kib = int(status.split("VmRSS:")[1].split()[0])
    targets = []
    for entry in os.listdir(f"/proc/{pid}/fd"):
        try:
            targets.append(os.readlink(f"/proc/{pid}/fd/{entry}"))
        except OSError:
            continue
    limit_line = next(
        line
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines()
        if line.startswith("Max open files")
    )
    soft_limit = int(limit_line.split()[3])
    return {
        "rss_mib": round(rss_kib / 1024),
        "open_fds": len(targets),
        "open_segment_files": sum(1 for t in targets if t.startswith(data_dir)),
        "fd_limit": soft_limit,
        "segment_file_budget": budget_for(soft_limit),
    }


async def run(topic_count: int, partitions: int, root: Path) -> dict[str, Any]:
    topics = [f"scale-{i:04d}" for i in range(topic_count)]
    clusters = [
        ProcessCluster(ClusterSpec(name, root / name), stop_timeout_s=TIMEOUT_S)
        for name in ("source", "destination")
    ]
    rows = []
    for cluster in clusters:
        await cluster.start()
    try:
        for cluster in clusters:
            started = time.perf_counter()
            await asyncio.to_thread(create_topics, cluster.bootstrap, topics, partitions)
            create_s = time.perf_counter() - started
            started = time.perf_counter()
            await asyncio.to_thread(produce_one_record_each, cluster.bootstrap, topics, partitions)
            produce_s = time.perf_counter() - started
            broker = cluster.brokers[1]
            assert broker.pid is not None
            rows.append(
                {
                    "cluster": cluster.name,
                    "create_s": round(create_s, 1),
                    "produce_s": round(produce_s, 1),
                    **process_view(broker.pid, cluster.data_dir(1)),
                }
            )
    finally:
        for cluster in clusters:
            await cluster.stop()
    return {
        "topics": topic_count,
        "partitions_per_topic": partitions,
        "partitions_per_broker": topic_count * partitions,
        "cpus": os.cpu_count(),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "brokers": rows,
    }


def render_markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# Scale: {result['partitions_per_broker']:,} partitions per broker "
        f"({result['topics']} topics x {result['partitions_per_topic']})",
        "",
        "Two single-broker clusters as processes; one record per partition "
        f"({result['cpus']} CPUs, load average {result['load_average']}).",
        "",
        "| cluster | create s | produce s | RSS MiB | open fds | open segment files "
        "| fd limit | segment-file budget |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["brokers"]:
        lines.append(
            f"| {row['cluster']} | {row['create_s']} | {row['produce_s']} | {row['rss_mib']} "
            f"| {row['open_fds']} | {row['open_segment_files']} | {row['fd_limit']} "
            f"| {row['segment_file_budget']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mirrorsim.bench.bench_scale")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=100)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as root:
        result = asyncio.run(run(args.topics, args.partitions, Path(root)))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "scale.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "scale.md").write_text(render_markdown(result))
    print(render_markdown(result))


if __name__ == "__main__":
    main()
