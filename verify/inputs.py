"""The JSON files an operator hands to ``verify``: stop points and committed offsets.

Stop offsets: ``{"orders-0": 1200, "orders-1": 998}`` — per topic partition, the offset
at which mirroring stopped (at failover, the last mirrored epoch's end offset).
Committed offsets: ``{"group-a": {"orders-0": 1150}}`` — per group and topic partition.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from mirrorsim.verify.convergence import COMMITTED_OFFSETS_SCHEMA, STOP_OFFSETS_SCHEMA
from mirrorsim.verify.segments import TopicPartition


def load_stop_offsets(path: str | Path) -> dict[TopicPartition, int]:
    raw = json.loads(Path(path).read_text())
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected an object of topic-partition to offset")
    return {TopicPartition.parse(key): int(value) for key, value in raw.items()}


def load_committed_offsets(path: str | Path) -> dict[str, dict[TopicPartition, int]]:
    raw = json.loads(Path(path).read_text())
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise ValueError(f"{path}: expected an object of group to topic-partition offsets")
    return {
        group: {TopicPartition.parse(key): int(value) for key, value in offsets.items()}
        for group, offsets in raw.items()
    }


def stop_offsets_frame(spark: SparkSession, stops: dict[TopicPartition, int]) -> DataFrame:
    rows = [(tp.topic, tp.partition, offset) for tp, offset in sorted(stops.items(), key=str)]
    return spark.createDataFrame(rows, STOP_OFFSETS_SCHEMA)


def committed_offsets_frame(
    spark: SparkSession, commits: dict[str, dict[TopicPartition, int]]
) -> DataFrame:
    rows = [
        (group, tp.topic, tp.partition, offset)
        for group, offsets in sorted(commits.items())
        for tp, offset in sorted(offsets.items(), key=str)
    ]
    return spark.createDataFrame(rows, COMMITTED_OFFSETS_SCHEMA)
