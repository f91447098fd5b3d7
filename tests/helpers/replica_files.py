"""Reading what broker processes hold: consumed values and replica segment bytes."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from mirrorsim.broker.supervisor import ProcessCluster

TOPIC = "kills"


def consume_all(bootstrap: str) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "kills-check", "enable.auto.commit": False}
    )
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        values: list[bytes] = []
        position = 0
        while position < high:
            message = consumer.poll(10)
            assert message is not None, f"stuck at {position} of {high}"
            assert message.error() is None, message.error()
            values.append(message.value())
            position = message.offset() + 1
        return values
    finally:
        consumer.close()


def segment_bytes(cluster: ProcessCluster, broker_id: int) -> bytes:
    directory = Path(cluster.data_dir(broker_id)) / f"{TOPIC}-0"
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))


def replicas_identical(cluster: ProcessCluster) -> bool:
    first = segment_bytes(cluster, 1)
    return bool(first) and all(segment_bytes(cluster, b) == first for b in (2, 3))
