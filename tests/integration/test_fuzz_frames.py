"""Bad input never crashes the broker nor disturbs other connections.

Every fuzz frame is one of: random bytes, a valid request with a bad size prefix
(negative, beyond ``socket.request.max.bytes``, shorter or longer than the payload), an
unknown api key, an unsupported version, a truncated or bit-flipped valid request, a
Produce request whose record batch is corrupt, or an oversized request. After each frame
the fuzzing connection sends an ApiVersions probe: the broker must either answer (the
fuzz frame's own answer, if any, comes first and carries its correlation id) or close
the connection, as Apache Kafka does. Meanwhile a separate healthy connection keeps
asking for metadata and must always get a correct answer, and no handler may fail with
an unexpected exception.

The broker runs on its own event loop in a thread so the frames can be sent with plain
blocking sockets from a Hypothesis test.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import random
import socket
import struct
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirrorsim.broker.server import Broker
from mirrorsim.client.admin import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.framing import FrameError, decode_response, encode_request, peek_header
from mirrorsim.protocol.records import Record, build_batch

TOPIC = "fuzz"
MAX_REQUEST_BYTES = 64 * 1024
IO_TIMEOUT_S = 10.0
PROBE_CORRELATION_ID = 2_000_000_000
HEALTH_CHECK_EVERY = 25
SIZE = struct.Struct(">i")
NO_TOPIC_ID = uuid.UUID(int=0)
METADATA_V12 = {
    "topics": [{"name": TOPIC, "topic_id": NO_TOPIC_ID}],
    "allow_auto_topic_creation": False,
    "include_topic_authorized_operations": False,
}
BATCH_CRC_END = 21  # base offset, length, leader epoch, magic, crc: bytes 0..20


def _ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def _frame(body: Any, version: int, correlation_id: int) -> bytes:
    return encode_request(
        body, api_version=version, correlation_id=correlation_id, client_id="fuzz"
    )


def _valid_batch() -> bytes:
    records = [Record(i, 1_000 + i, b"k%d" % i, b"v" * 20, ()) for i in range(3)]
    return build_batch(records).data


def _produce(version: int, records: bytes, acks: int = -1) -> Any:
    return build_request(
        0,
        version,
        {
            "transactional_id": None,
            "acks": acks,
            "timeout": _ms(1_000),
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": records}]}],
        },
    )


def _templates() -> list[tuple[Any, int]]:
    """Valid requests of several APIs and versions, flexible and not, to mutate."""
    batch = _valid_batch()
    return [
        (_produce(3, batch), 3),
        (_produce(9, batch), 9),
        (_produce(9, batch, acks=0), 9),
        (build_request(3, 1, METADATA_V12), 1),
        (build_request(3, 12, METADATA_V12), 12),
        (build_request(18, 3, {"client_software_name": "fuzz", "client_software_version": "1"}), 3),
        (build_request(10, 1, {"key": "g", "key_type": 0}), 1),
        (
            build_request(
                2,
                5,
                {
                    "replica_id": -1,
                    "isolation_level": 0,
                    "topics": [
                        {
                            "name": TOPIC,
                            "partitions": [{"partition_index": 0, "timestamp": -1}],
                        }
                    ],
                },
            ),
            5,
        ),
    ]


@dataclass(frozen=True, slots=True)
class Fuzz:
    frame: bytes
    delimited: bool
    """Whether the size prefix matches the payload; if not, the socket is half-closed."""
    corrupt_batch: bool = False
    """A Produce request whose batch has a flipped CRC-covered byte: must be refused."""


class FrameFuzzer:
    """Turns a source of randomness (``random.Random`` or Hypothesis' ``randoms()``) into
    bad frames, so the short Hypothesis run and the long seeded run share one generator."""

    def __init__(self) -> None:
        self.templates = _templates()
        self.batch = _valid_batch()

    def __call__(self, rng: random.Random) -> Fuzz:
        kind = rng.choice(
            [
                self.random_bytes,
                self.bad_size,
                self.unknown_key,
                self.bad_version,
                self.truncated,
                self.bit_flipped,
                self.corrupt_batch,
                self.oversized,
            ]
        )
        return kind(rng)

    def _template(self, rng: random.Random) -> bytes:
        body, version = rng.choice(self.templates)
        return _frame(body, version, rng.randrange(0, 1_000_000))

    def random_bytes(self, rng: random.Random) -> Fuzz:
        payload = rng.randbytes(rng.randrange(0, 200))
        return Fuzz(SIZE.pack(len(payload)) + payload, delimited=True)

    def bad_size(self, rng: random.Random) -> Fuzz:
        payload = self._template(rng)[4:]
        size = rng.choice(
            [
                -rng.randrange(1, 2**31),
                MAX_REQUEST_BYTES + rng.randrange(1, 2**20),
                rng.randrange(0, len(payload)),
                len(payload) + rng.randrange(1, 100),
            ]
        )
        return Fuzz(SIZE.pack(size) + payload, delimited=False)

    def unknown_key(self, rng: random.Random) -> Fuzz:
        key = rng.choice([rng.randrange(100, 2**15), -rng.randrange(1, 2**15)])
        payload = struct.pack(">hhi", key, rng.randrange(0, 20), rng.randrange(0, 2**31))
        payload += rng.randbytes(rng.randrange(0, 50))
        return Fuzz(SIZE.pack(len(payload)) + payload, delimited=True)

    def bad_version(self, rng: random.Random) -> Fuzz:
        payload = bytearray(self._template(rng)[4:])
        struct.pack_into(">h", payload, 2, rng.choice([rng.randrange(40, 2**15), -1]))
        return Fuzz(SIZE.pack(len(payload)) + bytes(payload), delimited=True)

    def truncated(self, rng: random.Random) -> Fuzz:
        payload = self._template(rng)[4:]
        payload = payload[: rng.randrange(8, len(payload))]
        return Fuzz(SIZE.pack(len(payload)) + payload, delimited=True)

    def bit_flipped(self, rng: random.Random) -> Fuzz:
        payload = bytearray(self._template(rng)[4:])
        for _ in range(rng.randrange(1, 4)):
            payload[rng.randrange(8, len(payload))] ^= 1 << rng.randrange(8)
        return Fuzz(SIZE.pack(len(payload)) + bytes(payload), delimited=True)

    def corrupt_batch(self, rng: random.Random) -> Fuzz:
        batch = bytearray(self.batch)
        mutation = rng.randrange(3)
        if mutation == 0:
            batch[rng.randrange(BATCH_CRC_END, len(batch))] ^= 1 << rng.randrange(8)
        elif mutation == 1:
            batch = batch[: rng.randrange(0, len(batch))]
        else:
            struct.pack_into(">i", batch, 8, rng.choice([-1, 0, 1, len(batch) * 3]))
        version = rng.choice([3, 9])
        frame = _frame(_produce(version, bytes(batch)), version, rng.randrange(0, 1_000_000))
        return Fuzz(frame, delimited=True, corrupt_batch=True)

    def oversized(self, rng: random.Random) -> Fuzz:
        payload = self._template(rng)[4:]
        payload += bytes(MAX_REQUEST_BYTES + 1 - len(payload) + rng.randrange(0, 100))
        return Fuzz(SIZE.pack(len(payload)) + payload, delimited=True)


def _read_frame(sock: socket.socket) -> bytes | None:
    """One response payload, or None once the broker has closed the connection."""
    header = _read_exactly(sock, 4)
    if header is None:
        return None
    (size,) = SIZE.unpack(header)
    payload = _read_exactly(sock, size)
    assert payload is not None, "connection closed in the middle of a response"
    return payload


def _read_exactly(sock: socket.socket, count: int) -> bytes | None:
    data = bytearray()
    while len(data) < count:
        try:
            chunk = sock.recv(count - len(data))
        except ConnectionResetError:
            return None
        if not chunk:
            assert not data, "connection closed in the middle of a response"
            return None
        data += chunk
    return bytes(data)


class FuzzClient:
    """Sends fuzz frames, reconnecting whenever the broker has (rightly) hung up."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock: socket.socket | None = None
        self.probe = _frame(
            build_request(18, 0, {}), version=0, correlation_id=PROBE_CORRELATION_ID
        )
        self.sent = self.answered = self.closed = 0

    def _connect(self) -> socket.socket:
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=IO_TIMEOUT_S)
        return self.sock

    def _drop(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
            self.closed += 1

    def send(self, fuzz: Fuzz) -> None:
        sock = self._connect()
        self.sent += 1
        try:
            sock.sendall(fuzz.frame if not fuzz.delimited else fuzz.frame + self.probe)
            if not fuzz.delimited:
                sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            self._drop()
            return
        if fuzz.delimited:
            self._await_probe(fuzz)
        else:
            while _read_frame(sock) is not None:
                pass
            self._drop()

    def _await_probe(self, fuzz: Fuzz) -> None:
        """Read the fuzz frame's answer (if any), then the probe's; or a close."""
        assert self.sock is not None
        while True:
            payload = _read_frame(self.sock)
            if payload is None:
                self._drop()
                return
            (correlation_id,) = SIZE.unpack_from(payload)
            if correlation_id == PROBE_CORRELATION_ID:
                return
            self.answered += 1
            _check_answer(fuzz, payload, correlation_id)


def _check_answer(fuzz: Fuzz, payload: bytes, correlation_id: int) -> None:
    api_key, version, sent_correlation_id = peek_header(fuzz.frame[4:])
    assert correlation_id == sent_correlation_id, "answer to a request never sent"
    try:
        _, body = decode_response(payload, api_key=api_key, api_version=version)
    except FrameError:
        if api_key == 18:
            _, body = decode_response(payload, api_key=18, api_version=0)
            assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
            return
        raise
    if api_key == 0:
        codes = [p.error_code for t in body.responses for p in t.partition_responses]
        assert all(code in ErrorCode._value2member_map_ for code in codes), codes
        if fuzz.corrupt_batch:
            assert ErrorCode.NONE not in codes, "a corrupt batch was appended"


class BrokerThread:
    """A broker on its own event loop in a daemon thread."""

    def __init__(self, data_dir: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.broker = Broker(
            broker_id=1,
            host="127.0.0.1",
            port=0,
            data_dir=data_dir,
            metadata_url=f"sqlite:///{data_dir / 'metadata.db'}",
            configs={"socket.request.max.bytes": MAX_REQUEST_BYTES},
        )

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(IO_TIMEOUT_S * 3)

    def start(self) -> None:
        self.thread.start()
        self.run(self.broker.start())

    def stop(self) -> None:
        try:
            self.run(self.broker.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(IO_TIMEOUT_S)
            self.loop.close()


async def _create_topic(bootstrap: str) -> None:
    async with Admin(bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 1, 1)])).all()


