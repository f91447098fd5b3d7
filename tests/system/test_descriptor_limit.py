"""A broker process under a low ``RLIMIT_NOFILE``: more partitions than descriptors work
through the segment-file LRU, and a broker with no descriptor left answers with Kafka
errors, keeps its connections and stops on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from mirrorsim.client.connection import BrokerConnection
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.records import Record, build_batch

pytestmark = [pytest.mark.system, pytest.mark.slow]

CREATE_TOPICS, PRODUCE = 19, 0
READY_TIMEOUT_S = 60
STOP_BOUND_S = 30
"""SIGTERM to exit, with a drain timeout of 1 s: closing the logs is the rest."""
CONFIGS = {"metadata.refresh.interval.ms": 100, "shutdown.drain.timeout.ms": 1000}


class BrokerProcess:
    """``python -m mirrorsim.broker.process`` with ``RLIMIT_NOFILE`` set to ``limit``."""

    def __init__(self, root: Path, limit: int) -> None:
        def limit_descriptors() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        self.data_dir = root / "data"
        self.stderr_path = root / "broker.stderr"
        with open(self.stderr_path, "w") as stderr:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "mirrorsim.broker.process",
                    "--broker-id",
                    "1",
                    "--data-dir",
                    str(self.data_dir),
                    "--metadata-url",
                    f"sqlite:///{root / 'metadata.db'}",
                    "--configs",
                    json.dumps(CONFIGS),
                ],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                preexec_fn=limit_descriptors,
            )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert "ready bootstrap=" in line, self.stderr()
        self.bootstrap = line.split("bootstrap=")[1].strip()

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def open_fds(self) -> list[str]:
        targets = []
        for entry in os.listdir(f"/proc/{self.process.pid}/fd"):
            try:
                targets.append(os.readlink(f"/proc/{self.process.pid}/fd/{entry}"))
            except OSError:
                continue
        return targets

    def segment_fds(self) -> int:
        return sum(1 for t in self.open_fds() if t.startswith(str(self.data_dir)))

    def terminate(self) -> float:
        """SIGTERM; the seconds until the process exited (fails past ``STOP_BOUND_S``)."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(STOP_BOUND_S) == 0, self.stderr()
        return time.monotonic() - started

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator[Any]:
    started: list[BrokerProcess] = []

    def start(limit: int) -> BrokerProcess:
        broker = BrokerProcess(tmp_path, limit)
        started.append(broker)
        return broker

    yield start
    for broker in started:
        broker.kill()


LIMIT = 160
PARTITIONS = 300
"""Each partition's log is a segment file: twice as many as the whole descriptor limit."""


def test_more_partitions_than_descriptors_produce_and_fetch(start_broker: Any) -> None:
    broker = start_broker(LIMIT)
    assert f"soft {LIMIT} hard {LIMIT}; segment files keep at most {LIMIT // 2}" in (
        broker.stderr()
    )
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 60_000})
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("many", PARTITIONS, 1)]).values():
        future.result(60)
    failures: list[Any] = []
    for partition in range(PARTITIONS):
        producer.produce(
            "many",
            value=b"value-%d" % partition,
            partition=partition,
            on_delivery=lambda error, _: failures.append(error) if error else None,
        )
    assert producer.flush(90) == 0
    assert failures == []
    assert broker.segment_fds() <= LIMIT // 2
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "g", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("many", p, 0) for p in range(PARTITIONS)])
    seen: dict[int, bytes] = {}
    deadline = time.monotonic() + 90
    while len(seen) < PARTITIONS and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is not None and message.error() is None:
            seen[message.partition()] = message.value()
    consumer.close()
    assert seen == {p: b"value-%d" % p for p in range(PARTITIONS)}
    assert broker.segment_fds() <= LIMIT // 2
    broker.terminate()
    assert "Traceback" not in broker.stderr()


async def test_a_broker_without_descriptors_answers_with_errors_and_stops(
    start_broker: Any,
) -> None:
    broker = start_broker(64)
    host, port = broker.bootstrap.rsplit(":", 1)
    conn = BrokerConnection(host, int(port), client_id="at-the-limit")
    await conn.connect()
    # a broker that served these requests before: their message classes are imported
    await conn.send(create_topics_request("starved", 8, validate_only=True))
    await conn.send(produce_request("starved", 8))
    hogs = await hog_descriptors(broker, host, int(port))
    try:
        created = await conn.send(create_topics_request("starved", 8))
        assert [t.error_code for t in created.topics] == [ErrorCode.NONE]
        produced = await conn.send(produce_request("starved", 8))
        codes = {p.error_code for t in produced.responses for p in t.partition_responses}
        assert codes == {ErrorCode.KAFKA_STORAGE_ERROR}
        assert conn.connected
        assert "partitions offline (KAFKA_STORAGE_ERROR)" in broker.stderr()
        assert "cannot accept connections (Too many open files)" in broker.stderr()
    finally:
        for writer in hogs:
            writer.close()
        await conn.close()
    assert broker.terminate() < STOP_BOUND_S
    assert "Traceback" not in broker.stderr()


async def hog_descriptors(
    broker: BrokerProcess, host: str, port: int
) -> list[asyncio.StreamWriter]:
    """Connect until the broker holds as many descriptors as its limit allows."""
    writers = []
    deadline = time.monotonic() + 30
    while len(broker.open_fds()) < 64:
        assert time.monotonic() < deadline, broker.open_fds()
        _, writer = await asyncio.open_connection(host, port)
        writers.append(writer)
        await asyncio.sleep(0.01)
    return writers


def create_topics_request(name: str, partitions: int, *, validate_only: bool = False) -> Any:
    topic = {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": 1,
        "assignments": [],
        "configs": [],
    }
    return build_request(
        CREATE_TOPICS,
        7,
        {"topics": [topic], "timeout": timedelta(seconds=10), "validate_only": validate_only},
    )


def produce_request(topic: str, partitions: int) -> Any:
    records = build_batch([Record(0, 1_000, b"k", b"v")]).data
    return build_request(
        PRODUCE,
        9,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout": timedelta(seconds=10),
            "topic_data": [
                {
                    "name": topic,
                    "partition_data": [{"index": p, "records": records} for p in range(partitions)],
                }
            ],
        },
    )
