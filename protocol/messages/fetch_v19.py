"""Fetch v19: kio's v18 plus ``MirrorLeaderEpoch`` (KIP-1279).

The destination's intra-cluster followers send the mirror leader epoch they know in each
``FetchPartition`` (tag 2) and the leader answers its own in ``PartitionData`` (tag 3);
both default to -1 and, being tagged, cost nothing when unset. Structs whose layout did
not change (``ReplicaState``, ``ForgottenTopic``, ``EpochEndOffset``, ...) are kio's v18
classes: their wire encoding is identical in v19.
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v18.request import ForgottenTopic, ReplicaState
from kio.schema.fetch.v18.response import (
    AbortedTransaction,
    EpochEndOffset,
    LeaderIdAndEpoch,
    NodeEndpoint,
    SnapshotId,
)
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import BrokerId
from kio.static.constants import EntityType
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64

MIRROR_LEADER_EPOCH_REQUEST_TAG = 2
MIRROR_LEADER_EPOCH_RESPONSE_TAG = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchPartition:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(19)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(1)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    partition: i32 = field(metadata={"kafka_type": "int32"})
    """The partition index."""
    current_leader_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    """The current leader epoch of the partition."""
    fetch_offset: i64 = field(metadata={"kafka_type": "int64"})
    """The message offset."""
    last_fetched_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    """The epoch of the last fetched record or -1 if there is none."""
    log_start_offset: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """The earliest available offset of the follower replica (follower requests only)."""
    partition_max_bytes: i32 = field(metadata={"kafka_type": "int32"})
    """The maximum bytes to fetch from this partition."""
    replica_directory_id: uuid.UUID | None = field(
        metadata={"kafka_type": "uuid", "tag": 0}, default=None
    )
    """The directory id of the follower fetching."""
    high_watermark: i64 = field(
        metadata={"kafka_type": "int64", "tag": 1}, default=i64(9223372036854775807)
    )
    """The high watermark known by the replica (-1 unknown, max int64 unsupported)."""
    mirror_leader_epoch: i32 = field(
        metadata={"kafka_type": "int32", "tag": MIRROR_LEADER_EPOCH_REQUEST_TAG},
        default=i32(-1),
    )
    """The latest known mirror leader epoch."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchTopic:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(19)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(1)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The unique topic ID."""
    partitions: tuple[FetchPartition, ...]
    """The partitions to fetch."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(19)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(1)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    cluster_id: str | None = field(metadata={"kafka_type": "string", "tag": 0}, default=None)
    """The clusterId if known."""
    replica_state: ReplicaState = field(metadata={"tag": 1}, default=ReplicaState())
    """The state of the replica in the follower."""
    max_wait: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    """The maximum time in milliseconds to wait for the response."""
    min_bytes: i32 = field(metadata={"kafka_type": "int32"})
    """The minimum bytes to accumulate in the response."""
    max_bytes: i32 = field(metadata={"kafka_type": "int32"}, default=i32(2147483647))
    """The maximum bytes to fetch."""
    isolation_level: i8 = field(metadata={"kafka_type": "int8"}, default=i8(0))
    """READ_UNCOMMITTED (0) or READ_COMMITTED (1)."""
    session_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(0))
    """The fetch session ID."""
    session_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    """The fetch session epoch, which is used for ordering requests in a session."""
    topics: tuple[FetchTopic, ...]
    """The topics to fetch."""
    forgotten_topics_data: tuple[ForgottenTopic, ...]
    """In an incremental fetch request, the partitions to remove."""
    rack_id: str = field(metadata={"kafka_type": "string"}, default="")
    """Rack ID of the consumer making this request."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionData:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(19)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(1)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    """The partition index."""
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """The error code, or 0 if there was no fetch error."""
    high_watermark: i64 = field(metadata={"kafka_type": "int64"})
    """The current high watermark."""
    last_stable_offset: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """The last stable offset (LSO) of the partition."""
    log_start_offset: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    """The current log start offset."""
    diverging_epoch: EpochEndOffset = field(metadata={"tag": 0}, default=EpochEndOffset())
    """The largest epoch and its end offset beyond which the fetcher's log diverges."""
    current_leader: LeaderIdAndEpoch = field(metadata={"tag": 1}, default=LeaderIdAndEpoch())
    """The current leader of the partition."""
    snapshot_id: SnapshotId = field(metadata={"tag": 2}, default=SnapshotId())
    """The snapshot to fetch when the fetch offset is below the log start offset."""
    mirror_leader_epoch: i32 = field(
        metadata={"kafka_type": "int32", "tag": MIRROR_LEADER_EPOCH_RESPONSE_TAG},
        default=i32(-1),
    )
    """The latest known mirror leader epoch."""
    aborted_transactions: tuple[AbortedTransaction, ...] | None
    """The aborted transactions."""
    preferred_read_replica: BrokerId = field(metadata={"kafka_type": "int32"}, default=BrokerId(-1))
    """The preferred read replica for the consumer to use on its next fetch request."""
    records: Records | None = field(metadata={"kafka_type": "records"})
    """The record data."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchableTopicResponse:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(19)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(1)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The unique topic ID."""
    partitions: tuple[PartitionData, ...]
    """The topic partitions."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(19)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(1)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    """The throttle time in milliseconds, or zero if no quota was violated."""
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """The top level response error code."""
    session_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(0))
    """The fetch session ID, or 0 if this is not part of a fetch session."""
    responses: tuple[FetchableTopicResponse, ...]
    """The response topics."""
    node_endpoints: tuple[NodeEndpoint, ...] = field(metadata={"tag": 0}, default=())
    """Endpoints for the current leaders named in NOT_LEADER_OR_FOLLOWER/FENCED errors."""
