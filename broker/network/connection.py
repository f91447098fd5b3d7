"""One client connection: read and queue frames, handle them one at a time, answer in order.

Kafka processes one request per connection at a time and answers in request order; it
keeps reading meanwhile, so a pipelining client is never stalled by the socket. This
class does the same with two tasks: a reader that splits frames into a bounded queue (the
bound is the backpressure) and a processor that dispatches them one by one. A long-poll
Fetch therefore delays later responses on its own connection only, exactly as in Kafka.

Why a connection closed is logged as text, never as the exception object: a handler that
keeps records (a log capture, a ``MemoryHandler``) would keep the exception's traceback,
whose frames hold the connection and its receive buffer, for every connection closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mirrorsim.broker.network.listener_spec import ListenerSpec
from mirrorsim.broker.network.session import SecuritySession, principal_from_certificate
from mirrorsim.protocol.framing import FrameAssembler, FrameBuffers, FrameError

log = logging.getLogger(__name__)

READ_CHUNK = 256 * 1024
"""What one read takes from the stream, the most a selector transport receives at once.
It is also the stream's limit: the transport stops reading only past twice that, so a
request of a few hundred KiB (a Produce of 16 batches) arrives without the socket being
taken off the selector and put back midway."""
MAX_QUEUED_REQUESTS = 64
IDLE_RECHECK_S = 0.05
CLOSE_TIMEOUT_S = 5.0
"""How long a closing connection waits for its unsent bytes to reach a peer that may
have stopped reading; then the transport is aborted."""


@dataclass(slots=True)
class RequestTiming:
    """When one request passed each point of the connection (``time.perf_counter``), for
    Kafka's RequestMetrics: queue time is ``dequeued - received``, send time ``sent -
    send_started``, total time ``sent - received``. The dispatcher sets ``on_sent``, which
    runs once the response is on the socket (or at once when none is sent)."""

    received: float
    dequeued: float = 0.0
    response_ready: float = 0.0
    send_started: float = 0.0
    sent: float = 0.0
    on_sent: Callable[[RequestTiming], None] | None = None

    def finish(self) -> None:
        if self.on_sent is not None:
            self.on_sent(self)


Dispatch = Callable[
    ["Connection", bytes | memoryview, RequestTiming], Awaitable[FrameBuffers | None]
]


class CloseConnection(Exception):
    """Raised by the dispatcher when Kafka would drop the connection (logged once)."""


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_request_bytes: int
    idle_timeout_s: float


class Connection:
    """One client connection; ``mute_after_response`` implements KIP-219's muted channel."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        dispatch: Dispatch,
        limits: ConnectionLimits,
        listener: ListenerSpec,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._dispatch = dispatch
        self._limits = limits
        self._frames = FrameAssembler(limits.max_request_bytes)
        self._queue: asyncio.Queue[tuple[bytes | memoryview, float] | None] = asyncio.Queue(
            MAX_QUEUED_REQUESTS
        )
        self._busy = False
        self._last_activity = time.monotonic()
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.client_host: str = str(peer[0])
        self.peer = f"{peer[0]}:{peer[1]}"
        tls = writer.get_extra_info("ssl_object")
        self.session = SecuritySession.start(
            listener, principal_from_certificate(tls.getpeercert() if tls else None)
        )
        self._reader_task: asyncio.Task[None] | None = None
        self._processor_task: asyncio.Task[None] | None = None
        self._reader_finished = False
        self._mute_s = 0.0
        self._idle_timer: asyncio.TimerHandle | None = None
        self._went_idle = False

    @property
    def unsent_bytes(self) -> int:
        return int(self._writer.transport.get_write_buffer_size())

    def mute_after_response(self, seconds: float) -> None:
        """Once the current response is written, read and serve nothing for ``seconds``.

        This is how Kafka throttles a client over its quota (KIP-219): the response goes
        out at once carrying ``throttle_time_ms``, then the channel stays muted, so a client
        that ignores the throttle time cannot get another request served any sooner.
        """
        self._mute_s = max(self._mute_s, seconds)

    async def run(self) -> None:
        """Serve until the peer closes, a protocol violation, idleness or shutdown."""
        self._reader_task = asyncio.create_task(self._read_loop(), name=f"read {self.peer}")
        self._processor_task = asyncio.create_task(self._process_loop(), name=f"serve {self.peer}")
        self._watch_idleness(self._limits.idle_timeout_s)
        try:
            await self._processor_task
        except asyncio.CancelledError:
            pass
        finally:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader_task
            await self._run_close_callbacks()
            self._writer.close()
            try:
                await asyncio.wait_for(self._writer.wait_closed(), CLOSE_TIMEOUT_S)
            except (ConnectionError, OSError):
                pass
            except TimeoutError:
                self._writer.transport.abort()

    async def _run_close_callbacks(self) -> None:
        callbacks = list(self.session.on_close.values())
        self.session.on_close.clear()
        for callback in callbacks:
            try:
                await callback()
            except Exception as exc:  # one failed cleanup must not stop the others
                log.warning("connection %s: cleanup at close failed: %s", self.peer, str(exc))

    async def drain_and_close(self, timeout_s: float) -> None:
        """Stop reading, finish the requests already received (up to ``timeout_s``), close."""
        if self._reader_task is None or self._processor_task is None:
            return
        self._reader_task.cancel()
        done, _ = await asyncio.wait({self._processor_task}, timeout=timeout_s)
        if not done:
            self._processor_task.cancel()
            log.warning("connection %s: in-flight requests cancelled at shutdown", self.peer)

    async def _read_loop(self) -> None:
        try:
            while True:
                data = await self._reader.read(READ_CHUNK)
                if not data:
                    break
                self._last_activity = time.monotonic()
                for frame in self._frames.feed(data):
                    await self._queue.put((frame, time.perf_counter()))
        except FrameError as exc:
            log.warning("connection %s closed: malformed frame: %s", self.peer, str(exc))
        except asyncio.CancelledError:
            if not self._went_idle:
                raise
            log.info("connection %s closed: idle longer than connections.max.idle.ms", self.peer)
        except (ConnectionError, OSError) as exc:
            log.debug("connection %s read failed: %s", self.peer, str(exc))
        finally:
            self._reader_finished = True
            with contextlib.suppress(asyncio.QueueFull):
                self._queue.put_nowait(None)

    def _watch_idleness(self, after_s: float) -> None:
        """Close the connection once it has read nothing and served nothing for
        ``connections.max.idle.ms``: one timer per connection, looked at when it fires,
        rather than a timeout around every read. A request being served or waiting to be
        counts as activity, so a long poll never makes its connection idle."""
        self._idle_timer = asyncio.get_running_loop().call_later(after_s, self._check_idleness)

    def _check_idleness(self) -> None:
        now = time.monotonic()
        if self._busy or not self._queue.empty():
            self._last_activity = now
        remaining = self._last_activity + self._limits.idle_timeout_s - now
        if remaining > 0:
            self._watch_idleness(max(remaining, IDLE_RECHECK_S))
            return
        self._went_idle = True
        if self._reader_task is not None:
            self._reader_task.cancel()

    async def _process_loop(self) -> None:
        """Serve queued requests in order until the reader is done and nothing is left.
        The reader's end-of-stream marker needs a free queue slot; without one (the
        reader ended on a full queue) the finished flag ends the loop once it is drained,
        so neither side ever waits on the other. Requests received before the client
        went away are still served, as Kafka's handlers serve what its request queue
        holds; their answers are dropped (``_write``)."""
        while True:
            if self._reader_finished and self._queue.empty():
                return
            queued = await self._queue.get()
            if queued is None:
                return
            frame, received = queued
            timing = RequestTiming(received, dequeued=time.perf_counter())
            self._busy = True
            try:
                response = await self._dispatch(self, frame, timing)
            except CloseConnection as exc:
                log.warning("connection %s closed: %s", self.peer, str(exc))
                return
            finally:
                self._busy = False
            timing.send_started = timing.sent = time.perf_counter()
            timing.response_ready = timing.response_ready or timing.send_started
            if response is not None:
                self._write(response)
                try:
                    await self._writer.drain()
                except (ConnectionError, OSError):
                    return
                timing.sent = time.perf_counter()
            timing.finish()
            if self.session.close_reason:
                log.info("connection %s closed: %s", self.peer, self.session.close_reason)
                return
            if self._mute_s > 0:
                await self._stay_muted()
            self._last_activity = time.monotonic()

    async def _stay_muted(self) -> None:
        """Stop reading from the socket (the kernel buffers, then the client's sends, fill
        up) and serve nothing queued until the throttle time has passed."""
        seconds, self._mute_s = self._mute_s, 0.0
        transport = self._writer.transport
        transport.pause_reading()
        self._busy = True
        try:
            await asyncio.sleep(seconds)
        finally:
            self._busy = False
            if not transport.is_closing():
                transport.resume_reading()

    def _write(self, buffers: FrameBuffers) -> None:
        """Hand the response to the transport one buffer at a time, each as a view.

        The selector transport sends what the socket takes at once and copies only the
        rest; a view keeps that rest from being sliced into a new ``bytes`` first, and
        separate writes spare the record sets the join that ``writelines`` would do.
        Once a write finds the client gone the rest are dropped.
        """
        transport = self._writer.transport
        for buffer in buffers:
            if transport.is_closing():
                return
            self._writer.write(memoryview(buffer))
