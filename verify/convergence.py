"""Convergence of a mirror as DataFrame → DataFrame functions.

Theory of operation. A mirror copies the source log byte for byte, so the destination
must be a prefix of the source: every batch the destination holds sits at the same base
offset as a source batch with the same last offset, leader epoch, CRC and bytes. The two
logs are full-outer-joined on (topic, partition, position) — the base offset for batches,
the offset for records — by ``join_logs``, and ``compare_logs`` gives every joined row a
``kind``:

- ``match``: both sides hold it and every compared field is equal;
- ``not_yet_mirrored``: only the source holds it, at or past the destination's log end
  offset (this is lag, not a divergence);
- ``below_log_start``: only one side holds it, below the other side's log start offset
  (retention removed it there);
- a divergence: ``missing_<unit>`` (a hole below the destination's log end offset),
  ``extra_<unit>`` (the destination holds what the source does not), or the first field
  that differs (``leader_epoch_mismatch``, ``crc_mismatch``, ``corrupt_batch``, ...).

A divergence is ``expected`` when the partition has a recorded stop point (the offset at
which mirroring stopped, e.g. the last mirrored epoch's end offset at failover) and it
lies at or beyond it: after failover both sides take their own writes. Every other
divergence is ``unexpected``; the mirror is proven converged when there are none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

PARTITION_KEY = ["topic", "partition"]
STOP_OFFSETS_SCHEMA = "topic string, partition int, stop_offset long"
COMMITTED_OFFSETS_SCHEMA = "group string, topic string, partition int, committed_offset long"

MATCH = "match"
NOT_YET_MIRRORED = "not_yet_mirrored"
BELOW_LOG_START = "below_log_start"
AGREEING_KINDS = (MATCH, NOT_YET_MIRRORED, BELOW_LOG_START)
EXPECTED = "expected"
UNEXPECTED = "unexpected"


@dataclass(frozen=True)
class ComparedField:
    """A column both sides must agree on, the divergence kind when they do not, and how
    to print one side's value in a report."""

    column: str
    kind: str
    render: Callable[[Column], Column]


@dataclass(frozen=True)
class LogUnit:
    """What a row of a log view is (a batch or a record) and how two of them compare."""

    name: str
    position: str  # first offset of the unit; the join key within a partition
    last_offset: str
    fields: tuple[ComparedField, ...]
    describe: Callable[[Callable[[str], Column]], Column]
    content: tuple[str, ...]  # what "the same record" means for a committed offset


def _render_binary(value: Column) -> Column:
    shown = F.lower(F.hex(F.substring(value, 1, 16)))
    ellipsis = F.when(F.length(value) > 16, F.lit("...")).otherwise(F.lit(""))
    return F.when(value.isNull(), F.lit("null")).otherwise(F.concat(F.lit("0x"), shown, ellipsis))


def _as_string(value: Column) -> Column:
    return value.cast("string")


def _labelled(
    label: str, render: Callable[[Column], Column] = _as_string
) -> Callable[[Column], Column]:
    return lambda value: F.concat(F.lit(f"{label} "), render(value))


BATCH = LogUnit(
    name="batch",
    position="base_offset",
    last_offset="last_offset",
    fields=(
        ComparedField("last_offset", "last_offset_mismatch", _labelled("last offset")),
        ComparedField("leader_epoch", "leader_epoch_mismatch", _labelled("leader epoch")),
        ComparedField("crc", "crc_mismatch", _labelled("crc", lambda c: F.lower(F.hex(c)))),
        ComparedField(
            "crc_valid",
            "corrupt_batch",
            lambda c: F.when(c, F.lit("crc32c valid")).otherwise(F.lit("crc32c invalid")),
        ),
        ComparedField("fingerprint", "bytes_mismatch", _labelled("fingerprint", _render_binary)),
    ),
    describe=lambda side: F.format_string(
        "batch %d..%d epoch %d", side("base_offset"), side("last_offset"), side("leader_epoch")
    ),
    content=("base_offset", "fingerprint"),
)


