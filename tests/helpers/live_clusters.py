"""Two in-process clusters for the live verification tests, on an event loop of their own.

Spark jobs block the calling thread while Python workers (other processes) fetch from
the brokers, so the brokers cannot share the test's thread: they run on a loop in a
background thread, and the tests hand it coroutines with ``run``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from aiokafka import AIOKafkaProducer

from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.drills.polling import wait_until as poll_until

T = TypeVar("T")
MIRROR = "verify-mirror"
MIRROR_CONFIGS = {"mirror.topic.num.partitions": 3, "mirror.fetch.max.wait.ms": 50}
# Group offsets of these groups follow the source; the tests' own groups are left alone.
SYNCED_GROUPS = "synced-.*"
CALL_TIMEOUT_S = 60
WAIT_TIMEOUT_S = 30
POLL_INTERVAL_S = 0.02


class ClusterThread:
    """Clusters started, driven and stopped on one background event loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self._runners: list[ClusterRunner] = []

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(CALL_TIMEOUT_S)

    def start_cluster(self, name: str, data_dir: Path) -> ClusterRunner:
        runner = ClusterRunner(
            ClusterSpec(name=name, data_dir=data_dir / name, port=0, configs=MIRROR_CONFIGS)
        )
        self.run(runner.start())
        self._runners.append(runner)
        return runner

    def close(self) -> None:
        for runner in reversed(self._runners):
            self.run(runner.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(CALL_TIMEOUT_S)
        self.loop.close()


def partition_log(cluster: ClusterRunner, topic: str, partition: int) -> Any:
    return cluster.brokers[0].replica_manager.partition(topic, partition).log


def log_end_offset(cluster: ClusterRunner, topic: str, partition: int) -> int:
    try:
        return int(partition_log(cluster, topic, partition).log_end_offset)
    except Exception:
        return -1


def mirror_state(cluster: ClusterRunner, topic: str, partition: int) -> str | None:
    status = cluster.brokers[0].mirrors.partitions.get((topic, partition))
    return None if status is None else status.state.name


async def produce(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    tag: str,
    partitions: int,
    compression: str | None = "gzip",
) -> None:
    """``count`` keyed records spread over ``partitions``, several per batch (linger)."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks=-1, linger_ms=5, compression_type=compression
    )
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic, f"{tag}-{i}".encode() * 4, key=f"k{i}".encode(), partition=i % partitions
            )
            for i in range(count)
        ]
        for future in futures:
            await future
    finally:
        await producer.stop()


async def wait_until(condition: Callable[[], bool | Awaitable[bool]], what: str) -> None:
    """Poll ``condition`` (plain or async) on the clusters' loop until it holds; fail
    after a timeout."""
    await poll_until(condition, WAIT_TIMEOUT_S, what, retry_on=(), interval=POLL_INTERVAL_S)
