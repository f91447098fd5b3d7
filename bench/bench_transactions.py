"""Transactional produce throughput against non-transactional produce, same broker, same run.

Run: .venv/bin/python -m mirrorsim.bench.bench_transactions [--transactions 100]

One in-process broker, one aiokafka producer per case. For each transaction size k
(1, 10, 100 records) the transactional case runs ``--transactions`` transactions of k
records (begin, k sends, commit: AddPartitionsToTxn, Produce, EndTxn and the marker
write per transaction); the baseline sends the same records with an idempotent,
non-transactional producer and waits for them every k records (a flush), so both cases
wait for the broker equally often and the ratio shows what the transaction protocol
costs on this machine. Records are 100 bytes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec

RESULTS = Path(__file__).parent / "results"
SIZES = (1, 10, 100)
VALUE = b"v" * 100


async def baseline(bootstrap: str, topic: str, size: int, groups: int) -> float:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
    await producer.start()
    try:
        start = time.perf_counter()
        for _ in range(groups):
            for _ in range(size):
                await producer.send(topic, VALUE)
            await producer.flush()
        return time.perf_counter() - start
    finally:
        await producer.stop()


async def transactional(bootstrap: str, topic: str, size: int, groups: int) -> float:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=f"bench-{topic}-{size}"
    )
    await producer.start()
    try:
        start = time.perf_counter()
        for _ in range(groups):
            async with producer.transaction():
                for _ in range(size):
                    await producer.send(topic, VALUE)
        return time.perf_counter() - start
    finally:
        await producer.stop()


async def run(transactions: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-txn-"))
    cases: list[dict[str, Any]] = []
    try:
        async with ClusterRunner(ClusterSpec(name="bench", data_dir=work, brokers=1)) as cluster:
            admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap)
            await admin.start()
            try:
                await admin.create_topics(
                    [NewTopic(f"{kind}-{k}", 1, 1) for kind in ("plain", "txn") for k in SIZES]
                )
            finally:
                await admin.close()
            for size in SIZES:
                records = size * transactions
                plain_s = await baseline(cluster.bootstrap, f"plain-{size}", size, transactions)
                txn_s = await transactional(cluster.bootstrap, f"txn-{size}", size, transactions)
                cases.append(
                    {
                        "records_per_transaction": size,
                        "transactions": transactions,
                        "records": records,
                        "baseline_records_per_s": round(records / plain_s, 1),
                        "transactional_records_per_s": round(records / txn_s, 1),
                        "transactional_vs_baseline": round(plain_s / txn_s, 3),
                    }
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"cases": cases}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transactions", type=int, default=100)
    args = parser.parse_args(argv)
    result = {
        "command": " ".join(
            [
                ".venv/bin/python -m mirrorsim.bench.bench_transactions",
                *(sys.argv[1:] if argv is None else argv),
            ]
        ),
        "record_bytes": len(VALUE),
        **asyncio.run(run(args.transactions)),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "transactions.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "transactions.md").write_text(render_markdown(result))
    print(render_markdown(result))
    return 0


def render_markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Transactional produce throughput",
        "",
        f"Command: `{result['command']}`",
        "",
        "Baseline: the same records from an idempotent, non-transactional aiokafka producer,",
        "flushed every k records. Ratio > 1 would mean transactions are faster.",
        "",
        "| records per transaction (k) | transactions | baseline records/s "
        "| transactional records/s | transactional / baseline |",
        "|---:|---:|---:|---:|---:|",
    ]
    for case in result["cases"]:
        lines.append(
            f"| {case['records_per_transaction']} | {case['transactions']} "
            f"| {case['baseline_records_per_s']} | {case['transactional_records_per_s']} "
            f"| {case['transactional_vs_baseline']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
