"""DescribeMirrors (99): per-partition lag, state and last mirror leader epoch of mirrors.

The spec's request has IncludeAuthorizedOperations but its response has no field to carry them;
``DescribedMirror.authorized_operations`` is that field as a tagged field (tag 0, Kafka's
``AuthorizedOperations`` int32 with its -2^31 "not requested" default), so a client built from
the spec's schema reads the response unchanged.

Generated from protocol/schemas/DescribeMirrorsRequest.json and DescribeMirrorsResponse.json by
``scripts/generate_messages.py``: edit the schemas, not this file. Field names are kio's
snake_case of the JSON names. Error codes are int16 on the wire: wrap them with
``ErrorCode(...)``.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta, i64


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeMirrorsRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(99)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    mirror_names: tuple[str, ...] = field(metadata={"kafka_type": "string"})
    """The names of the mirrors to describe. Empty means all mirrors."""
    include_authorized_operations: bool = field(metadata={"kafka_type": "bool"}, default=False)
    """Whether to include authorized operations."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionDetail:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(99)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    """The partition index."""
    source_offset: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """The high watermark offset from the source cluster leader, or -1 if not yet available."""
    destination_offset: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """The log end offset on the destination cluster, or -1 if not yet available."""
    lag: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """The lag (source offset - destination offset), or -1 if not yet available."""
    state: str = field(metadata={"kafka_type": "string"})
    """The partition state."""
    last_mirror_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    """The last mirror leader epoch, or -1 if not available."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitions:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(99)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    """The topic name."""
    partitions: tuple[PartitionDetail, ...]
    """Each partition detail."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedMirror:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(99)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    """The error code, or 0 if there was no error."""
    mirror_name: str = field(metadata={"kafka_type": "string"})
    """The cluster mirror name."""
    topics: tuple[TopicPartitions, ...]
    """Each topic in the mirror."""
    authorized_operations: i32 = field(
        metadata={"kafka_type": "int32", "tag": 0}, default=i32(-2147483648)
    )
    """32-bit bitfield of the caller's operations on this mirror (1 << AclOperation), when the
    request asked for them.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeMirrorsResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(99)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    """The duration in milliseconds for which the request was throttled due to a quota violation, or
    zero if the request did not violate any quota.
    """
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    """The error code, or 0 if there was no error."""
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The error message, or null if there was no error."""
    mirrors: tuple[DescribedMirror, ...]
    """Each described mirror."""
