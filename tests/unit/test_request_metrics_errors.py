"""``error_counts`` visits only the fields that can hold error codes, yet counts the same
codes as a walk over every field of every nested message."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from helpers.protocol_strategies import KIO_CLASSES, OUR_CLASSES, entities
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.produce.v9 import response as produce
from kio.static.primitive import i16, i32, i64

from mirrorsim.broker.metrics.requests import error_counts
from mirrorsim.protocol.errors import error_code_from_wire

RESPONSE_CLASSES = [cls for cls in KIO_CLASSES + OUR_CLASSES if cls.__name__.endswith("Response")]


def every_error_code(node: Any) -> Counter[str]:
    """The model: look at every field of every dataclass, however deep."""
    tally: Counter[str] = Counter()
    if isinstance(node, tuple | list):
        for item in node:
            tally += every_error_code(item)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)
            if field.name == "error_code":
                code = error_code_from_wire(int(value))
                tally[getattr(code, "name", str(code))] += 1
            else:
                tally += every_error_code(value)
    return tally


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_counts_match_a_walk_over_every_field(data: st.DataObject) -> None:
    cls = data.draw(st.sampled_from(RESPONSE_CLASSES))
    body = data.draw(entities(cls))
    assert error_counts(body) == every_error_code(body)


def test_produce_response_counts_each_partition_error() -> None:
    def partition(index: int, code: KioErrorCode) -> produce.PartitionProduceResponse:
        return produce.PartitionProduceResponse(
            index=i32(index),
            error_code=code,
            base_offset=i64(0),
            log_append_time=None,
            log_start_offset=i64(0),
            record_errors=(),
            error_message=None,
        )

    body = produce.ProduceResponse(
        responses=(
            produce.TopicProduceResponse(
                name="t",
                partition_responses=(
                    partition(0, KioErrorCode.none),
                    partition(1, KioErrorCode.not_leader_or_follower),
                    partition(2, KioErrorCode.not_leader_or_follower),
                ),
            ),
        ),
    )
    assert error_counts(body) == {"NONE": 1, "NOT_LEADER_OR_FOLLOWER": 2}
    assert error_counts([body, body])["NOT_LEADER_OR_FOLLOWER"] == 4
    assert error_counts(i16(3)) == {}
