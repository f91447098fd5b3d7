"""The mirrorsim-kafka reader against a live in-process cluster: same rows as the segment
files, offset ranges, exact pushdown, partial and oversized fetches."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from helpers.live_clusters import ClusterThread, produce
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, LessThan

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import IsolationLevel, NewTopic
from mirrorsim.verify.job import read_cluster, read_segments
from mirrorsim.verify.kafka_source import FORMAT, KafkaReader
from mirrorsim.verify.live_fetch import RangeFetcher
from mirrorsim.verify.live_partitions import CLIENT_ID, OffsetRange, PartitionExtent, plan_ranges

pytestmark = pytest.mark.spark

PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster_thread() -> Iterator[ClusterThread]:
    thread = ClusterThread()
    yield thread
    thread.close()


@pytest.fixture(scope="module")
def cluster(cluster_thread: ClusterThread, tmp_path_factory: pytest.TempPathFactory) -> Any:
    runner = cluster_thread.start_cluster("primary", tmp_path_factory.mktemp("live"))

    async def fill() -> None:
        async with Admin(runner.bootstrap) as admin:
            (await admin.create_topics([NewTopic("orders", PARTITIONS, 1)])).all()
            (await admin.create_topics([NewTopic("audit", 1, 1)])).all()
        for round_number in range(4):
            await produce(runner.bootstrap, "orders", 30, tag=f"r{round_number}", partitions=3)
        await produce(runner.bootstrap, "audit", 5, tag="audit", partitions=1)

    cluster_thread.run(fill())
    return runner


def data_dir(cluster: ClusterRunner) -> str:
    return str(cluster.spec.data_dir / "broker-1")


def sorted_rows(frame: Any) -> list[tuple]:
    return sorted(tuple(row) for row in frame.collect())


def read_all(reader: KafkaReader) -> list[tuple]:
    rows = []
    for partition in reader.partitions():
        for item in reader.read(partition):
            if isinstance(item, pa.RecordBatch):
                rows.extend(tuple(row.values()) for row in item.to_pylist())
            else:
                rows.append(item)
    return rows


@pytest.mark.parametrize("level", ["batch", "record"])
def test_live_view_equals_the_segment_view(
    spark: SparkSession, cluster: ClusterRunner, level: str
) -> None:
    live = read_cluster(spark, cluster.bootstrap, level=level, topic="orders|audit")
    on_disk = read_segments(spark, data_dir(cluster), level=level, topic="orders|audit")

    live_rows = sorted_rows(live)

    assert live_rows == sorted_rows(on_disk)
    assert {(row[0], row[1]) for row in live_rows} == {
        ("audit", 0),
        *(("orders", p) for p in range(PARTITIONS)),
    }


def test_offset_options_select_overlapping_batches_like_the_segment_source(
    spark: SparkSession, cluster: ClusterRunner
) -> None:
    def read(fmt: str, where: str) -> list[tuple]:
        frame = (
            spark.read.format(fmt)
            .option("topic", "orders")
            .option("startOffset", 7)
            .option("endOffset", 23)
            .option("bootstrap" if fmt == FORMAT else "path", where)
            .load()
        )
        return sorted_rows(frame)

    live = read(FORMAT, cluster.bootstrap)

    assert live == read("mirrorsim-segments", data_dir(cluster))
    assert all(row[3] >= 7 and row[2] < 23 for row in live)


def test_offset_ranges_split_partitions_and_hold_each_batch_once(
    cluster: ClusterRunner,
) -> None:
    whole = KafkaReader({"bootstrap": cluster.bootstrap, "topic": "orders"})
    split = KafkaReader(
        {"bootstrap": cluster.bootstrap, "topic": "orders", "maxOffsetsPerTask": "3"}
    )

    ranges = [part.range for part in split.partitions()]
    rows = read_all(split)

    assert len(ranges) > len(whole.partitions())
    assert sorted(rows) == sorted(read_all(whole))
    assert len({(row[0], row[1], row[2]) for row in rows}) == len(rows)


def test_split_record_view_has_every_offset_once(cluster: ClusterRunner) -> None:
    options = {"bootstrap": cluster.bootstrap, "topic": "orders", "view": "records"}
    split = read_all(KafkaReader({**options, "maxOffsetsPerTask": "4"}))

    per_partition: dict[int, list[int]] = {}
    for row in split:
        per_partition.setdefault(row[1], []).append(row[2])

    assert sorted(split) == sorted(read_all(KafkaReader(options)))
    for offsets in per_partition.values():
        assert sorted(offsets) == list(range(40))


def test_pushed_filters_prune_and_hold_exactly(cluster: ClusterRunner) -> None:
    reader = KafkaReader({"bootstrap": cluster.bootstrap})
    left = list(
        reader.pushFilters(
            [
                EqualTo(("topic",), "orders"),
                EqualTo(("partition",), 1),
                GreaterThanOrEqual(("base_offset",), 6),
                LessThan(("base_offset",), 30),
            ]
        )
    )

    rows = read_all(reader)

    assert left == []
    assert {(part.range.topic, part.range.partition) for part in reader.partitions()} == {
        ("orders", 1)
    }
    assert rows
    assert all(row[0] == "orders" and row[1] == 1 and 6 <= row[2] < 30 for row in rows)


def test_read_committed_reads_up_to_the_last_stable_offset(cluster: ClusterRunner) -> None:
    options = {"bootstrap": cluster.bootstrap, "topic": "audit"}
    committed = read_all(KafkaReader({**options, "isolation": "READ_COMMITTED"}))

    assert committed == read_all(KafkaReader(options))
    assert committed


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="bootstrap"):
        KafkaReader({})
    with pytest.raises(ValueError, match="isolation"):
        KafkaReader({"bootstrap": "127.0.0.1:1", "isolation": "read_sometimes"})
    with pytest.raises(ValueError, match="view"):
        KafkaReader({"bootstrap": "127.0.0.1:1", "view": "bytes"})


def test_fetcher_refetches_partial_batches_and_grows_for_oversized_ones(
    cluster_thread: ClusterThread, cluster: ClusterRunner
) -> None:
    """A byte limit below one batch gets a partial batch only; the fetcher doubles it."""
    offset_range = OffsetRange("orders", 0, 0, 40, overlapping=True)

    async def fetch_all(max_bytes: int) -> list[tuple[int, int]]:
        async with Admin(cluster.bootstrap, client_id=CLIENT_ID) as admin:
            fetcher = RangeFetcher(admin, offset_range, IsolationLevel.READ_UNCOMMITTED)
            fetcher.max_bytes = max_bytes
            found = []
            while not fetcher.done:
                found.extend((b.base_offset, b.last_offset) for b in await fetcher.next_batches())
            return found

    tiny = cluster_thread.run(fetch_all(64))
    roomy = cluster_thread.run(fetch_all(1 << 20))

    assert tiny == roomy
    assert tiny[0][0] == 0
    assert tiny[-1][1] == 39
    assert all(prev[1] + 1 == nxt[0] for prev, nxt in itertools.pairwise(tiny))


def test_fetcher_keeps_the_batch_holding_a_start_inside_it(
    cluster_thread: ClusterThread, cluster: ClusterRunner
) -> None:
    async def first_batch() -> tuple[int, int]:
        async with Admin(cluster.bootstrap, client_id=CLIENT_ID) as admin:
            everything = RangeFetcher(
                admin,
                OffsetRange("orders", 0, 0, 40, overlapping=True),
                IsolationLevel.READ_UNCOMMITTED,
            )
            batches = await everything.next_batches()
            inside = next(b.base_offset + 1 for b in batches if b.records_count > 1)
            fetcher = RangeFetcher(
                admin,
                OffsetRange("orders", 0, inside, 40, overlapping=True),
                IsolationLevel.READ_UNCOMMITTED,
            )
            batch = (await fetcher.next_batches())[0]
            return batch.base_offset, inside

    base_offset, start = cluster_thread.run(first_batch())

    assert base_offset < start


def test_a_missing_cluster_fails_the_planner(tmp_path: Path, free_port: Any) -> None:
    reader = KafkaReader(
        {
            "bootstrap": f"127.0.0.1:{free_port()}",
            "kafka.default.api.timeout.ms": "300",
            "kafka.reconnect.backoff.max.ms": "50",
        }
    )

    with pytest.raises(ConnectionError):
        reader.partitions()


offsets = st.one_of(st.none(), st.integers(0, 300))


@given(
    log_start=st.integers(0, 100),
    length=st.integers(0, 200),
    start=offsets,
    end=offsets,
    pushed_start=offsets,
    pushed_end=offsets,
    step=st.one_of(st.none(), st.integers(1, 50)),
)
def test_planned_ranges_tile_the_wanted_offsets(
    log_start: int,
    length: int,
    start: int | None,
    end: int | None,
    pushed_start: int | None,
    pushed_end: int | None,
    step: int | None,
) -> None:
    extent = PartitionExtent("t", 0, log_start, log_start + length)

    ranges = plan_ranges(
        extent,
        start=start,
        end=end,
        pushed_start=pushed_start,
        pushed_end=pushed_end,
        offsets_per_range=step,
    )

    low = max(bound for bound in (log_start, start, pushed_start) if bound is not None)
    high = min(bound for bound in (log_start + length, end, pushed_end) if bound is not None)
    covered = [offset for r in ranges for offset in range(r.start, r.end)]
    assert covered == list(range(low, high))
    assert all(r.end > r.start for r in ranges)
    assert step is None or all(r.end - r.start <= step for r in ranges)
    assert all(not r.overlapping for r in ranges[1:])
    if ranges:
        cut_by_filter = pushed_start is not None and pushed_start > max(
            log_start, start if start is not None else log_start
        )
        assert ranges[0].overlapping is not cut_by_filter
