"""Kafka request/response frames: size prefix, headers and bodies, bytes in, objects out.

This module is the one place that knows how a (api key, version) pair maps to a message
class and which header version goes with it. The broker, the client layer and the tools
all use it, so every protocol definition exists once.

Rules encoded here (from Kafka's ``RequestHeader``/``ResponseHeader`` schemas):
- request header v2 for flexible versions, v1 otherwise;
- response header v1 for flexible versions, v0 otherwise, except ApiVersions, whose
  response header is always v0 so that a client can parse it before negotiating.

Headers and bodies are decoded with ``schema_reader.tolerant_reader``: an unknown tagged
field (a newer peer) is skipped instead of closing the connection.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_writer
from kio.static.primitive import i16, i32

from mirrorsim.protocol.registry import request_class, response_class
from mirrorsim.protocol.schema_reader import tolerant_reader

API_VERSIONS_KEY = 18
_SIZE = struct.Struct(">i")
_KEY_VERSION_CORRELATION = struct.Struct(">hhi")


class FrameError(ValueError):
    """A frame that cannot be parsed. ``correlation_id`` is set when the header was readable."""

    def __init__(self, message: str, *, correlation_id: int | None = None) -> None:
        super().__init__(message)
        self.correlation_id = correlation_id


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass(frozen=True, slots=True)
class Request:
    header: RequestHeader
    body: Any


def peek_header(payload: bytes | memoryview) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a request payload without decoding it."""
    if len(payload) < _KEY_VERSION_CORRELATION.size:
        raise FrameError(f"request of {len(payload)} bytes is too short for a header")
    key, version, correlation_id = _KEY_VERSION_CORRELATION.unpack_from(payload, 0)
    return key, version, correlation_id


def _request_header_class(flexible: bool) -> type:
    return RequestHeaderV2 if flexible else RequestHeaderV1


def _response_header_class(api_key: int, flexible: bool) -> type:
    if api_key == API_VERSIONS_KEY or not flexible:
        return ResponseHeaderV0
    return ResponseHeaderV1


def decode_request(payload: bytes | memoryview) -> Request:
    """Decode a request payload (the frame without its 4-byte size prefix)."""
    key, version, correlation_id = peek_header(payload)
    cls = request_class(key, version)
    if cls is None:
        raise FrameError(
            f"unsupported api key {key} version {version}", correlation_id=correlation_id
        )
    header_cls = _request_header_class(cls.__flexible__)
    try:
        header, pos = tolerant_reader(header_cls)(payload, 0)
        body, size = tolerant_reader(cls)(payload, pos)
    except Exception as exc:  # the readers raise several exception types for malformed input
        raise FrameError(
            f"malformed {cls.__name__} v{version}: {exc}", correlation_id=correlation_id
        ) from exc
    if pos + size != len(payload):
        raise FrameError(
            f"{len(payload) - pos - size} trailing bytes after {cls.__name__} v{version}",
            correlation_id=correlation_id,
        )
    return Request(RequestHeader(key, version, correlation_id, header.client_id), body)


def encode_request(
    body: Any, *, api_version: int, correlation_id: int, client_id: str | None
) -> bytes:
    """A complete size-prefixed request frame for ``body`` (a message instance)."""
    key = int(body.__api_key__)
    header_cls = _request_header_class(body.__flexible__)
    fields: dict[str, Any] = {
        "request_api_key": i16(key),
        "request_api_version": i16(api_version),
        "correlation_id": i32(correlation_id),
        "client_id": client_id,
    }
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    entity_writer(header_cls)(buf, header_cls(**fields))
    entity_writer(type(body))(buf, body)
    return _with_size(buf)


def encode_response(body: Any, *, api_version: int, correlation_id: int) -> bytes:
    """A complete size-prefixed response frame for ``body``."""
    key = int(body.__api_key__)
    header_cls = _response_header_class(key, body.__flexible__)
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    entity_writer(header_cls)(buf, header_cls(correlation_id=i32(correlation_id)))
    entity_writer(type(body))(buf, body)
    return _with_size(buf)


def decode_response(
    payload: bytes | memoryview, *, api_key: int, api_version: int
) -> tuple[int, Any]:
    """(correlation_id, body) of a response payload (without the size prefix)."""
    cls = response_class(api_key, api_version)
    if cls is None:
        raise FrameError(f"unsupported api key {api_key} version {api_version}")
    header_cls = _response_header_class(api_key, cls.__flexible__)
    correlation_id = _SIZE.unpack_from(payload, 0)[0] if len(payload) >= _SIZE.size else None
    try:
        header, pos = tolerant_reader(header_cls)(payload, 0)
        body, size = tolerant_reader(cls)(payload, pos)
    except Exception as exc:
        raise FrameError(
            f"malformed {cls.__name__} v{api_version}: {exc}", correlation_id=correlation_id
        ) from exc
    if pos + size != len(payload):
        raise FrameError(
            f"{len(payload) - pos - size} trailing bytes after {cls.__name__} v{api_version}",
            correlation_id=correlation_id,
        )
    return int(header.correlation_id), body


def _with_size(buf: io.BytesIO) -> bytes:
    data = buf.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    del data
    return buf.getvalue()


class FrameSplitter:
    """Sans-I/O accumulator: feed bytes, take complete frame payloads out.

    ``max_frame_size`` mirrors Kafka's ``socket.request.max.bytes``: a larger declared size
    (or a negative one) is a protocol violation and the connection should be closed.
    """

    def __init__(self, max_frame_size: int = 100 * 1024 * 1024) -> None:
        self._buf = bytearray()
        self._max = max_frame_size

    def feed(self, data: bytes) -> list[bytes]:
        """Complete payloads, each copied exactly once out of the received bytes.

        Frames are sliced through a memoryview and the consumed prefix is dropped once per
        call, so a large frame is not copied again on its way out and many small frames
        in one read do not shift the remainder once each.
        """
        buffer = self._buf
        if buffer:
            buffer += data
            source: bytes | bytearray = buffer
        else:
            source = data
        frames: list[bytes] = []
        position = 0
        end = len(source)
        with memoryview(source) as view:
            while end - position >= 4:
                (size,) = _SIZE.unpack_from(source, position)
                if size < 0 or size > self._max:
                    raise FrameError(f"frame size {size} outside 0..{self._max}")
                if end - position - 4 < size:
                    break
                frames.append(bytes(view[position + 4 : position + 4 + size]))
                position += 4 + size
            if source is not buffer:
                buffer += view[position:]
        if source is buffer and position:
            del buffer[:position]
        return frames
