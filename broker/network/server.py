"""The broker's TCP listener and the set of live connections.

Shutdown is orderly, as in uvicorn: stop accepting, let every connection finish the
requests it already read (bounded by a drain timeout), then close what is left.
"""

from __future__ import annotations

import asyncio
import logging
import ssl

from mirrorsim.broker.network.connection import (
    CLOSE_TIMEOUT_S,
    Connection,
    ConnectionLimits,
    Dispatch,
)
from mirrorsim.broker.network.listener_spec import ListenerSpec, SecurityProtocol

log = logging.getLogger(__name__)


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
        self._server: asyncio.Server | None = None
        self._connections: dict[Connection, asyncio.Task[None]] = {}

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._accept, self.host, self.port, ssl=self._ssl_context
        )
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("listener %s listening on %s:%d", self.listener.name, self.host, self.port)

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
        if self._server is None:
            return
        self._server.close()
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
        await self._server.wait_closed()
        self._server = None
