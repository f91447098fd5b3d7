"""CreateTopics v8: kio's v7 plus the nullable ``MirrorInfo`` struct (KIP-1279).

A mirror topic is created with its source topic id so that fetches to the source pass
topic-id validation and a same-named topic is recognised as the same logical topic.
``mirror_info`` is null for an ordinary topic. The v8 response is unchanged from v7, so
kio's v7 response class serves it.
"""

import datetime
import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.create_topics.v7.request import CreatableReplicaAssignment, CreatableTopicConfig
from kio.schema.create_topics.v7.response import CreateTopicsResponse
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.types import TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta

__all__ = [
    "CreatableReplicaAssignment",
    "CreatableTopic",
    "CreatableTopicConfig",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "MirrorInfo",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class MirrorInfo:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(8)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(19)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The topic ID from the source cluster."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopic:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(8)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(19)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    name: TopicName = field(metadata={"kafka_type": "string"})
    """The topic name."""
    num_partitions: i32 = field(metadata={"kafka_type": "int32"})
    """The number of partitions, or -1 for the broker default (or manual assignment)."""
    replication_factor: i16 = field(metadata={"kafka_type": "int16"})
    """The replication factor, or -1 for the broker default (or manual assignment)."""
    assignments: tuple[CreatableReplicaAssignment, ...]
    """The manual partition assignment, or the empty array for automatic assignment."""
    configs: tuple[CreatableTopicConfig, ...]
    """The custom topic configurations to set."""
    mirror_info: MirrorInfo | None = None
    """Mirror information for creating a mirror topic from a source cluster."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(8)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(19)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topics: tuple[CreatableTopic, ...]
    """The topics to create."""
    timeout: i32Timedelta = field(
        metadata={"kafka_type": "timedelta_i32"},
        default=i32Timedelta.parse(datetime.timedelta(milliseconds=60000)),
    )
    """How long to wait in milliseconds before timing out the request."""
    validate_only: bool = field(metadata={"kafka_type": "bool"}, default=False)
    """If true, check that the topics can be created as specified, but don't create anything."""
