"""One request description, built at whichever version was negotiated."""

from __future__ import annotations

import datetime
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer

from mirrorsim.protocol.builder import RequestBuildError, build_request
from mirrorsim.protocol.registry import kio_versions

METADATA, CREATE_TOPICS = 3, 19
ALL_METADATA_FIELDS = {
    "topics": [{"name": "orders", "topic_id": None}],
    "allow_auto_topic_creation": False,
    "include_cluster_authorized_operations": False,
    "include_topic_authorized_operations": False,
}


@given(st.integers(1, 13))
def test_every_metadata_version_builds_and_round_trips(version: int) -> None:
    request = build_request(METADATA, version, ALL_METADATA_FIELDS)
    assert request.__version__ == version
    assert [t.name for t in request.topics] == ["orders"]
    buffer = io.BytesIO()
    entity_writer(type(request))(buffer, request)
    decoded, _ = entity_reader(type(request))(buffer.getvalue(), 0)
    assert decoded == request


def test_fields_a_version_lacks_are_dropped() -> None:
    old = build_request(METADATA, 1, ALL_METADATA_FIELDS)
    assert not hasattr(old, "allow_auto_topic_creation")
    assert not hasattr(old.topics[0], "topic_id")


def test_a_missing_required_field_is_an_error() -> None:
    with pytest.raises(RequestBuildError, match="include_topic_authorized_operations"):
        build_request(METADATA, 12, {"topics": None})


def test_nested_lists_of_dicts_become_the_versions_nested_classes() -> None:
    lo, hi = kio_versions(CREATE_TOPICS) or (0, 0)
    for version in range(lo, hi + 1):
        request = build_request(
            CREATE_TOPICS,
            version,
            {
                "topics": [
                    {
                        "name": "t",
                        "num_partitions": 3,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [{"name": "retention.ms", "value": "1"}],
                    }
                ],
                "timeout": datetime.timedelta(seconds=1),
                "validate_only": False,
            },
        )
        assert request.topics[0].configs[0].name == "retention.ms"


def test_unknown_api_key_is_an_error() -> None:
    with pytest.raises(RequestBuildError):
        build_request(9999, 0, {})


def test_a_name_no_version_has_is_an_error_at_the_top_and_when_nested() -> None:
    with pytest.raises(RequestBuildError, match="has no field allow_auto_topic_creaton"):
        build_request(METADATA, 12, {**ALL_METADATA_FIELDS, "allow_auto_topic_creaton": True})
    nested = {**ALL_METADATA_FIELDS, "topics": [{"name": "orders", "topic_ids": None}]}
    with pytest.raises(RequestBuildError, match=r"MetadataRequest\.topics has no field topic_ids"):
        build_request(METADATA, 1, nested)


def test_a_response_field_of_a_removed_version_is_an_error() -> None:
    """ListOffsets v0's ``max_num_offsets`` is in no version the broker supports (1+)."""
    partition = {"partition_index": 0, "timestamp": -1, "max_num_offsets": 1}
    description = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": "orders", "partitions": [partition]}],
    }
    with pytest.raises(RequestBuildError, match="max_num_offsets"):
        build_request(2, 1, description)
