"""One TCP (optionally TLS) connection to one broker, with requests pipelined on it.

Theory of operation: ``send`` writes a frame and parks a future under the request's
correlation id; the socket's protocol assembles the incoming byte stream into frames
(large ones are received straight into their frame buffer) and resolves the future whose
id the response carries, so any number of requests may be in flight and responses may
come back in any order. When the socket drops, every parked future fails
with ``KafkaConnectionError`` and the connection is dead for good: the cluster client
opens a new one. A request that times out is forgotten (its late response is dropped);
the connection itself stays usable.

At connect the connection negotiates versions with ApiVersions (v3, falling back to the
version the broker names, or v0, on UNSUPPORTED_VERSION) and then authenticates with
SaslHandshake + SaslAuthenticate when SASL settings are given.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import ssl
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kio.schema.sasl_handshake.v1 import SaslHandshakeRequest

from mirrorsim.client.errors import KafkaConnectionError, RequestTimedOut, UnsupportedVersion
from mirrorsim.client.network_stats import NetworkStats
from mirrorsim.client.sasl import SaslAuthenticationError, SaslSettings, new_exchange
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.framing import (
    API_VERSIONS_KEY,
    FrameAssembler,
    FrameError,
    decode_response,
    encode_request,
)
from mirrorsim.protocol.messages.encoded_request import EncodedRequest

log = logging.getLogger(__name__)

UNSUPPORTED_VERSION = 35
SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
CLIENT_SOFTWARE_NAME = "mirrorsim"
CLIENT_SOFTWARE_VERSION = "0.1.0"
_CORRELATION = struct.Struct(">i")
REMEMBERED_ANSWERS = frozenset({3, 32})
"""Metadata and DescribeConfigs: a mirror's metadata sync asks its source for every
mirrored topic's metadata and configs each cycle, and the answers rarely change. At
100,000 partitions decoding them cost a fifth of an idle destination broker's CPU;
comparing the bytes with the last answer of the same API and version costs a copy and
a ``memcmp``. One answer per API and version is kept per connection."""
_SIZE_PREFIX = 4


@dataclass(slots=True)
class _Pending:
    future: asyncio.Future[Any]
    api_key: int
    api_version: int


class InFlightRequest:
    """A request already written to its connection, whose response is still to come."""

    def __init__(
        self,
        connection: BrokerConnection,
        correlation_id: int,
        future: asyncio.Future[Any],
        api_key: int,
        api_version: int,
    ) -> None:
        self._connection = connection
        self._correlation_id = correlation_id
        self._future = future
        self._api_key = api_key
        self._api_version = api_version

    async def response(self) -> Any:
        """The decoded response; ``RequestTimedOut`` after the connection's request timeout
        (counted from here), ``KafkaConnectionError`` if the connection fails first."""
        connection = self._connection
        try:
            await connection._drain()
            return await asyncio.wait_for(self._future, connection._timeout)
        except TimeoutError:
            raise RequestTimedOut(
                f"no response from {connection.host}:{connection.port} to api key "
                f"{self._api_key} v{self._api_version} within "
                f"{connection._timeout * 1000:.0f} ms"
            ) from None
        finally:
            connection._pending.pop(self._correlation_id, None)


class BrokerConnection:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslSettings | None = None,
        request_timeout_ms: int = 30000,
        stats: NetworkStats | None = None,
    ) -> None:
        self.host = host
        self.stats = stats or NetworkStats()
        self._open = False
        self.port = port
        self.client_id = client_id
        self._ssl_context = ssl_context
        self._sasl = sasl
        self._timeout = request_timeout_ms / 1000
        self._correlation_ids = itertools.count()
        self._pending: dict[int, _Pending] = {}
        self._last_answers: dict[tuple[int, int], tuple[bytes, Any]] = {}
        self._transport: asyncio.Transport | None = None
        self._stream: _ResponseStream | None = None
        self._failure: KafkaConnectionError | None = None
        self._api_versions: dict[int, tuple[int, int]] = {}

    def __repr__(self) -> str:
        return f"BrokerConnection({self.host}:{self.port})"

    @property
    def connected(self) -> bool:
        return self._transport is not None and self._failure is None

    @property
    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        """api key → (min, max) version the broker supports, as negotiated at connect."""
        return self._api_versions

    async def connect(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self._transport, self._stream = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _ResponseStream(self._resolve, self._connection_lost),
                    self.host,
                    self.port,
                    ssl=self._ssl_context,
                ),
                self._timeout,
            )
        except (OSError, TimeoutError) as exc:
            raise KafkaConnectionError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        self._open = True
        self.stats.connections_created += 1
        try:
            await self._negotiate_api_versions()
            if self._sasl is not None:
                await self._authenticate(self._sasl)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        self._fail_pending(KafkaConnectionError(f"connection to {self.host}:{self.port} closed"))
        if self._transport is not None:
            self._transport.close()
        await self.wait_closed()

    async def wait_closed(self) -> None:
        """Return once the socket is gone (dropped by the broker or closed by us)."""
        if self._stream is not None:
            await asyncio.shield(self._stream.lost)

    def max_supported(self, api_key: int, versions_we_have: Iterable[int]) -> int | None:
        """The highest of ``versions_we_have`` the broker supports, or None."""
        supported = self._api_versions.get(api_key)
        if supported is None:
            return None
        usable = [v for v in versions_we_have if supported[0] <= v <= supported[1]]
        return max(usable, default=None)

    async def send(self, body: Any) -> Any:
        """Send a request and wait for its response; the api version is the body's (its
        class's for a kio message, its own for an ``EncodedRequest``)."""
        api_key, api_version = _key_and_version(body)
        self._check_supported(api_key, api_version)
        return await self._request(body, api_key, api_version)

    async def send_no_response(self, body: Any) -> None:
        """Send a request the broker will not answer (Produce with acks=0)."""
        api_key, api_version = _key_and_version(body)
        self._check_supported(api_key, api_version)
        _, frame = self._frame(body, api_version)
        await self._write(frame)

    def _check_supported(self, api_key: int, api_version: int) -> None:
        supported = self._api_versions.get(api_key)
        if supported is None or not supported[0] <= api_version <= supported[1]:
            raise UnsupportedVersion(api_key, api_version, supported)

    def _frame(self, body: Any, api_version: int) -> tuple[int, bytes]:
        correlation_id = next(self._correlation_ids) & 0x7FFFFFFF
        frame = encode_request(
            body, api_version=api_version, correlation_id=correlation_id, client_id=self.client_id
        )
        return correlation_id, frame

    def start(self, body: Any) -> InFlightRequest:
        """Write a request now and return without its response: a caller with other work
        does it while the broker answers, and awaits ``InFlightRequest.response()`` after."""
        api_key, api_version = _key_and_version(body)
        self._check_supported(api_key, api_version)
        return self._start(body, api_key, api_version)

    async def _request(self, body: Any, api_key: int, api_version: int) -> Any:
        return await self._start(body, api_key, api_version).response()

    def _start(self, body: Any, api_key: int, api_version: int) -> InFlightRequest:
        correlation_id, frame = self._frame(body, api_version)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = _Pending(future, api_key, api_version)
        try:
            self._write_now(frame)
        except BaseException:
            self._pending.pop(correlation_id, None)
            raise
        return InFlightRequest(self, correlation_id, future, api_key, api_version)

    async def _write(self, frame: bytes) -> None:
        self._write_now(frame)
        await self._drain()

    def _write_now(self, frame: bytes) -> None:
        if self._failure is not None:
            raise self._failure
        if self._transport is None or self._stream is None:
            raise KafkaConnectionError(f"{self!r} is not connected")
        try:
            self._transport.write(frame)
        except (OSError, RuntimeError) as exc:
            raise self._write_failed(exc) from exc
        self.stats.requests += 1
        self.stats.bytes_sent += len(frame)

    async def _drain(self) -> None:
        if self._stream is None:
            raise KafkaConnectionError(f"{self!r} is not connected")
        try:
            await self._stream.drain()
        except (OSError, RuntimeError) as exc:
            raise self._write_failed(exc) from exc

    def _write_failed(self, exc: BaseException) -> KafkaConnectionError:
        failure = KafkaConnectionError(f"write to {self.host}:{self.port} failed: {exc}")
        self._fail_pending(failure)
        return failure

    def _connection_lost(self, reason: str) -> None:
        if self._open:
            self._open = False
            self.stats.connections_closed += 1
        self._fail_pending(KafkaConnectionError(f"connection to {self.host}:{self.port} {reason}"))

    def _resolve(self, payload: bytes | memoryview) -> None:
        self.stats.responses += 1
        self.stats.bytes_received += _SIZE_PREFIX + len(payload)
        if len(payload) < _CORRELATION.size:
            raise FrameError(f"response of {len(payload)} bytes has no correlation id")
        (correlation_id,) = _CORRELATION.unpack_from(payload, 0)
        pending = self._pending.get(correlation_id)
        if pending is None or pending.future.done():
            log.debug("%r dropped a response to unknown correlation id %d", self, correlation_id)
            return
        try:
            body = self._decoded(payload, pending.api_key, pending.api_version)
        except FrameError as exc:
            pending.future.set_exception(exc)
        else:
            pending.future.set_result(body)

    def _decoded(self, payload: bytes | memoryview, api_key: int, api_version: int) -> Any:
        """The response's body; the one decoded last when the answer repeats it byte for
        byte (``REMEMBERED_ANSWERS``). Decoded bodies are immutable, so sharing is safe."""
        if api_key not in REMEMBERED_ANSWERS:
            return _decode(payload, api_key, api_version)[1]
        after_id = bytes(payload[_CORRELATION.size :])
        last = self._last_answers.get((api_key, api_version))
        if last is not None and last[0] == after_id:
            return last[1]
        _, body = _decode(payload, api_key, api_version)
        self._last_answers[(api_key, api_version)] = (after_id, body)
        return body

    def _fail_pending(self, failure: KafkaConnectionError) -> None:
        if self._failure is None:
            self._failure = failure
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(failure)
        self._pending.clear()

    async def _negotiate_api_versions(self) -> None:
        response = await self._api_versions_request(3)
        if response.error_code == UNSUPPORTED_VERSION:
            advertised = {int(k.api_key): int(k.max_version) for k in response.api_keys}
            response = await self._api_versions_request(min(advertised.get(API_VERSIONS_KEY, 0), 3))
        if response.error_code != 0:
            code = int(response.error_code)
            raise KafkaConnectionError(
                f"ApiVersions to {self.host}:{self.port} failed: error {code}"
            )
        self._api_versions = {
            int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys
        }

    async def _api_versions_request(self, version: int) -> Any:
        request = build_request(
            API_VERSIONS_KEY,
            version,
            {
                "client_software_name": CLIENT_SOFTWARE_NAME,
                "client_software_version": CLIENT_SOFTWARE_VERSION,
            },
        )
        return await self._request(request, API_VERSIONS_KEY, version)

    async def _authenticate(self, settings: SaslSettings) -> None:
        handshake = await self.send(SaslHandshakeRequest(mechanism=settings.mechanism))
        if handshake.error_code != 0:
            raise SaslAuthenticationError(
                f"broker {self.host}:{self.port} does not enable {settings.mechanism} "
                f"(enabled: {', '.join(handshake.mechanisms)})"
            )
        version = self.max_supported(SASL_AUTHENTICATE_KEY, (0, 1, 2))
        if version is None:
            raise SaslAuthenticationError(f"broker {self.host}:{self.port} lacks SaslAuthenticate")
        exchange = new_exchange(settings)
        message: bytes | None = exchange.initial_response()
        while message is not None:
            response = await self.send(
                build_request(SASL_AUTHENTICATE_KEY, version, {"auth_bytes": message})
            )
            if response.error_code != 0:
                raise SaslAuthenticationError(
                    response.error_message
                    or f"SASL authentication failed ({int(response.error_code)})"
                )
            message = exchange.respond(response.auth_bytes)


