"""Replication cost and failover time on three broker processes.

Run: .venv/bin/python -m mirrorsim.bench.bench_replication [--messages 20000] [--kills 5]

1. Produce throughput with confluent-kafka (acks=all, idempotent) to an RF=1 topic (the
   baseline) and to an RF=3 topic with min.insync.replicas=2, in the same run on the same
   cluster; the ratio is what follower replication costs.
2. Failover: with the producer idle and everything acknowledged, SIGKILL the partition
   leader, then send probe records until one is acknowledged (by the new leader). The
   time from the kill to that acknowledgement includes the session timeout the
   controller waits before it declares the broker dead, so it is reported next to it.
   The killed broker is restarted and back in the ISR before the next kill.
3. Metadata propagation: on three in-process brokers with the default
   ``metadata.refresh.interval.ms``, a leader change is written to the store the way the
   controller writes it, at a random phase of the brokers' refresh timers; the time until
   every broker has applied it (the slowest one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Producer

from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.broker.controller import PartitionWriter
from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.broker.metadata.store import MetadataStore
from mirrorsim.broker.supervisor import ProcessCluster
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.drills.polling import wait_until

RESULTS = Path(__file__).parent / "results"
CONFIGS: dict[str, Any] = {
    "broker.heartbeat.interval.ms": 200,
    "broker.session.timeout.ms": 2000,
    "metadata.refresh.interval.ms": 100,
    "replica.fetch.wait.max.ms": 100,
    "replica.fetch.backoff.ms": 100,
    "replica.lag.time.max.ms": 5000,
    "shutdown.drain.timeout.ms": 1000,
}
VALUE = b"x" * 200


def producer(bootstrap: str) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "retry.backoff.ms": 20,
            "retry.backoff.max.ms": 100,
            "message.timeout.ms": 120_000,
        }
    )


def throughput(bootstrap: str, topic: str, messages: int) -> float:
    """Messages per second acknowledged with acks=all."""
    client = producer(bootstrap)
    acked = 0

    def delivered(error: KafkaError | None, _message: Any) -> None:
        nonlocal acked
        if error is None:
            acked += 1

    client.produce(topic, VALUE, on_delivery=delivered)
    client.flush(60)
    acked = 0
    started = time.perf_counter()
    for _ in range(messages):
        while True:
            try:
                client.produce(topic, VALUE, on_delivery=delivered)
                break
            except BufferError:
                client.poll(0.01)
        client.poll(0)
    client.flush(120)
    elapsed = time.perf_counter() - started
    if acked != messages:
        raise RuntimeError(f"{topic}: {acked} of {messages} acknowledged")
    return messages / elapsed


def partition_row(cluster: ProcessCluster, topic: str) -> PartitionAssignment:
    store = MetadataStore.open(cluster.spec.effective_metadata_url)
    try:
        return store.topics([topic])[topic].partitions[0]
    finally:
        store.close()


def first_ack_after(client: Producer, topic: str, timeout: float) -> float:
    """Send probes until one is acknowledged; the monotonic time of that acknowledgement."""
    acked_at: list[float] = []

    def delivered(error: KafkaError | None, _message: Any) -> None:
        if error is None and not acked_at:
            acked_at.append(time.monotonic())

    deadline = time.monotonic() + timeout
    while not acked_at:
        if time.monotonic() > deadline:
            raise TimeoutError("no acknowledgement after the kill")
        client.produce(topic, b"probe", on_delivery=delivered)
        client.poll(0.01)
    return acked_at[0]


async def failover_times(cluster: ProcessCluster, topic: str, kills: int) -> list[float]:
    client = producer(cluster.bootstrap)
    client.produce(topic, b"warm-up")
    client.flush(60)
    times = []
    for _ in range(kills):
        await wait_until(lambda: len(partition_row(cluster, topic).isr) == 3, 60, "full ISR")
        if client.flush(60):
            raise RuntimeError("records left before the kill")
        leader = partition_row(cluster, topic).leader
        killed_at = time.monotonic()
        await cluster.kill(leader, signal.SIGKILL)
        acked_at = await asyncio.to_thread(first_ack_after, client, topic, 60)
        times.append(acked_at - killed_at)
        client.flush(60)
        await cluster.restart(leader)
    return times


def applied(cluster: ClusterRunner, leader_epoch: int) -> bool:
    """Every broker hosts partition moves-0 at ``leader_epoch``."""
    for broker in cluster.brokers:
        hosted = [p for p in broker.replica_manager.partitions() if p.topic == "moves"]
        if not hosted or hosted[0].leader_epoch != leader_epoch:
            return False
    return True


async def propagation_times(data_dir: Path, samples: int) -> tuple[int, list[float]]:
    """(refresh interval, seconds from a leader-change write until all brokers applied it)."""
    spec = ClusterSpec(name="propagation", data_dir=data_dir, brokers=3)
    async with ClusterRunner(spec) as cluster:
        first = cluster.brokers[0]
        await first.controller.create_topic("moves", assignments={0: [1, 2, 3]})
        writer = PartitionWriter(first.store.engine)
        await wait_until(lambda: applied(cluster, 0), 30, "topic on every broker")
        interval_s = int(first.config("metadata.refresh.interval.ms")) / 1000
        times = []
        for _ in range(samples):
            await asyncio.sleep(random.uniform(0, interval_s))
            current = (await asyncio.to_thread(first.store.topics, ["moves"]))["moves"]
            row = current.partitions[0]
            moved = PartitionAssignment(
                0,
                row.replicas,
                row.isr[(row.isr.index(row.leader) + 1) % 3],
                row.leader_epoch + 1,
                row.isr,
            )
            written_at = time.monotonic()
            await asyncio.to_thread(writer.compare_and_set, "moves", row, moved)
            while not applied(cluster, moved.leader_epoch):
                await asyncio.sleep(0.001)
            times.append(time.monotonic() - written_at)
        return int(first.config("metadata.refresh.interval.ms")), times


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def run(messages: int, kills: int, data_dir: Path) -> dict[str, Any]:
    spec = ClusterSpec(name="bench", data_dir=data_dir, brokers=3, configs=CONFIGS)
    async with ProcessCluster(spec) as cluster:
        async with Admin(bootstrap=cluster.bootstrap) as admin:
            (
                await admin.create_topics(
                    [
                        NewTopic("rf1", replica_assignments={0: [1]}),
                        NewTopic(
                            "rf3",
                            replica_assignments={0: [1, 2, 3]},
                            configs={"min.insync.replicas": "2"},
                        ),
                        NewTopic(
                            "failover",
                            replica_assignments={0: [1, 2, 3]},
                            configs={"min.insync.replicas": "2"},
                        ),
                    ]
                )
            ).all()
        await wait_until(lambda: len(partition_row(cluster, "rf3").isr) == 3, 60, "rf3 ISR")
        rf1 = await asyncio.to_thread(throughput, cluster.bootstrap, "rf1", messages)
        rf3 = await asyncio.to_thread(throughput, cluster.bootstrap, "rf3", messages)
        times = await failover_times(cluster, "failover", kills)
    refresh_ms, propagation = await propagation_times(data_dir / "propagation", 20)
    return {
        "messages": messages,
        "value_bytes": len(VALUE),
        "throughput_msgs_per_s": {"rf1_acks_all": round(rf1, 1), "rf3_acks_all": round(rf3, 1)},
        "rf3_vs_rf1": round(rf3 / rf1, 3),
        "failover": {
            "kills": kills,
            "broker.session.timeout.ms": CONFIGS["broker.session.timeout.ms"],
            "kill_to_first_ack_ms": [round(t * 1000) for t in times],
            "p50_ms": round(percentile(times, 0.5) * 1000),
            "p99_ms": round(percentile(times, 0.99) * 1000),
        },
        "metadata_propagation": {
            "metadata.refresh.interval.ms": refresh_ms,
            "samples": len(propagation),
            "p50_ms": round(percentile(propagation, 0.5) * 1000),
            "p99_ms": round(percentile(propagation, 0.99) * 1000),
        },
    }


def markdown(result: dict[str, Any], command: str) -> str:
    tp = result["throughput_msgs_per_s"]
    fo = result["failover"]
    mp = result["metadata_propagation"]
    return "\n".join(
        [
            "# Replication throughput and leader failover",
            "",
            f"Command: `{command}`",
            "",
            f"Three broker processes; {result['messages']} records of "
            f"{result['value_bytes']} bytes, confluent-kafka, idempotent, acks=all.",
            "",
            "| topic | msgs/s | vs baseline |",
            "|---|---:|---:|",
            f"| RF=1 (baseline) | {tp['rf1_acks_all']} | 1.0 |",
            f"| RF=3, min.insync.replicas=2 | {tp['rf3_acks_all']} | {result['rf3_vs_rf1']} |",
            "",
            f"Leader SIGKILL to first acknowledged produce on the new leader, {fo['kills']} "
            f"kills, broker.session.timeout.ms={fo['broker.session.timeout.ms']}:",
            f"p50 {fo['p50_ms']} ms, p99 {fo['p99_ms']} ms "
            f"(each: {', '.join(str(t) for t in fo['kill_to_first_ack_ms'])} ms).",
            "",
            f"Metadata propagation (a partition change written to the store until all three "
            f"brokers applied it), {mp['samples']} samples, "
            f"metadata.refresh.interval.ms={mp['metadata.refresh.interval.ms']}: "
            f"p50 {mp['p50_ms']} ms, p99 {mp['p99_ms']} ms.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mirrorsim.bench.bench_replication")
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--kills", type=int, default=5)
    args = parser.parse_args(argv)
    command = ".venv/bin/python -m mirrorsim.bench.bench_replication " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    data_dir = Path(tempfile.mkdtemp(prefix="bench-replication-"))
    try:
        result = asyncio.run(run(args.messages, args.kills, data_dir))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    result["command"] = command.strip()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "replication.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "replication.md").write_text(markdown(result, command.strip()))
    print(markdown(result, command.strip()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
