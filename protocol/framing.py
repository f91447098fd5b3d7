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
from typing import Any, TypeAlias

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_writer
from kio.static.primitive import i16, i32

from mirrorsim.protocol.messages.encoded_request import EncodedRequest
from mirrorsim.protocol.messages.encoded_response import EncodedResponse
from mirrorsim.protocol.messages.wire_writing import NO_TAGGED_FIELDS, nullable_string
from mirrorsim.protocol.registry import request_class, response_class
from mirrorsim.protocol.schema_reader import schema_reader, tolerant_reader

API_VERSIONS_KEY = 18
_SIZE = struct.Struct(">i")
_KEY_VERSION_CORRELATION = struct.Struct(">hhi")
BY_REFERENCE_BYTES = 4096
"""Writes at least this long (record sets) are kept as their own buffer, not copied."""
RECEIVE_CHUNK = 256 * 1024
"""Scratch space of a :class:`FrameAssembler`: small frames and size prefixes land here."""

FrameBuffers: TypeAlias = list[bytes | bytearray | memoryview]
"""One frame as buffers to send in order (``writelines``-style), size prefix first."""


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
    """Decode a request payload (the frame without its 4-byte size prefix).

    Bytes after the body are ignored, as Kafka's ``RequestContext.parseRequest`` ignores
    them: librdkafka 2.16 sends MetadataRequest v12 with three extra bytes, and Kafka
    answers it. kio's fast reader lets a null through where the schema forbids one (a
    corrupted length then ends the body early), so a body followed by bytes is read again
    with the strict schema reader, which refuses it as Kafka's parser does.
    """
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
        if pos + size != len(payload):
            body, _ = schema_reader(cls)(payload, pos)
    except Exception as exc:  # the readers raise several exception types for malformed input
        raise FrameError(
            f"malformed {cls.__name__} v{version}: {exc}", correlation_id=correlation_id
        ) from exc
    return Request(RequestHeader(key, version, correlation_id, header.client_id), body)


def encode_request(
    body: Any, *, api_version: int, correlation_id: int, client_id: str | None
) -> bytes:
    """A complete size-prefixed request frame for ``body`` (a message instance, or an
    ``EncodedRequest`` of ``api_version``)."""
    if isinstance(body, EncodedRequest):
        return _encoded_request_frame(body, correlation_id, client_id)
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


def _encoded_request_frame(
    body: EncodedRequest, correlation_id: int, client_id: str | None
) -> bytes:
    """The frame of a body that encodes itself: request header v1 (key, version,
    correlation id, client id as a nullable int16-length string), plus an empty
    tagged-field section (v2) for a flexible version."""
    head = _KEY_VERSION_CORRELATION.pack(body.api_key, body.api_version, correlation_id)
    client = nullable_string(client_id, flexible=False)
    tags = NO_TAGGED_FIELDS if body.flexible else b""
    encoded = body.encoded_body()
    size = len(head) + len(client) + len(tags) + len(encoded)
    return b"".join((_SIZE.pack(size), head, client, tags, encoded))


def encode_response(body: Any, *, api_version: int, correlation_id: int) -> bytes:
    """A complete size-prefixed response frame for ``body``, as one ``bytes``."""
    return b"".join(
        encode_response_buffers(body, api_version=api_version, correlation_id=correlation_id)
    )


def encode_response_buffers(body: Any, *, api_version: int, correlation_id: int) -> FrameBuffers:
    """A complete size-prefixed response frame for ``body`` as buffers to send in order.

    A Fetch response is mostly record sets read from segment files: they go out as the
    very buffers the log returned, so the bytes are never copied into an encoder buffer.
    The buffers are only read, and only until they are handed to the transport. An
    ``EncodedResponse`` (a Produce or Fetch answer, a Metadata answer with kept topic
    entries) goes out as the parts it encoded.
    """
    encoded = isinstance(body, EncodedResponse)
    if encoded:
        key, flexible = body.api_key, body.flexible
    else:
        key, flexible = int(body.__api_key__), body.__flexible__
    header_cls = _response_header_class(key, flexible)
    chain = _BufferChain()
    entity_writer(header_cls)(chain, header_cls(correlation_id=i32(correlation_id)))
    if encoded:
        for part in body.encoded_body():
            chain.write(part)
    else:
        entity_writer(type(body))(chain, body)
    return chain.frame()


