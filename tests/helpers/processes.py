"""Broker-process clusters for system tests: their configs, a starter and metadata reads."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from mirrorsim.broker.cluster import ClusterSpec
from mirrorsim.broker.metadata.models import PartitionAssignment
from mirrorsim.broker.metadata.store import MetadataStore
from mirrorsim.broker.supervisor import ProcessCluster

SYSTEM_CONFIGS: dict[str, Any] = {
    "broker.heartbeat.interval.ms": 200,
    "broker.session.timeout.ms": 2000,
    "metadata.refresh.interval.ms": 100,
    "replica.fetch.wait.max.ms": 100,
    "replica.fetch.backoff.ms": 100,
    "replica.lag.time.max.ms": 3000,
    "shutdown.drain.timeout.ms": 1000,
}


@contextlib.asynccontextmanager
async def process_clusters(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """A starter of broker-process clusters in ``tmp_path``; all are stopped on exit."""
    started: list[ProcessCluster] = []

    async def start(brokers: int = 3, **options: Any) -> ProcessCluster:
        spec = ClusterSpec(
            name="primary", data_dir=tmp_path / "primary", brokers=brokers, configs=SYSTEM_CONFIGS
        )
        cluster = ProcessCluster(spec, **options)
        await cluster.start()
        started.append(cluster)
        return cluster

    try:
        yield start
    finally:
        for cluster in started:
            await cluster.stop()


def partition_row(cluster: ProcessCluster, topic: str, partition: int = 0) -> PartitionAssignment:
    """The partition as the shared metadata database has it right now."""
    store = MetadataStore.open(cluster.spec.effective_metadata_url)
    try:
        return store.topics([topic])[topic].partitions[partition]
    finally:
        store.close()
