"""Control batches: transaction markers and MIRROR_PID_RESET."""

from __future__ import annotations

import pytest
from aiokafka.record.control_record import ABORT_MARKER, COMMIT_MARKER, ControlRecord
from aiokafka.record.default_records import DefaultRecordBatch
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.protocol.records import (
    ControlRecordType,
    CorruptRecordError,
    MirrorPidReset,
    RawBatch,
    Record,
    TransactionMarker,
    UnknownControlRecord,
    build_batch,
    build_control_batch,
    decode_control_batch,
    decode_control_record,
    decode_records,
)
from mirrorsim.protocol.records.control import decode_mirror_pid_reset, encode_mirror_pid_reset

producer_ids = st.integers(0, 2**63 - 1)
producer_epochs = st.integers(0, 2**15 - 1)
timestamps = st.integers(-1, 2**45)


@given(
    kind=st.sampled_from([ControlRecordType.ABORT, ControlRecordType.COMMIT]),
    producer_id=producer_ids,
    producer_epoch=producer_epochs,
    base_offset=st.integers(0, 2**62),
    leader_epoch=st.integers(-1, 2**31 - 1),
    timestamp=timestamps,
    coordinator_epoch=st.integers(-(2**31), 2**31 - 1),
)
def test_transaction_markers_round_trip(
    kind: ControlRecordType,
    producer_id: int,
    producer_epoch: int,
    base_offset: int,
    leader_epoch: int,
    timestamp: int,
    coordinator_epoch: int,
) -> None:
    batch = build_control_batch(
        kind,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_offset=base_offset,
        partition_leader_epoch=leader_epoch,
        timestamp=timestamp,
        coordinator_epoch=coordinator_epoch,
    )
    batch = RawBatch.from_bytes(batch.data)
    batch.ensure_valid()
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch) == (producer_id, producer_epoch)
    assert (batch.base_offset, batch.records_count, batch.last_offset) == (
        base_offset,
        1,
        base_offset,
    )
    assert batch.partition_leader_epoch == leader_epoch
    assert batch.max_timestamp == timestamp
    marker = decode_control_batch(batch)
    assert marker == TransactionMarker(kind, coordinator_epoch)
    assert marker.is_commit is (kind is ControlRecordType.COMMIT)


@given(
    producer_id=st.integers(-1, 2**63 - 1),
    producer_epoch=st.integers(-1, 2**15 - 1),
    cluster_id=st.text(max_size=40),
    timestamp=timestamps,
)
def test_mirror_pid_reset_round_trips(
    producer_id: int, producer_epoch: int, cluster_id: str, timestamp: int
) -> None:
    batch = build_control_batch(
        ControlRecordType.MIRROR_PID_RESET,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        timestamp=timestamp,
        source_cluster_id=cluster_id,
    )
    assert batch.is_control and not batch.is_transactional
    assert decode_control_batch(batch) == MirrorPidReset(cluster_id)
    (record,) = decode_records(batch)
    assert record.key == b"\x00\x00\x00\x07"


def test_mirror_pid_reset_value_bytes() -> None:
    """Version int16, compact string (length + 1 as unsigned varint), no tagged fields."""
    value = encode_mirror_pid_reset(MirrorPidReset("AbCd"))
    assert value == b"\x00\x00" + b"\x05" + b"AbCd" + b"\x00"


def test_mirror_pid_reset_skips_unknown_tagged_fields() -> None:
    value = b"\x00\x00" + b"\x04abc" + b"\x02" + b"\x00\x01x" + b"\x05\x03xyz"
    assert decode_mirror_pid_reset(value) == MirrorPidReset("abc")


def test_newer_mirror_pid_reset_versions_may_carry_more_fields() -> None:
    value = b"\x00\x01" + b"\x04abc" + b"\x00" + b"future field"
    assert decode_mirror_pid_reset(value) == MirrorPidReset("abc", version=1)


@pytest.mark.parametrize(
    "value",
    [
        b"",
        b"\x00",
        b"\x00\x00",
        b"\x00\x00\x00\x00",  # null SourceClusterId
        b"\x00\x00\x09abc\x00",  # string overruns
        b"\x00\x00\x04ab\xff\x00",  # not UTF-8
        b"\x00\x00\x04abc",  # tagged-field count missing
        b"\x00\x00\x04abc\x01\x00\x05x",  # tagged field overruns
        b"\x00\x00\x04abc\x00junk",  # stray bytes in version 0
    ],
)
def test_malformed_mirror_pid_reset_is_corrupt(value: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_mirror_pid_reset(value)


def test_mirror_pid_reset_needs_a_cluster_id() -> None:
    with pytest.raises(ValueError, match="source cluster id"):
        build_control_batch(
            ControlRecordType.MIRROR_PID_RESET, producer_id=-1, producer_epoch=-1, timestamp=0
        )


def test_other_control_types_are_not_built() -> None:
    with pytest.raises(ValueError, match="LEADER_CHANGE"):
        build_control_batch(
            ControlRecordType.LEADER_CHANGE, producer_id=-1, producer_epoch=-1, timestamp=0
        )


def test_unknown_control_types_decode_without_failing() -> None:
    record = Record(5, 0, b"\x00\x01\x00\x02", b"payload")
    assert decode_control_record(record) == UnknownControlRecord(2, 1, b"payload")


@pytest.mark.parametrize(
    "record",
    [
        Record(0, 0, None, None),
        Record(0, 0, b"\x00", None),
        Record(0, 0, b"\x00\x00\x00\x01", None),
        Record(0, 0, b"\x00\x00\x00\x00", b"\x00\x00"),
        Record(0, 0, b"\x00\x00\x00\x07", None),
    ],
)
def test_malformed_control_records_are_corrupt(record: Record) -> None:
    with pytest.raises(CorruptRecordError):
        decode_control_record(record)


def test_decode_control_batch_refuses_data_batches() -> None:
    with pytest.raises(ValueError, match="not a control batch"):
        decode_control_batch(build_batch([Record(0, 0, None, b"v")]))


@pytest.mark.parametrize(
    ("kind", "aiokafka_marker"),
    [
        (ControlRecordType.ABORT, ABORT_MARKER),
        (ControlRecordType.COMMIT, COMMIT_MARKER),
        (ControlRecordType.MIRROR_PID_RESET, ControlRecord(0, 7)),
    ],
)
def test_aiokafka_sees_our_control_batches(
    kind: ControlRecordType, aiokafka_marker: ControlRecord
) -> None:
    batch = build_control_batch(
        kind,
        producer_id=7,
        producer_epoch=1,
        timestamp=1_700_000_000_001,
        source_cluster_id="source-uuid",
    )
    parsed = DefaultRecordBatch(batch.data)
    assert parsed.validate_crc()
    assert parsed.is_control_batch
    (record,) = list(parsed)
    assert ControlRecord.parse(record.key) == aiokafka_marker
    assert record.timestamp == 1_700_000_000_001