def _record_unit(key: str, value: str) -> LogUnit:
    """The record unit over a view whose key and value live in ``key`` and ``value``:
    the bytes themselves, or their digests (``views.content_digest``), which compare and
    render alike."""
    return LogUnit(
        name="record",
        position="offset",
        last_offset="offset",
        fields=(
            ComparedField("timestamp", "timestamp_mismatch", _labelled("timestamp")),
            ComparedField(key, "key_mismatch", _labelled("key", _render_binary)),
            ComparedField(value, "value_mismatch", _labelled("value", _render_binary)),
            ComparedField("headers", "headers_mismatch", _labelled("headers", F.to_json)),
        ),
        describe=lambda side: F.format_string("record at offset %d", side("offset")),
        content=("offset", "timestamp", key, value, "headers"),
    )


RECORD = _record_unit("key", "value")
RECORD_DIGESTS = _record_unit("key_digest", "value_digest")


def log_unit_of(log: DataFrame, prefix: str = "") -> LogUnit:
    """The unit of a view produced by the segment (or Kafka) data source, or of the
    ``prefix``-ed side of ``join_logs``."""
    if prefix + "fingerprint" in log.columns:
        return BATCH
    return RECORD_DIGESTS if prefix + "value_digest" in log.columns else RECORD


def empty_stop_offsets(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([], STOP_OFFSETS_SCHEMA)


def join_logs(source: DataFrame, destination: DataFrame) -> DataFrame:
    """Both views side by side: one row per (topic, partition, offset) held by either
    side, with each side's compared columns prefixed ``src_`` or ``dst_``.

    This is the one pass over both logs, a shuffle and a join of every unit, and
    ``compare_logs`` reads it twice (once for each side's extents), so a caller running
    it on more than a few units caches it first.
    """
    unit = log_unit_of(source)
    compared = [field.column for field in unit.fields]
    columns = sorted({unit.position, unit.last_offset, *compared, *_describe_columns(unit)})
    return _side(source, "src_", unit, columns).join(
        _side(destination, "dst_", unit, columns), [*PARTITION_KEY, "offset"], "full_outer"
    )


def compare_logs(joined: DataFrame, stop_offsets: DataFrame | None = None) -> DataFrame:
    """One row per position of ``join_logs``, with its ``kind`` and ``classification``.

    Columns: topic, partition, offset, kind, classification (null when the sides agree),
    expected, found, stop_offset, and each side's log start and log end offsets.
    """
    unit = log_unit_of(joined, "src_")
    if stop_offsets is None:
        stop_offsets = empty_stop_offsets(joined.sparkSession)
    extents = joined.groupBy(*PARTITION_KEY).agg(*_extents("src_", unit), *_extents("dst_", unit))
    joined = joined.join(F.broadcast(extents), PARTITION_KEY, "left").join(
        _stops(stop_offsets), PARTITION_KEY, "left"
    )
    kind = _kind(unit)
    divergent = ~kind.isin(*AGREEING_KINDS)
    beyond_stop = F.col("stop_offset").isNotNull() & (F.col("offset") >= F.col("stop_offset"))
    classification = F.when(
        divergent, F.when(beyond_stop, F.lit(EXPECTED)).otherwise(F.lit(UNEXPECTED))
    )
    expected, found = _expected_and_found(unit)
    return joined.select(
        *PARTITION_KEY,
        "offset",
        kind.alias("kind"),
        classification.alias("classification"),
        F.when(divergent, expected).alias("expected"),
        F.when(divergent, found).alias("found"),
        "stop_offset",
        "src_log_start_offset",
        "src_log_end_offset",
        "dst_log_start_offset",
        "dst_log_end_offset",
    )


def divergences(comparison: DataFrame) -> DataFrame:
    """The rows of ``compare_logs`` where the sides disagree, in log order."""
    return comparison.where(F.col("classification").isNotNull()).orderBy(*PARTITION_KEY, "offset")


def partition_summary(comparison: DataFrame) -> DataFrame:
    """Per topic partition: both logs' extents, lag, counts and the first unexpected
    divergence (its offset, kind, expected and found)."""
    unexpected = F.col("classification") == UNEXPECTED
    first = F.min_by(
        F.struct("offset", "kind", "expected", "found"), F.when(unexpected, F.col("offset"))
    )
    summary = comparison.groupBy(*PARTITION_KEY).agg(
        F.max("src_log_start_offset").alias("source_log_start_offset"),
        F.max("src_log_end_offset").alias("source_log_end_offset"),
        F.max("dst_log_start_offset").alias("destination_log_start_offset"),
        F.max("dst_log_end_offset").alias("destination_log_end_offset"),
        F.max("stop_offset").alias("stop_offset"),
        _count_where(F.col("kind") == MATCH).alias("matched"),
        _count_where(F.col("classification") == EXPECTED).alias("expected_divergences"),
        _count_where(unexpected).alias("unexpected_divergences"),
        first.alias("first_unexpected"),
    )
    destination_end = F.coalesce("destination_log_end_offset", "source_log_start_offset", F.lit(0))
    lag = F.coalesce("source_log_end_offset", F.lit(0)) - destination_end
    return (
        summary.withColumn("lag", lag)
        .withColumn("status", _status())
        .select(
            *PARTITION_KEY,
            "status",
            "source_log_start_offset",
            "source_log_end_offset",
            "destination_log_start_offset",
            "destination_log_end_offset",
            "lag",
            "stop_offset",
            "matched",
            "expected_divergences",
            "unexpected_divergences",
            F.col("first_unexpected.offset").alias("first_unexpected_offset"),
            F.col("first_unexpected.kind").alias("first_unexpected_kind"),
            F.col("first_unexpected.expected").alias("first_unexpected_expected"),
            F.col("first_unexpected.found").alias("first_unexpected_found"),
        )
        .orderBy(*PARTITION_KEY)
    )


def compare_committed_offsets(
    source_offsets: DataFrame,
    destination_offsets: DataFrame,
    source_log: DataFrame,
    destination_log: DataFrame,
    stop_offsets: DataFrame | None = None,
) -> DataFrame:
    """Check that each group's committed offset on the destination is the source's and
    points at the same record there.

    A committed offset points at the first unit at or after it (a compacted log may have
    a gap there) or at the log end. Offsets come as (group, topic, partition,
    committed_offset); the result has one row per committed offset on either side with
    ``kind`` (``match``, ``missing_commit``, ``extra_commit``, ``commit_offset_mismatch``,
    ``commit_record_mismatch``), ``classification``, ``expected`` and ``found``.
    """
    unit = log_unit_of(source_log)
    if stop_offsets is None:
        stop_offsets = empty_stop_offsets(source_log.sparkSession)
    key = ["group", *PARTITION_KEY]
    joined = (
        _committed_targets(source_offsets, source_log, unit, "src_")
        .join(
            _committed_targets(destination_offsets, destination_log, unit, "dst_"),
            key,
            "full_outer",
        )
        .join(_stops(stop_offsets), PARTITION_KEY, "left")
    )
    src_offset, dst_offset = F.col("src_committed_offset"), F.col("dst_committed_offset")
    kind = (
        F.when(dst_offset.isNull(), F.lit("missing_commit"))
        .when(src_offset.isNull(), F.lit("extra_commit"))
        .when(src_offset != dst_offset, F.lit("commit_offset_mismatch"))
        .when(~F.col("src_target").eqNullSafe(F.col("dst_target")), F.lit("commit_record_mismatch"))
        .otherwise(F.lit(MATCH))
    )
    beyond_stop = F.col("stop_offset").isNotNull() & (
        F.greatest(src_offset, dst_offset) >= F.col("stop_offset")
    )
    classification = F.when(
        kind != MATCH, F.when(beyond_stop, F.lit(EXPECTED)).otherwise(F.lit(UNEXPECTED))
    )
    return joined.select(
        *key,
        src_offset.alias("source_committed_offset"),
        dst_offset.alias("destination_committed_offset"),
        kind.alias("kind"),
        classification.alias("classification"),
        _describe_commit("src_", unit).alias("expected"),
        _describe_commit("dst_", unit).alias("found"),
    ).orderBy(*key)


def _side(log: DataFrame, prefix: str, unit: LogUnit, columns: list[str]) -> DataFrame:
    return log.select(
        *PARTITION_KEY,
        F.col(unit.position).alias("offset"),
        *(F.col(column).alias(prefix + column) for column in columns),
        F.lit(True).alias(prefix + "present"),
    )


def _extents(prefix: str, unit: LogUnit) -> tuple[Column, Column]:
    """One side's log start and log end offsets, aggregated over the joined rows (which
    the caller caches) so that each log is read once. An aggregate and not a window over
    the partition: a window shuffles every joined row again and buffers a whole topic
    partition in one task, spilling to disk, which cost more than the join itself."""
    present = F.col(prefix + "present").isNotNull()
    return (
        F.min(F.when(present, F.col("offset"))).alias(prefix + "log_start_offset"),
        (F.max(prefix + unit.last_offset) + 1).alias(prefix + "log_end_offset"),
    )


def _kind(unit: LogUnit) -> Column:
    src_present = F.col("src_present").isNotNull()
    dst_present = F.col("dst_present").isNotNull()
    offset = F.col("offset")
    kind = F.when(
        src_present & ~dst_present,
        F.when(
            F.col("dst_log_end_offset").isNull() | (offset >= F.col("dst_log_end_offset")),
            F.lit(NOT_YET_MIRRORED),
        )
        .when(offset < F.col("dst_log_start_offset"), F.lit(BELOW_LOG_START))
        .otherwise(F.lit(f"missing_{unit.name}")),
    ).when(
        ~src_present,
        F.when(offset < F.col("src_log_start_offset"), F.lit(BELOW_LOG_START)).otherwise(
            F.lit(f"extra_{unit.name}")
        ),
    )
    for field in unit.fields:
        src, dst = F.col("src_" + field.column), F.col("dst_" + field.column)
        kind = kind.when(~src.eqNullSafe(dst), F.lit(field.kind))
    return kind.otherwise(F.lit(MATCH))


def _expected_and_found(unit: LogUnit) -> tuple[Column, Column]:
    """Per divergence kind, what the source has and what the destination has instead."""

    def side(prefix: str) -> Callable[[str], Column]:
        return lambda column: F.col(prefix + column)

    absent = F.lit("absent")
    src_absent, dst_absent = F.col("src_present").isNull(), F.col("dst_present").isNull()
    src_described, dst_described = unit.describe(side("src_")), unit.describe(side("dst_"))
    expected = F.when(src_absent, absent).when(dst_absent, src_described)
    found = F.when(dst_absent, absent).when(src_absent, dst_described)
    for field in unit.fields:
        src, dst = F.col("src_" + field.column), F.col("dst_" + field.column)
        differs = ~src.eqNullSafe(dst)
        expected = expected.when(differs, field.render(src))
        found = found.when(differs, field.render(dst))
    return expected.otherwise(src_described), found.otherwise(dst_described)


def _describe_columns(unit: LogUnit) -> tuple[str, ...]:
    return ("base_offset", "last_offset", "leader_epoch") if unit is BATCH else ("offset",)


def _committed_targets(offsets: DataFrame, log: DataFrame, unit: LogUnit, prefix: str) -> DataFrame:
    """Each committed offset with the content of the unit it points at (null: log end)."""
    commits = offsets.select("group", *PARTITION_KEY, "committed_offset").alias("c")
    units = log.alias("u")
    condition = (
        (F.col("c.topic") == F.col("u.topic"))
        & (F.col("c.partition") == F.col("u.partition"))
        & (F.col(f"u.{unit.last_offset}") >= F.col("c.committed_offset"))
    )
    content = F.struct(*(F.col(f"u.{column}").alias(column) for column in unit.content))
    return (
        commits.join(units, condition, "left")
        .groupBy("c.group", "c.topic", "c.partition", "c.committed_offset")
        .agg(F.min_by(content, F.col(f"u.{unit.position}")).alias("target"))
        .select(
            "group",
            *PARTITION_KEY,
            F.col("committed_offset").alias(prefix + "committed_offset"),
            F.col("target").alias(prefix + "target"),
        )
    )


def _describe_commit(prefix: str, unit: LogUnit) -> Column:
    offset, target = F.col(prefix + "committed_offset"), F.col(prefix + "target")
    points_at = F.when(target.isNull(), F.lit("log end")).otherwise(
        F.format_string(f"{unit.name} at %d", target.getField(unit.position))
    )
    return F.when(offset.isNull(), F.lit("no commit")).otherwise(
        F.format_string("offset %d -> %s", offset, points_at)
    )


def _stops(stop_offsets: DataFrame) -> DataFrame:
    """Stop offsets are one row per partition at most: small enough to broadcast."""
    return F.broadcast(stop_offsets.select(*PARTITION_KEY, "stop_offset"))


def _count_where(condition: Column) -> Column:
    return F.sum(F.when(condition, 1).otherwise(0))


def _status() -> Column:
    return (
        F.when(F.col("unexpected_divergences") > 0, F.lit("diverged"))
        .when(F.col("expected_divergences") > 0, F.lit("stopped"))
        .when(F.col("lag") > 0, F.lit("lagging"))
        .otherwise(F.lit("converged"))
    )
