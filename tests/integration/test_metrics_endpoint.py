"""Each broker serves its own Prometheus registry over HTTP; scraped while it runs."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.metrics import http_get, scrape

from mirrorsim.broker.metrics import MirrorFetcherView, PartitionLag, SyncError
from mirrorsim.broker.metrics.broker_metrics import metrics_port
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.coordinator.state_machine import MirrorPartitionState


def test_metrics_port_rules() -> None:
    assert metrics_port(None, 9092) == 10092
    assert metrics_port(None, 0) == 0
    assert metrics_port(0, 9092) is None
    assert metrics_port(7000, 9092) == 7000


async def test_request_metrics_per_api(start_cluster: Callable[..., Any]) -> None:
    cluster = await start_cluster(brokers=2)
    first, second = cluster.brokers
    assert first.metrics.port != second.metrics.port
    async with Admin(bootstrap=first.bootstrap) as admin:
        (await admin.create_topics([NewTopic("orders", 1, 1)])).all()
        await admin.create_topics([NewTopic("orders", 1, 1)])  # TOPIC_ALREADY_EXISTS
    samples = await scrape(first.metrics.port)
    created = samples[
        (
            "kafka_network_request_metrics_errors_total",
            (("error", "TOPIC_ALREADY_EXISTS"), ("request", "CreateTopics")),
        )
    ]
    assert created == 1
    assert (
        samples[
            (
                "kafka_network_request_metrics_errors_total",
                (("error", "NONE"), ("request", "CreateTopics")),
            )
        ]
        == 1
    )
    requests = {
        k: v for k, v in samples.items() if k[0] == "kafka_network_request_metrics_requests_total"
    }
    assert any(dict(labels)["request"] == "CreateTopics" for _, labels in requests)
    assert (
        samples[
            (
                "kafka_network_request_metrics_total_time_seconds_count",
                (("request", "CreateTopics"),),
            )
        ]
        == 2
    )
    assert (
        samples[
            ("kafka_network_request_metrics_request_bytes_total", (("request", "CreateTopics"),))
        ]
        > 0
    )
    other = await scrape(second.metrics.port)
    assert (
        "kafka_network_request_metrics_total_time_seconds_count",
        (("request", "CreateTopics"),),
    ) not in other


async def test_mirror_metrics_read_live_state_at_scrape_time(
    start_cluster: Callable[..., Any],
) -> None:
    broker = (await start_cluster()).brokers[0]
    lags = [PartitionLag("MirrorFetcherThread-1-0-my-mirror", "orders", 0, 3)]
    broker.metrics.mirror.observe_fetchers(
        lambda: MirrorFetcherView(partition_lags=list(lags), failed_partitions_count=1)
    )
    broker.metrics.mirror.observe_partition_states(
        lambda: {MirrorPartitionState.MIRRORING: 4, MirrorPartitionState.FAILED: 1}
    )
    broker.metrics.mirror.record_fetch(
        client_id="MirrorFetcherThread-1-0-my-mirror",
        broker_host="src",
        broker_port=9092,
        mirror="my-mirror",
        size=100,
    )
    broker.metrics.mirror.record_sync_error(SyncError.ACL)
    samples = await scrape(broker.metrics.port)
    client = (("client_id", "MirrorReplica"),)
    assert samples[("kafka_server_mirror_max_lag", client)] == 3
    assert samples[("kafka_server_mirror_failed_partitions", client)] == 1
    assert samples[("kafka_server_mirror_dead_threads", client)] == 0
    assert (
        samples[
            (
                "kafka_server_fetcher_lag_consumer_lag",
                (
                    ("client_id", "MirrorFetcherThread-1-0-my-mirror"),
                    ("partition", "0"),
                    ("topic", "orders"),
                ),
            )
        ]
        == 3
    )
    assert samples[("kafka_server_mirror_mirroring_partition_state", ())] == 4
    assert samples[("kafka_server_mirror_failed_partition_state", ())] == 1
    assert samples[("kafka_server_mirror_stopped_partition_state", ())] == 0
    assert samples[("kafka_server_mirror_acl_sync_error_total", ())] == 1
    assert samples[("kafka_server_mirror_replication_bytes_total", ())] == 100
    fetcher = (
        ("broker_host", "src"),
        ("broker_port", "9092"),
        ("client_id", "MirrorFetcherThread-1-0-my-mirror"),
        ("mirror_name", "my-mirror"),
    )
    assert samples[("kafka_server_fetcher_stats_bytes_total", fetcher)] == 100
    assert samples[("kafka_server_fetcher_stats_requests_total", fetcher)] == 1
    lags[0] = PartitionLag("MirrorFetcherThread-1-0-my-mirror", "orders", 0, 0)
    assert (await scrape(broker.metrics.port))[("kafka_server_mirror_max_lag", client)] == 0


async def test_unknown_paths_and_a_disabled_endpoint(start_cluster: Callable[..., Any]) -> None:
    broker = (await start_cluster()).brokers[0]
    status, _ = await asyncio.to_thread(http_get, f"http://127.0.0.1:{broker.metrics.port}/nope")
    assert status == 404
    disabled = (await start_cluster(name="quiet", configs={"metrics.port": 0})).brokers[0]
    assert disabled.metrics.port is None


@pytest.mark.system
@pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs Debian's prometheus")
async def test_prometheus_scrapes_a_broker(
    start_cluster: Callable[..., Any], free_port: Callable[[], int], wait_for: Any, tmp_path: Path
) -> None:
    broker = (await start_cluster()).brokers[0]
    broker.metrics.mirror.observe_partition_states(lambda: {MirrorPartitionState.MIRRORING: 7})
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: mirrorsim\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{broker.metrics.port}']}}]\n"
    )
    port = free_port()
    process = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    query = urllib.parse.urlencode({"query": "kafka_server_mirror_mirroring_partition_state"})

    async def mirroring_partitions() -> float | None:
        try:
            status, text = await asyncio.to_thread(
                http_get, f"http://127.0.0.1:{port}/api/v1/query?{query}"
            )
        except OSError:
            return None
        results = json.loads(text)["data"]["result"] if status == 200 else []
        return float(results[0]["value"][1]) if results else None

    try:
        assert await wait_for(mirroring_partitions, timeout=60, message="prometheus scrape") == 7
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
