"""Hypothesis strategies and expectations for record batches."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from mirrorsim.protocol.records import (
    Compression,
    RawBatch,
    Record,
    TimestampType,
    build_batch,
)

payloads = st.one_of(
    st.none(),
    st.binary(max_size=40),
    st.builds(
        lambda unit, count: unit * count, st.binary(min_size=1, max_size=3), st.integers(1, 40_000)
    ),
)


headers = st.lists(
    st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=16))), max_size=4
).map(tuple)


@dataclass(frozen=True)
class BatchSpec:
    """Everything ``build_batch`` takes, drawn together so failures print one example."""

    records: tuple[Record, ...]
    base_offset: int
    compression: Compression
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False
    partition_leader_epoch: int = -1

    def build(self) -> RawBatch:
        return build_batch(
            self.records,
            base_offset=self.base_offset,
            compression=self.compression,
            timestamp_type=self.timestamp_type,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            is_transactional=self.is_transactional,
            partition_leader_epoch=self.partition_leader_epoch,
        )


@st.composite
def record_lists(draw: st.DrawFn, *, base_offset: int = 0, max_size: int = 6) -> tuple[Record, ...]:
    """Records with increasing offsets (gaps allowed) and millisecond timestamps that may
    go backwards from the first, as producers with skewed clocks write them."""
    base_timestamp = draw(st.integers(-1, 2**45))
    gaps = draw(st.lists(st.integers(1, 3), min_size=1, max_size=max_size))
    offset = base_offset - gaps[0]
    records = []
    for gap in gaps:
        offset += gap
        records.append(
            Record(
                offset,
                base_timestamp + draw(st.integers(-(10**7), 10**7)),
                draw(payloads),
                draw(payloads),
                draw(headers),
            )
        )
    return tuple(records)


@st.composite
def batch_specs(
    draw: st.DrawFn,
    *,
    codecs: st.SearchStrategy[Compression] | None = None,
) -> BatchSpec:
    base_offset = draw(st.integers(0, 2**62))
    return BatchSpec(
        records=draw(record_lists(base_offset=base_offset)),
        base_offset=base_offset,
        compression=draw(codecs if codecs is not None else st.sampled_from(Compression)),
        timestamp_type=draw(st.sampled_from(TimestampType)),
        producer_id=draw(st.integers(-1, 2**63 - 1)),
        producer_epoch=draw(st.integers(-1, 2**15 - 1)),
        base_sequence=draw(st.integers(-1, 2**31 - 1)),
        is_transactional=draw(st.booleans()),
        partition_leader_epoch=draw(st.integers(-1, 2**31 - 1)),
    )


def expected_records(spec: BatchSpec) -> list[Record]:
    if spec.timestamp_type is TimestampType.CREATE_TIME:
        return list(spec.records)
    max_timestamp = max(record.timestamp for record in spec.records)
    return [Record(r.offset, max_timestamp, r.key, r.value, r.headers) for r in spec.records]
