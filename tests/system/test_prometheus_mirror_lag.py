"""Debian's Prometheus scrapes a mirroring broker and reads a partition's lag back.

The lag is made stable: the source holds an open transaction (the mirror fetches
read_committed, so it stops at the LSO while the source high watermark is past it), then
the partition is paused.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs Debian's prometheus"),
]

MIRROR = "dr"
TOPIC = "orders"
COMMITTED = 3
PENDING = 5
CONFIGS = {"mirror.fetch.max.wait.ms": 50}
LAG_QUERY = f'kafka_server_fetcher_lag_consumer_lag{{topic="{TOPIC}",partition="0"}}'


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


@pytest.fixture
def prometheus(free_port: Callable[[], int], tmp_path: Path) -> Iterator[Callable[[int], int]]:
    """``start(target_port)`` runs Prometheus scraping ``target_port`` every second; its
    API port is returned. Stopped at teardown."""
    processes: list[subprocess.Popen[bytes]] = []

    def start(target_port: int) -> int:
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: mirrorsim\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{target_port}']}}]\n"
        )
        port = free_port()
        processes.append(
            subprocess.Popen(
                [
                    "prometheus",
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        return port

    yield start
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def query(port: int, promql: str) -> list[dict[str, Any]] | None:
    """The instant vector ``promql`` selects now, None while Prometheus is not answering."""
    url = f"http://127.0.0.1:{port}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    try:
        status, text = await asyncio.to_thread(http_get, url)
    except OSError:
        return None
    return json.loads(text)["data"]["result"] if status == 200 else None


async def described(bootstrap: str) -> tuple[int, str] | None:
    """DescribeMirrors' (LAG, STATE) of the mirrored partition."""
    async with Admin(bootstrap=bootstrap) as admin:
        described = await admin.describe_mirrors([MIRROR])
    found = [p for p in described[MIRROR].partitions if (p.topic, p.partition) == (TOPIC, 0)]
    return (found[0].lag, found[0].state) if found else None


async def test_prometheus_reads_the_lag_of_a_paused_mirror_partition(
    start_cluster: Callable[..., Any], wait_for: Any, prometheus: Callable[[int], int]
) -> None:
    source = await start_cluster("primary", configs=CONFIGS)
    destination = await start_cluster("backup", configs=CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()
    plain = AIOKafkaProducer(bootstrap_servers=source.bootstrap, acks=-1)
    txn = AIOKafkaProducer(bootstrap_servers=source.bootstrap, transactional_id="lag-probe")
    await plain.start()
    await txn.start()
    try:
        for i in range(COMMITTED):
            await plain.send_and_wait(TOPIC, f"committed-{i}".encode(), partition=0)
        await txn.begin_transaction()
        for i in range(PENDING):
            await txn.send_and_wait(TOPIC, f"pending-{i}".encode(), partition=0)
        async with Admin(bootstrap=destination.bootstrap) as admin:
            await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
            (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()

        async def lag_is_pending() -> bool:
            return await described(destination.bootstrap) == (PENDING, "MIRRORING")

        await wait_for(lag_is_pending, timeout=30, message="the mirror to stop at the LSO")
        async with Admin(bootstrap=destination.bootstrap) as admin:
            (await admin.pause_mirror_topics(MIRROR, [TOPIC])).all()

        async def paused() -> bool:
            return await described(destination.bootstrap) == (PENDING, "PAUSED")

        await wait_for(paused, timeout=30, message="the partition to be paused")

        api_port = prometheus(destination.brokers[0].metrics.port)

        async def scraped_lag() -> float | None:
            results = await query(api_port, LAG_QUERY)
            return float(results[0]["value"][1]) if results else None

        assert await wait_for(scraped_lag, timeout=60, message="prometheus to scrape") == PENDING
        series = await query(api_port, LAG_QUERY)
        assert series is not None and series[0]["metric"]["client_id"].endswith(f"-{MIRROR}")
        paused_count = await query(api_port, "kafka_server_mirror_paused_partition_state")
        assert paused_count is not None and float(paused_count[0]["value"][1]) == 1
    finally:
        await txn.stop()
        await plain.stop()
