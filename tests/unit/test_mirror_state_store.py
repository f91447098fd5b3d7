"""__mirror_state replay: last writer wins per key, tombstones, compaction, placement."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from mirrorsim.coordinator.mirror_state_store import (
    NO_LAST_MIRRORED_EPOCH,
    MirrorStateRecord,
    MirrorStateStore,
    metadata_coordinator_partition,
    mirror_state_partition,
    murmur2,
)
from mirrorsim.coordinator.state_machine import MirrorPartitionKey, MirrorPartitionState
from mirrorsim.protocol.messages.mirror_state_records import (
    MirrorPartitionStateKey,
    MirrorPartitionStateValue,
    MirrorStateRecordError,
    encode_mirror_state_key,
    encode_mirror_state_value,
)

S = MirrorPartitionState
TOPIC_ID = uuid.UUID(int=0x1234)
KEYS = [MirrorPartitionKey("m", TOPIC_ID, "orders", p) for p in range(3)]
STORED_STATES = [s for s in S if s is not S.UNKNOWN]


def write(store: MirrorStateStore, record: MirrorStateRecord, log: list[MirrorStateRecord]) -> None:
    log.append(record)
    store.apply(record)


def compact(log: list[MirrorStateRecord]) -> list[MirrorStateRecord]:
    """Kafka's compaction (tombstones kept): the last record of each key, in log order."""
    last = {record.key: i for i, record in enumerate(log)}
    return [record for i, record in enumerate(log) if last[record.key] == i]


def test_unknown_until_stored_then_last_writer_wins() -> None:
    store, log = MirrorStateStore(), []
    assert store.state_of("m", "orders", 0) is S.UNKNOWN
    write(store, store.state_record(KEYS[0], S.PREPARING), log)
    write(store, store.state_record(KEYS[1], S.PREPARING), log)
    write(store, store.state_record(KEYS[0], S.MIRRORING), log)
    assert store.state_of("m", "orders", 0) is S.MIRRORING
    assert store.state_of("m", "orders", 1) is S.PREPARING
    assert store.partitions("m") == {KEYS[0]: S.MIRRORING, KEYS[1]: S.PREPARING}


def test_lme_snapshots_merge_and_replay() -> None:
    store, log = MirrorStateStore(), []
    write(store, store.last_mirrored_epochs_record("m", {("orders", 0): 3}), log)
    write(store, store.last_mirrored_epochs_record("m", {("orders", 1): 5}), log)
    assert store.last_mirrored_epoch("m", "orders", 0) == 3
    assert store.last_mirrored_epoch("m", "orders", 1) == 5
    assert store.last_mirrored_epoch("m", "orders", 2) == NO_LAST_MIRRORED_EPOCH
    compacted = MirrorStateStore.replayed((r.key, r.value) for r in compact(log))
    assert compacted.last_mirrored_epoch("m", "orders", 0) == 3
    assert len(compact(log)) == 1


def test_delete_mirror_tombstones_everything_of_that_mirror_only() -> None:
    store, log = MirrorStateStore(), []
    other = MirrorPartitionKey("other", TOPIC_ID, "orders", 0)
    write(store, store.state_record(KEYS[0], S.STOPPED), log)
    write(store, store.state_record(other, S.MIRRORING), log)
    write(store, store.last_mirrored_epochs_record("m", {("orders", 0): 2}), log)
    for tombstone in store.mirror_tombstones("m"):
        write(store, tombstone, log)
    assert store.state_of("m", "orders", 0) is S.UNKNOWN
    assert store.last_mirrored_epoch("m", "orders", 0) == NO_LAST_MIRRORED_EPOCH
    assert store.state_of("other", "orders", 0) is S.MIRRORING
    assert store.mirrors() == {"other"}


def test_unknown_is_never_stored() -> None:
    with pytest.raises(ValueError):
        MirrorStateStore().state_record(KEYS[0], S.UNKNOWN)


def test_spec_state_key_is_refused_on_replay() -> None:
    key = encode_mirror_state_key(MirrorPartitionStateKey(mirror_name="m"))
    value = encode_mirror_state_value(
        MirrorPartitionStateValue(topic_name="orders", partition=0, state=1)  # type: ignore[arg-type]
    )
    with pytest.raises(MirrorStateRecordError):
        MirrorStateStore.replayed([(key, value)])
    with pytest.raises(MirrorStateRecordError):
        MirrorStateStore.replayed([(b"\x00\x09", None)])


_ops = st.lists(
    st.one_of(
        st.tuples(st.just("state"), st.sampled_from(KEYS), st.sampled_from(STORED_STATES)),
        st.tuples(
            st.just("lme"),
            st.sampled_from([("orders", p) for p in range(3)]),
            st.integers(-1, 50),
        ),
        st.tuples(st.just("delete"), st.just(None), st.just(None)),
    ),
    max_size=40,
)


@given(_ops)
def test_replay_and_compacted_replay_agree_with_memory(ops: list[tuple]) -> None:
    store, log = MirrorStateStore(), []
    for kind, target, value in ops:
        if kind == "state":
            write(store, store.state_record(target, value), log)
        elif kind == "lme":
            write(store, store.last_mirrored_epochs_record("m", {target: value}), log)
        else:
            for tombstone in store.mirror_tombstones("m"):
                write(store, tombstone, log)
    for records in (log, compact(log)):
        replayed = MirrorStateStore.replayed((r.key, r.value) for r in records)
        for key in KEYS:
            assert replayed.state_of("m", "orders", key.partition) is store.state_of(
                "m", "orders", key.partition
            )
            assert replayed.last_mirrored_epoch(
                "m", "orders", key.partition
            ) == store.last_mirrored_epoch("m", "orders", key.partition)


@given(st.binary(max_size=64))
def test_murmur2_is_kafkas(data: bytes) -> None:
    assert murmur2(data) == kafka_python_murmur2(data)


def test_placement_is_stable_and_in_range() -> None:
    seen = {mirror_state_partition("m", TOPIC_ID, p, 50) for p in range(200)}
    assert seen <= set(range(50))
    assert len(seen) > 25
    assert mirror_state_partition("m", TOPIC_ID, 7, 50) == mirror_state_partition(
        "m", TOPIC_ID, 7, 50
    )
    assert 0 <= metadata_coordinator_partition("my-mirror", 50) < 50
    with pytest.raises(ValueError):
        metadata_coordinator_partition("m", 0)
