"""Hypothesis strategies for any kio-style message class, built from its field metadata.

Also checks the pure-Python schema reader against kio's native reader on every kio
request/response class: both must decode the same bytes to the same value.
"""

import datetime
from typing import Any

import pytest
from helpers.protocol_strategies import (
    _EPOCH,
    KIO_CLASSES,
    OUR_CLASSES,
    entities,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader, entity_writer

from mirrorsim.protocol.schema_reader import schema_reader


def encode(entity: Any) -> bytes:
    import io

    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_schema_reader_agrees_with_kio_on_kio_messages(data: st.DataObject) -> None:
    cls = data.draw(st.sampled_from(KIO_CLASSES))
    _assert_both_readers_decode(cls, data.draw(entities(cls)))


@pytest.mark.parametrize("cls", OUR_CLASSES, ids=lambda c: f"{c.__module__}.{c.__name__}")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_schema_reader_agrees_with_kio_on_mirror_messages(cls: type, data: st.DataObject) -> None:
    _assert_both_readers_decode(cls, data.draw(entities(cls)))


@pytest.mark.slow
@pytest.mark.parametrize("cls", KIO_CLASSES, ids=lambda c: f"{c.__module__}.{c.__name__}")
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_schema_reader_agrees_with_kio_on_every_kio_class(cls: type, data: st.DataObject) -> None:
    _assert_both_readers_decode(cls, data.draw(entities(cls)))


def _assert_both_readers_decode(cls: type, value: Any) -> None:
    raw = encode(value)
    assert schema_reader(cls)(raw, 0) == (value, len(raw))
    assert entity_reader(cls)(raw, 0) == (value, len(raw))


def test_schema_reader_keeps_millisecond_timestamps_exact() -> None:
    """Far-future timestamps: the pure-Python reader uses integer arithmetic, no floats."""
    from kio.schema.produce.v12.response import (
        LeaderIdAndEpoch,
        PartitionProduceResponse,
        ProduceResponse,
        TopicProduceResponse,
    )

    appended = _EPOCH + datetime.timedelta(milliseconds=13015516085925)
    partition = PartitionProduceResponse(
        index=0,
        error_code=KioErrorCode.none,
        base_offset=0,
        log_append_time=appended,
        log_start_offset=0,
        record_errors=(),
        error_message=None,
        current_leader=LeaderIdAndEpoch(),
    )
    response = ProduceResponse(
        responses=(TopicProduceResponse(name="t", partition_responses=(partition,)),),
        throttle_time=datetime.timedelta(0),
    )
    raw = encode(response)
    decoded, _ = schema_reader(ProduceResponse)(raw, 0)
    assert decoded.responses[0].partition_responses[0].log_append_time == appended
