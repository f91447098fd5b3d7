"""How much log a share fetch reads: bounded by the records asked for, not by the bytes."""

from __future__ import annotations

from mirrorsim.broker.group.share_partition import SharePartition
from mirrorsim.broker.share.manager import (
    FIRST_READ_BYTES,
    MIN_READ_BYTES,
    LoadedSharePartition,
    read_limit,
)

LIBRDKAFKA_MAX_BYTES = 52_428_800
LIBRDKAFKA_MAX_RECORDS = 500


def loaded(bytes_per_record: float) -> LoadedSharePartition:
    entry = LoadedSharePartition(SharePartition(start_offset=0), leader_epoch=0, state_epoch=0)
    entry.bytes_per_record = bytes_per_record
    return entry


def test_a_first_read_is_bounded() -> None:
    assert read_limit(loaded(0), LIBRDKAFKA_MAX_BYTES, LIBRDKAFKA_MAX_RECORDS) == FIRST_READ_BYTES


def test_later_reads_cover_the_records_asked_for_twice_over() -> None:
    limit = read_limit(loaded(1_100.0), LIBRDKAFKA_MAX_BYTES, LIBRDKAFKA_MAX_RECORDS)
    assert limit == 1_100 * 500 * 2


def test_small_records_still_read_a_useful_amount_and_the_request_caps_it() -> None:
    assert read_limit(loaded(10.0), LIBRDKAFKA_MAX_BYTES, 500) == MIN_READ_BYTES
    assert read_limit(loaded(1e6), 4_000_000, 500) == 4_000_000
