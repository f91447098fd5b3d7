"""Client quotas: a real producer and a real consumer held at their configured byte rates.

Run: ``.venv/bin/python -m mirrorsim.bench.bench_quotas [--rate 1000000] [--seconds 60]``

One in-process broker with Kafka's quota windows (``quota.window.num`` 11 of
``quota.window.size.seconds`` 1) and confluent-kafka (librdkafka) clients of 8 KiB
uncompressed records on a one-partition topic. Four phases in one run:

1. baseline producer (client id without a quota) writes a backlog of ``(seconds + 15) *
   rate`` bytes as fast as it can: the machine's unthrottled produce rate;
2. throttled producer: ``producer_byte_rate`` = ``--rate`` on its client id
   (AlterClientQuotas); it produces as fast as it is let for ``--seconds``;
3. baseline consumer (no quota) reads the backlog for a few seconds from the start;
4. throttled consumer: ``consumer_byte_rate`` = ``--rate``; it reads for ``--seconds``.

A throttled phase's rate is the value bytes acknowledged (producer) or received
(consumer) per second over the whole phase, from its first byte to its end. Kafka's rate
over padded windows lets a fresh client send about ten windows' worth at first and then
holds it until that burst has aged out of the 11 windows, so the rate is only meaningful
over several of those 11-second cycles: 60 seconds by default. The rate after the first
15 seconds (``steady``) is reported too. Each throttled rate must be within ±15% of the
configured rate; the unthrottled baseline over the configured rate shows the quota was
the limit. Results go to bench/results/quotas.json and quotas.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.client import Admin, NewTopic, QuotaAlteration, quota_entity

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TOPIC = "quota-bench"
RECORD_BYTES = 8192
TOLERANCE = 0.15
STEADY_AFTER_S = 15.0
BASELINE_CONSUME_S = 8.0
MAX_QUEUED = 256
"""Records a producer keeps queued in librdkafka: enough to always have a request ready."""


@dataclass(frozen=True)
class Phase:
    """Bytes acknowledged or received over time: (seconds since the phase began, bytes)."""

    events: list[tuple[float, int]]
    seconds: float

    def rate(self, after_s: float = 0.0) -> float:
        counted = sum(n for t, n in self.events if after_s <= t <= self.seconds)
        return counted / (self.seconds - after_s)

    @property
    def total(self) -> int:
        return sum(n for _, n in self.events)


def produce(bootstrap: str, client_id: str, *, seconds: float | None, total: int | None) -> Phase:
    """Produce as fast as the broker lets this client id, until ``seconds`` or ``total``."""
    events: list[tuple[float, int]] = []
    started = time.monotonic()

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            events.append((time.monotonic() - started, len(message.value())))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "linger.ms": 5,
            "batch.size": 65536,
            "acks": 1,
        }
    )
    value = os.urandom(RECORD_BYTES)
    sent = 0
    while True:
        elapsed = time.monotonic() - started
        if (seconds is not None and elapsed >= seconds) or (total is not None and sent >= total):
            break
        if len(producer) >= MAX_QUEUED:
            producer.poll(0.005)
            continue
        producer.produce(TOPIC, value, on_delivery=delivered)
        sent += RECORD_BYTES
        producer.poll(0)
    ended = time.monotonic() - started
    producer.flush(120)
    return Phase(events, ended if seconds is not None else time.monotonic() - started)


def consume(bootstrap: str, client_id: str, seconds: float) -> Phase:
    """Read the topic from its start for ``seconds``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "group.id": client_id,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    events: list[tuple[float, int]] = []
    started = time.monotonic()
    try:
        while (elapsed := time.monotonic() - started) < seconds:
            for message in consumer.consume(1000, timeout=min(0.2, seconds - elapsed)):
                if message.error() is None:
                    events.append((time.monotonic() - started, len(message.value())))
    finally:
        consumer.close()
    return Phase(events, seconds)


async def _set_quota(bootstrap: str, client_id: str, key: str, rate: int) -> None:
    async with Admin(bootstrap=bootstrap) as admin:
        alteration = QuotaAlteration(quota_entity(client_id=client_id), {key: float(rate)})
        (await admin.alter_client_quotas([alteration])).all()


async def run(rate: int, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        cluster = ClusterRunner(ClusterSpec(name="quotas", data_dir=Path(tmp) / "quotas"))
        await cluster.start()
        try:
            bootstrap = cluster.bootstrap
            async with Admin(bootstrap=bootstrap) as admin:
                (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
            backlog = int((seconds + STEADY_AFTER_S) * rate)
            base_produce = await asyncio.to_thread(
                produce, bootstrap, "bench-free-producer", seconds=None, total=backlog
            )
            await _set_quota(bootstrap, "bench-capped-producer", "producer_byte_rate", rate)
            capped_produce = await asyncio.to_thread(
                produce, bootstrap, "bench-capped-producer", seconds=seconds, total=None
            )
            base_consume = await asyncio.to_thread(
                consume, bootstrap, "bench-free-consumer", BASELINE_CONSUME_S
            )
            await _set_quota(bootstrap, "bench-capped-consumer", "consumer_byte_rate", rate)
            capped_consume = await asyncio.to_thread(
                consume, bootstrap, "bench-capped-consumer", seconds
            )
        finally:
            await cluster.stop()
    return {
        "rate_bytes_per_s": rate,
        "seconds": seconds,
        "record_bytes": RECORD_BYTES,
        "quota_window_num": 11,
        "quota_window_size_seconds": 1,
        "producer": _summary(rate, base_produce, capped_produce),
        "consumer": _summary(rate, base_consume, capped_consume),
    }


def _summary(rate: int, baseline: Phase, capped: Phase) -> dict[str, Any]:
    measured = capped.rate()
    deviation = measured / rate - 1
    return {
        "baseline_bytes_per_s": round(baseline.rate()),
        "throttled_bytes_per_s": round(measured),
        "steady_bytes_per_s": round(capped.rate(STEADY_AFTER_S)),
        "deviation": round(deviation, 4),
        "within_tolerance": abs(deviation) <= TOLERANCE,
        "baseline_over_configured": round(baseline.rate() / rate, 2),
        "throttled_total_bytes": capped.total,
    }


def _markdown(result: dict[str, Any]) -> str:
    mb = 1_000_000
    lines = [
        "# Client quotas",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}. Command: `.venv/bin/python -m "
        f"mirrorsim.bench.bench_quotas --rate {result['rate_bytes_per_s']} --seconds "
        f"{result['seconds']:g}`. confluent-kafka (librdkafka) clients, "
        f"{result['record_bytes']} B records, quota windows 11 x 1 s (Kafka's defaults).",
        "",
        "| client | configured MB/s | unthrottled MB/s | throttled MB/s | deviation | "
        f"after {STEADY_AFTER_S:g} s MB/s | within ±15% |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in ("producer", "consumer"):
        r = result[name]
        lines.append(
            f"| {name} | {result['rate_bytes_per_s'] / mb:.2f} | "
            f"{r['baseline_bytes_per_s'] / mb:.2f} ({r['baseline_over_configured']:.1f}x) | "
            f"{r['throttled_bytes_per_s'] / mb:.2f} | {r['deviation']:+.1%} | "
            f"{r['steady_bytes_per_s'] / mb:.2f} | {r['within_tolerance']} |"
        )
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1_000_000, help="bytes per second")
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    logging.getLogger("mirrorsim").setLevel(logging.WARNING)
    result = asyncio.run(run(args.rate, args.seconds))
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "quotas.json").write_text(json.dumps(result, indent=2) + "\n")
    markdown = _markdown(result)
    (RESULTS_DIR / "quotas.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()
