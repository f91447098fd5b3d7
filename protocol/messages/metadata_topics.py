"""Metadata response topic entries encoded once, then spliced into later responses as bytes.

Describing a topic costs a dict, a kio entity and kio's encoding per partition: at 1,000
topics of 100 partitions about 1.5 s of CPU for one Metadata response, and a mirror asks
its source for every mirrored topic every 30 s. An unchanged topic encodes to the same
bytes every time, so a broker keeps them (``EncodedTopic``) and answers with a
``SplicedMetadataResponse``: the rest of the body as kio encodes it with an empty topics
array, the kept entries written in that array's place.

The splice relies on the Metadata layout: the topics array is followed only by
fixed-size fields (ClusterAuthorizedOperations int32 in v8-v10, ErrorCode int16 from v13)
and, in the flexible versions (v9+), an empty tagged-field section. ``_suffix_size``
derives that size from the response class and refuses any other layout, and every
splice checks that the empty array's encoding sits where the layout puts it, so a
layout this module does not know fails loudly instead of sending corrupt bytes.
"""

from __future__ import annotations

import dataclasses
import io
from collections import Counter
from collections.abc import Mapping
from datetime import timedelta
from functools import cache
from typing import Any, cast

from kio.serial import entity_writer

from mirrorsim.protocol.builder import build_nested
from mirrorsim.protocol.messages.encoded_response import EncodedResponse
from mirrorsim.protocol.messages.wire_writing import NO_TAGGED_FIELDS, array_length
from mirrorsim.protocol.registry import response_class

METADATA_KEY = 3
_FIXED_SIZES = {"int16": 2, "error_code": 2, "int32": 4}
"""Sizes of the field types that may follow the topics array."""


class MetadataSpliceError(ValueError):
    """A body, topic or response layout the splice cannot produce kio's bytes for."""


@dataclasses.dataclass(frozen=True, slots=True)
class EncodedTopic:
    """One entry of a Metadata response's topics array as kio encodes it."""

    version: int
    """The response version it was encoded for: entries differ between versions."""
    data: bytes
    error_codes: tuple[tuple[int, int], ...]
    """(error code, how many) over the topic and its partitions, for the request metrics,
    which count every error code of a response as Kafka's ``errorCounts`` does."""


def encode_topic(version: int, fields: Mapping[str, Any]) -> EncodedTopic:
    """The topics-array entry that ``fields`` describes (as ``build`` takes it, any
    version's fields) in Metadata response ``version``, encoded by kio."""
    topic = build_nested(_response_class(version), ("topics",), fields)
    buffer = io.BytesIO()
    entity_writer(type(topic))(buffer, topic)
    codes = Counter(int(partition.error_code) for partition in topic.partitions)
    codes[int(topic.error_code)] += 1
    return EncodedTopic(version, buffer.getvalue(), tuple(sorted(codes.items())))


@dataclasses.dataclass(frozen=True, slots=True)
class SplicedMetadataResponse(EncodedResponse):
    """A Metadata response whose topics are already encoded.

    ``body`` is the response built with an empty topics array; ``topics`` stand in that
    array's place. ``protocol.framing`` encodes it, and it shows the throttle time of
    ``body`` to whoever reads or raises it before then.
    """

    body: Any
    topics: tuple[EncodedTopic, ...]

    @property
    def api_key(self) -> int:
        return int(self.body.__api_key__)

    @property
    def flexible(self) -> bool:
        return bool(self.body.__flexible__)

    @property
    def throttle_time(self) -> timedelta:
        """The body's; an AttributeError, like the body's, before v3 (which has none)."""
        return cast(timedelta, self.body.throttle_time)

    def with_throttle_time(self, throttle_time: timedelta) -> SplicedMetadataResponse:
        return dataclasses.replace(
            self, body=dataclasses.replace(self.body, throttle_time=throttle_time)
        )

    def error_code_counts(self) -> list[tuple[int, int]]:
        """The kept topics' codes, and the body's own from v13."""
        counts: Counter[int] = Counter()
        for topic in self.topics:
            for code, count in topic.error_codes:
                counts[code] += count
        own = getattr(self.body, "error_code", None)
        if own is not None:
            counts[int(own)] += 1
        return list(counts.items())

    def encoded_body(self) -> list[bytes | bytearray]:
        """The body as kio would encode it with ``topics`` in its topics array, as parts
        to write in order (the topic entries are passed on, not copied)."""
        body = self.body
        version = int(body.__version__)
        if type(body) is not _response_class(version):
            raise MetadataSpliceError(f"{type(body).__name__} is not a Metadata response")
        if body.topics:
            raise MetadataSpliceError("the body must be built with an empty topics array")
        if any(topic.version != version for topic in self.topics):
            raise MetadataSpliceError(f"a topic encoded for another version than v{version}")
        buffer = io.BytesIO()
        entity_writer(type(body))(buffer, body)
        encoded = buffer.getvalue()
        flexible = bool(body.__flexible__)
        empty = array_length(0, flexible)
        end = len(encoded) - _suffix_size(version)
        start = end - len(empty)
        if start < 0 or encoded[start:end] != empty:
            raise MetadataSpliceError(
                f"Metadata v{version}: no empty topics array {len(encoded) - end} bytes "
                "before the end of the body"
            )
        count = len(self.topics)
        length = array_length(count, flexible)
        return [encoded[:start], length, *(topic.data for topic in self.topics), encoded[end:]]


def _response_class(version: int) -> type:
    cls = response_class(METADATA_KEY, version)
    if cls is None:
        raise MetadataSpliceError(f"no Metadata response v{version}")
    return cls


@cache
def _suffix_size(version: int) -> int:
    """How many bytes follow the topics array in a Metadata response of ``version``.

    kio writes the fields in declaration order, then (flexible versions) the tagged-field
    section, which is a single zero byte only when the message has no tagged fields.
    """
    cls = _response_class(version)
    fields = dataclasses.fields(cls)
    if any("tag" in field.metadata for field in fields):
        raise MetadataSpliceError(f"Metadata v{version} has tagged fields of a varying size")
    names = [field.name for field in fields]
    size = len(NO_TAGGED_FIELDS) if cls.__flexible__ else 0  # type: ignore[attr-defined]
    for field in fields[names.index("topics") + 1 :]:
        field_size = _FIXED_SIZES.get(field.metadata.get("kafka_type", ""))
        if field_size is None:
            raise MetadataSpliceError(
                f"Metadata v{version}: {field.name} after the topics has no fixed size"
            )
        size += field_size
    return size
