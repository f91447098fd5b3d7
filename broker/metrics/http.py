"""The ``/metrics`` HTTP endpoint, served from the broker's own event loop.

It runs on the loop (not in prometheus_client's server thread) so scrape-time collectors
read component state from the thread that owns it. It speaks just enough HTTP/1.1 for a
Prometheus scraper or curl: one GET (or HEAD) per connection, then close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

MAX_HEADER_BYTES = 16 * 1024
READ_TIMEOUT_S = 10.0


class MetricsEndpoint:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry
        self._server: asyncio.Server | None = None
        self.port: int | None = None

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, host, port, limit=MAX_HEADER_BYTES)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("metrics on http://%s:%d/metrics", host, self.port)

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        await self._server.wait_closed()
        self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
            method, _, rest = head.decode("latin-1").partition(" ")
            path = rest.split(" ", 1)[0].split("?", 1)[0]
            if method not in ("GET", "HEAD"):
                status, body, content_type = "405 Method Not Allowed", b"", "text/plain"
            elif path == "/metrics":
                status, body = "200 OK", generate_latest(self._registry)
                content_type = CONTENT_TYPE_LATEST
            else:
                status, body, content_type = "404 Not Found", b"try /metrics\n", "text/plain"
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("latin-1")
            )
            if method != "HEAD":
                writer.write(body)
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        except (ConnectionError, OSError) as exc:
            log.debug("metrics connection failed: %s", exc)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()
