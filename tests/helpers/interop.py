"""The interop workload and delivery check shared by the suites with real Kafka clients.

Each client suite produces ``count`` keyed records with headers into a topic of
``PARTITIONS`` partitions, then a consumer group reads them in two runs: the first stops
half way and commits what it processed, the second (a fresh consumer in the same group)
resumes from the committed offsets and reads the rest. ``assert_delivered`` then checks
Kafka's guarantees: every record exactly once, offsets and production order increasing
within each partition, one partition per key, headers intact, and the second run starting
exactly at the first run's committed offsets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from mirrorsim.client.admin import Admin
from mirrorsim.client.admin_types import NewTopic, TopicPartition

PARTITIONS = 4


KEYS = 61


DEFAULT_COUNT = 2_000


FULL_COUNT = 10_000


CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


VALUE_PADDING = b"." * 64


@dataclass(frozen=True, slots=True)
class Consumed:
    partition: int
    offset: int
    key: bytes
    value: bytes
    headers: tuple[tuple[str, bytes], ...]


def record_key(index: int) -> bytes:
    return f"key-{index % KEYS}".encode()


def record_value(index: int) -> bytes:
    return f"value-{index:06d}-".encode() + VALUE_PADDING


def record_headers(index: int, client: str) -> tuple[tuple[str, bytes], ...]:
    return (("index", str(index).encode()), ("client", client.encode()))


def record_index(value: bytes) -> int:
    return int(value.split(b"-")[1])


def counts(with_full: bool = True) -> list[Any]:
    """The default-size run, plus the full-size run marked slow."""
    full = [pytest.param(FULL_COUNT, marks=pytest.mark.slow, id=f"{FULL_COUNT}")]
    return [pytest.param(DEFAULT_COUNT, id=f"{DEFAULT_COUNT}"), *(full if with_full else [])]


def first_run_size(count: int) -> int:
    return count // 2


def assert_delivered(
    count: int,
    client: str,
    first: list[Consumed],
    second: list[Consumed],
    *,
    headers: Callable[[int], tuple[tuple[str, bytes], ...]] | None = None,
) -> None:
    """``headers(index)`` is what record ``index`` carries (default: ``record_headers``)."""
    expected_headers = headers or (lambda index: record_headers(index, client))
    every = first + second
    indexes = sorted(record_index(r.value) for r in every)
    assert len(indexes) == count, f"consumed {len(indexes)} records, produced {count}"
    assert indexes == list(range(count)), "lost or duplicated records"
    partitions_of_key: dict[bytes, set[int]] = {}
    for record in every:
        index = record_index(record.value)
        assert record.key == record_key(index)
        assert record.value == record_value(index)
        assert record.headers == expected_headers(index)
        partitions_of_key.setdefault(record.key, set()).add(record.partition)
    assert all(len(p) == 1 for p in partitions_of_key.values()), "a key spans partitions"
    for partition in range(PARTITIONS):
        offsets = [r.offset for r in every if r.partition == partition]
        produced_order = [record_index(r.value) for r in every if r.partition == partition]
        assert offsets == list(range(len(offsets))), f"partition {partition} offsets"
        assert produced_order == sorted(produced_order), f"partition {partition} order"
    assert len({r.partition for r in every}) > 1, "the keys should spread over partitions"


def committed_after(records: list[Consumed]) -> dict[int, int]:
    """The offsets a consumer commits after processing ``records``: last offset + 1."""
    committed: dict[int, int] = {}
    for record in records:
        committed[record.partition] = max(committed.get(record.partition, 0), record.offset + 1)
    return committed


async def group_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    async with Admin(bootstrap) as admin:
        offsets = await admin.list_consumer_group_offsets(
            group, [TopicPartition(topic, p) for p in range(PARTITIONS)]
        )
    return {tp.partition: o.offset for tp, o in offsets.items()}


async def create_topic(bootstrap: str, topic: str) -> None:
    async with Admin(bootstrap) as admin:
        (await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])).all()