class HandlerFailures(logging.Handler):
    """Collects the dispatcher's 'handler failed' records: garbage must be answered with
    an error code or a close, never reach a handler as an unexpected exception."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.failures: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.failures.append(record.getMessage())


class HealthyConnection:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S)
        self.correlation_id = 0

    def check(self) -> None:
        self.correlation_id += 1
        request = build_request(3, 12, METADATA_V12)
        self.sock.sendall(_frame(request, 12, self.correlation_id))
        payload = _read_frame(self.sock)
        assert payload is not None, "the healthy connection was closed"
        correlation_id, body = decode_response(payload, api_key=3, api_version=12)
        assert correlation_id == self.correlation_id
        assert [(t.name, t.error_code) for t in body.topics] == [(TOPIC, ErrorCode.NONE)]

    def close(self) -> None:
        self.sock.close()


@dataclass
class FuzzTarget:
    client: FuzzClient
    healthy: HealthyConnection
    failures: HandlerFailures

    def send(self, fuzz: Fuzz) -> None:
        self.client.send(fuzz)
        if self.client.sent % HEALTH_CHECK_EVERY == 0:
            self.healthy.check()
        assert not self.failures.failures, self.failures.failures[:3]


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzTarget]:
    broker = BrokerThread(tmp_path_factory.mktemp("fuzz"))
    broker.start()
    failures = HandlerFailures()
    dispatcher_log = logging.getLogger("mirrorsim.broker.handlers.dispatcher")
    dispatcher_log.addHandler(failures)
    try:
        broker.run(_create_topic(broker.broker.bootstrap))
        client = FuzzClient(broker.broker.port)
        healthy = HealthyConnection(broker.broker.port)
        healthy.check()
        yield FuzzTarget(client, healthy, failures)
        healthy.check()
        healthy.close()
        client._drop()
    finally:
        dispatcher_log.removeHandler(failures)
        broker.stop()


FUZZER = FrameFuzzer()
FRAMES_PER_EXAMPLE = 40


@settings(
    max_examples=75,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rng=st.randoms(use_true_random=False))
def test_bad_frames_get_an_error_or_a_close(target: FuzzTarget, rng: random.Random) -> None:
    for _ in range(FRAMES_PER_EXAMPLE):
        target.send(FUZZER(rng))


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_hundred_thousand_bad_frames(target: FuzzTarget) -> None:
    rng = random.Random(1279)
    for _ in range(100_000):
        target.send(FUZZER(rng))
    assert target.client.answered > 0 and target.client.closed > 0
