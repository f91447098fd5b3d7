"""DeleteMirror (104): delete an empty (or fully stopped) mirror; failback is then impossible.

Generated from protocol/schemas/DeleteMirrorRequest.json and DeleteMirrorResponse.json by
``scripts/generate_messages.py``: edit the schemas, not this file. Field names are kio's
snake_case of the JSON names. Error codes are int16 on the wire: wrap them with
``ErrorCode(...)``.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32Timedelta


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteMirrorRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(104)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    mirror_name: str = field(metadata={"kafka_type": "string"})
    """The cluster mirror name to delete."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteMirrorResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(104)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    """The duration in milliseconds for which the request was throttled due to a quota violation, or
    zero if the request did not violate any quota.
    """
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    """The error code, or 0 if there was no error."""
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The error message, or null if there was no error."""