def _key_and_version(body: Any) -> tuple[int, int]:
    if isinstance(body, EncodedRequest):
        return body.api_key, body.api_version
    return int(body.__api_key__), int(body.__version__)


def _decode(payload: bytes | memoryview, api_key: int, api_version: int) -> tuple[int, Any]:
    """Decode a response; a broker that rejects an ApiVersions version answers in v0."""
    try:
        return decode_response(payload, api_key=api_key, api_version=api_version)
    except FrameError:
        if api_key != API_VERSIONS_KEY or api_version == 0:
            raise
        return decode_response(payload, api_key=api_key, api_version=0)


class _ResponseStream(asyncio.BufferedProtocol):
    """The socket side of a connection: responses in, write backpressure out.

    As a buffered protocol it lets the event loop read straight into the buffer the
    :class:`FrameAssembler` names, so a large response lands in its own frame buffer with
    no intermediate copies. Writes wait, as ``StreamWriter.drain`` does, while the
    transport has paused us for a full send buffer.
    """

    def __init__(
        self,
        on_response: Callable[[bytes | memoryview], None],
        on_lost: Callable[[str], None],
    ) -> None:
        self._on_response = on_response
        self._on_lost = on_lost
        self._frames = FrameAssembler()
        self._transport: asyncio.BaseTransport | None = None
        loop = asyncio.get_running_loop()
        self.lost: asyncio.Future[None] = loop.create_future()
        self._writable = loop.create_future()
        self._writable.set_result(None)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        try:
            for payload in self._frames.buffer_updated(nbytes):
                self._on_response(payload)
        except FrameError as exc:
            self._on_lost(f"read failed: {exc}")
            assert self._transport is not None
            self._transport.abort()

    def eof_received(self) -> None:
        self._on_lost("closed by the broker")

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_lost("closed by the broker" if exc is None else f"read failed: {exc}")
        if not self.lost.done():
            self.lost.set_result(None)
        if not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if not self._writable.done():
            self._writable.set_result(None)

    async def drain(self) -> None:
        if self.lost.done():
            raise ConnectionResetError("connection lost")
        await asyncio.shield(self._writable)
        if self.lost.done():
            raise ConnectionResetError("connection lost")
