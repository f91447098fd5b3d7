"""The LastMirrorEpochs value codec writes and reads kio's bytes, without kio objects."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.static.primitive import i32

from mirrorsim.protocol.messages.last_mirror_epochs import (
    decode_last_mirror_epochs,
    encode_last_mirror_epochs,
)
from mirrorsim.protocol.messages.mirror_state_records import (
    LAST_MIRROR_EPOCHS_RECORD_TYPE,
    LastMirrorEpochsPartition,
    LastMirrorEpochsTopic,
    LastMirrorEpochsValue,
    MirrorStateRecordError,
    decode_mirror_state_value,
    encode_mirror_state_value,
)

epochs_strategy = st.dictionaries(
    st.tuples(
        st.text(min_size=1, max_size=12),
        st.integers(0, 2**31 - 1),
    ),
    st.integers(-(2**31), 2**31 - 1),
    max_size=40,
)


def kio_value(epochs: dict[tuple[str, int], int]) -> LastMirrorEpochsValue:
    by_topic: dict[str, list[LastMirrorEpochsPartition]] = {}
    for (topic, partition), epoch in sorted(epochs.items()):
        by_topic.setdefault(topic, []).append(
            LastMirrorEpochsPartition(partition_index=i32(partition), last_mirror_epoch=i32(epoch))
        )
    return LastMirrorEpochsValue(
        topics=tuple(
            LastMirrorEpochsTopic(name=topic, partitions=tuple(parts))  # type: ignore[arg-type]
            for topic, parts in by_topic.items()
        )
    )


@given(epochs_strategy)
def test_the_bytes_are_kios_and_read_back_by_both(epochs: dict[tuple[str, int], int]) -> None:
    data = encode_last_mirror_epochs(epochs)
    assert data == encode_mirror_state_value(kio_value(epochs))
    assert decode_last_mirror_epochs(data) == epochs
    decoded = decode_mirror_state_value(LAST_MIRROR_EPOCHS_RECORD_TYPE, data)
    assert decoded == kio_value(epochs)


def test_unknown_tagged_fields_are_skipped() -> None:
    """A newer writer's tagged fields on a partition, a topic and the value."""
    tagged = b"\x01\x05\x02\xab\xcd"
    data = (
        b"\x00\x00"  # value version
        + b"\x02"  # one topic
        + b"\x02t"  # name "t"
        + b"\x02"  # one partition
        + b"\x00\x00\x00\x03\x00\x00\x00\x07"
        + tagged
        + tagged
        + tagged
    )
    assert decode_last_mirror_epochs(data) == {("t", 3): 7}


@pytest.mark.parametrize(
    "data",
    [
        b"\x00",
        b"\x00\x01\x01\x00",
        b"\x00\x00\x02\x02t\x02\x00\x00\x00\x03",
        b"\x00\x00\x00\x00",
        encode_last_mirror_epochs({("t", 1): 2}) + b"\x00",
        encode_last_mirror_epochs({("t", 1): 2})[:-1],
    ],
    ids=["short", "version 1", "truncated partition", "null topics", "trailing", "cut"],
)
def test_malformed_values_are_refused(data: bytes) -> None:
    with pytest.raises(MirrorStateRecordError):
        decode_last_mirror_epochs(data)