class _BufferChain:
    """A write target for kio's writers that keeps large writes by reference.

    Small writes (lengths, ids, offsets) are gathered into one bytearray per run; a large
    write closes the run and is appended as is. The first run starts with room for the
    size prefix, filled in by :meth:`frame`.
    """

    __slots__ = ("_buffers", "_run")

    def __init__(self) -> None:
        self._run = bytearray(_SIZE.size)
        self._buffers: FrameBuffers = []

    def write(self, data: bytes | bytearray | memoryview) -> int:
        size = len(data)
        if size < BY_REFERENCE_BYTES:
            self._run += data
        else:
            if self._run:
                self._buffers.append(self._run)
                self._run = bytearray()
            self._buffers.append(data)
        return size

    def frame(self) -> FrameBuffers:
        buffers = self._buffers
        if self._run:
            buffers.append(self._run)
            self._run = bytearray()
        first = buffers[0]
        assert isinstance(first, bytearray)
        _SIZE.pack_into(first, 0, sum(map(len, buffers)) - _SIZE.size)
        return buffers


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


class FrameAssembler:
    """Sans-I/O receiver that lets the socket read straight into each large frame's buffer.

    It follows ``asyncio.BufferedProtocol``: :meth:`get_buffer` says where the next bytes
    go, :meth:`buffer_updated` says how many arrived and returns the completed payloads;
    :meth:`feed` does both for bytes that were already read (a stream reader's chunks).
    ``max_frame_size`` mirrors Kafka's ``socket.request.max.bytes``: a larger declared
    size (or a negative one) is a protocol violation and the connection should be closed.
    Size prefixes and small frames are read into a fixed scratch buffer and copied out
    once; a frame that cannot fit the scratch is received in place into a frame buffer,
    so a multi-MiB Fetch response is never copied or re-grown on its way in.

    Payloads are read-only (``bytes``, or a read-only view of the frame buffer), as kio's
    native readers require. The frame buffer is reused for a later large frame only when
    no view of it is left, so a caller may keep views of a payload for as long as it
    likes; reuse keeps the memory the socket writes into warm instead of page-faulting
    a fresh multi-MiB buffer per response.
    """

    def __init__(
        self, max_frame_size: int = 100 * 1024 * 1024, scratch_size: int = RECEIVE_CHUNK
    ) -> None:
        self._max = max_frame_size
        self._scratch = bytearray(scratch_size)
        self._start = 0
        self._end = 0
        self._spare: bytearray | None = None
        self._frame: memoryview | None = None
        self._filled = 0

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes | memoryview]:
        """Payloads completed by ``data``, for a receiver that is handed bytes (a stream
        reader) instead of being asked where to put them: each part of ``data`` is copied
        where :meth:`get_buffer` says, so a large frame is still copied only once."""
        frames: list[bytes | memoryview] = []
        received = memoryview(data)
        while received:
            target = self.get_buffer()
            count = min(len(target), len(received))
            target[:count] = received[:count]
            received = received[count:]
            frames += self.buffer_updated(count)
        return frames

    def get_buffer(self) -> memoryview:
        """Where the next received bytes must be written (any amount up to its length)."""
        if self._frame is not None:
            return self._frame[self._filled :]
        if self._start:
            pending = self._end - self._start
            self._scratch[:pending] = self._scratch[self._start : self._end]
            self._start, self._end = 0, pending
        return memoryview(self._scratch)[self._end :]

    def buffer_updated(self, nbytes: int) -> list[bytes | memoryview]:
        """Payloads completed by ``nbytes`` new bytes written into the last buffer given."""
        frame = self._frame
        if frame is None:
            self._end += nbytes
            return self._split_scratch()
        self._filled += nbytes
        if self._filled < len(frame):
            return []
        self._frame = None
        return [frame.toreadonly()]

    def _split_scratch(self) -> list[bytes | memoryview]:
        frames: list[bytes | memoryview] = []
        position, end = self._start, self._end
        with memoryview(self._scratch) as scratch:
            while end - position >= _SIZE.size:
                (size,) = _SIZE.unpack_from(scratch, position)
                if size < 0 or size > self._max:
                    raise FrameError(f"frame size {size} outside 0..{self._max}")
                body = position + _SIZE.size
                received = end - body
                if received >= size:
                    frames.append(bytes(scratch[body : body + size]))
                    position = body + size
                    continue
                if _SIZE.size + size > len(scratch):
                    frame = self._frame_buffer(size)
                    frame[:received] = scratch[body:end]
                    self._frame, self._filled = frame, received
                    position = end
                break
        self._start, self._end = (0, 0) if position == end else (position, end)
        return frames

    def _frame_buffer(self, size: int) -> memoryview:
        spare = self._spare
        if spare is None or len(spare) < size or _has_views(spare):
            spare = self._spare = bytearray(size)
        return memoryview(spare)[:size]


def _has_views(buffer: bytearray) -> bool:
    """Whether a view of ``buffer`` is alive: a bytearray with views refuses to resize."""
    try:
        buffer.append(0)
    except BufferError:
        return True
    del buffer[-1]
    return False
