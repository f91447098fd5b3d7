"""The broker's TCP listener and the set of live connections.

Shutdown is orderly, as in uvicorn: stop accepting, let every connection finish the
requests it already read (bounded by a drain timeout), then close what is left.

The accept loop is the broker's own rather than ``asyncio.start_server``'s: out of
descriptors (EMFILE, ENFILE), asyncio logs a traceback for each of up to 100 queued
connections and schedules as many restarts, which fire after the listener closed. Here a
refused accept logs one line per episode, waits ``ACCEPT_RETRY_S`` and accepts again,
while the open connections keep being served.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl

from mirrorsim.broker.network.connection import (
    CLOSE_TIMEOUT_S,
    READ_CHUNK,
    Connection,
    ConnectionLimits,
    Dispatch,
)
from mirrorsim.broker.network.listener_spec import ListenerSpec, SecurityProtocol

log = logging.getLogger(__name__)

ACCEPT_RETRY_S = 0.5
"""How long a listener out of descriptors waits before accepting again."""
LISTEN_BACKLOG = 100
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class KafkaServer:
    def __init__(
        self,
        host: str,
        port: int,
        dispatch: Dispatch,
        limits: ConnectionLimits,
        *,
        listener: ListenerSpec | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.listener = listener or ListenerSpec(
            "PLAINTEXT", SecurityProtocol.PLAINTEXT, host, port
        )
        self._ssl_context = ssl_context
        self._dispatch = dispatch
        self._limits = limits
        self._sockets: list[socket.socket] = []
        self._acceptors: list[asyncio.Task[None]] = []
        self._handshakes: set[asyncio.Task[None]] = set()
        self._connections: dict[Connection, asyncio.Task[None]] = {}

    async def start(self) -> None:
        self._sockets = await _listening_sockets(self.host, self.port)
        self.port = self._sockets[0].getsockname()[1]
        self._acceptors = [asyncio.create_task(self._accept_loop(s)) for s in self._sockets]
        log.info("listener %s listening on %s:%d", self.listener.name, self.host, self.port)

    async def _accept_loop(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        starved = False
        while True:
            try:
                sock, _ = await loop.sock_accept(listening)
            except ConnectionAbortedError:
                continue
            except OSError as exc:
                if exc.errno not in _OUT_OF_RESOURCES:
                    raise
                if not starved:
                    log.warning(
                        "listener %s cannot accept connections (%s); retrying every %.1f s",
                        self.listener.name,
                        exc.strerror,
                        ACCEPT_RETRY_S,
                    )
                starved = True
                await asyncio.sleep(ACCEPT_RETRY_S)
                continue
            if starved:
                log.info("listener %s accepts connections again", self.listener.name)
                starved = False
            task = asyncio.create_task(self._serve_accepted(sock))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _serve_accepted(self, sock: socket.socket) -> None:
        """Wrap an accepted socket in streams (completing the TLS handshake) and serve it."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(READ_CHUNK, loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        try:
            transport, _ = await loop.connect_accepted_socket(
                lambda: protocol, sock, ssl=self._ssl_context
            )
        except (OSError, ssl.SSLError) as exc:
            sock.close()
            log.info(
                "listener %s: connection failed before its first request: %s",
                self.listener.name,
                exc,
            )
            return
        serving = asyncio.current_task()
        if serving is not None:
            self._handshakes.discard(serving)
        await self._accept(reader, asyncio.StreamWriter(transport, protocol, reader, loop))

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    @property
    def unsent_bytes(self) -> int:
        """Response bytes written but not yet taken by the peers' sockets."""
        return sum(conn.unsent_bytes for conn in self._connections)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(reader, writer, self._dispatch, self._limits, self.listener)
        task = asyncio.current_task()
        assert task is not None
        self._connections[conn] = task
        try:
            await conn.run()
        finally:
            self._connections.pop(conn, None)

    async def stop(self, drain_timeout_s: float) -> None:
        if not self._sockets:
            return
        for task in (*self._acceptors, *self._handshakes):
            task.cancel()
        await asyncio.gather(*self._acceptors, *self._handshakes, return_exceptions=True)
        for listening in self._sockets:
            listening.close()
        self._sockets, self._acceptors = [], []
        connections = list(self._connections.items())
        if connections:
            await asyncio.gather(
                *(conn.drain_and_close(drain_timeout_s) for conn, _ in connections)
            )
            tasks = [task for _, task in connections]
            _, stuck = await asyncio.wait(tasks, timeout=drain_timeout_s + CLOSE_TIMEOUT_S)
            for task in stuck:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def _listening_sockets(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address ``host`` resolves to, as ``asyncio.start_server``
    binds them, but on one port: an ephemeral port is chosen by the first bind."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if sockets[0] is not sock:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets
