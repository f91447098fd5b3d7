"""A source connection attempt whose callers all went away fails quietly.

Every partition of a mirror shares one attempt to open the source; when the fetchers
waiting on it stop (a broker shutting down while the source is down), the attempt still
ends, with a connection error nobody awaits any more. asyncio then logs "Task exception
was never retrieved" with a traceback, which is noise on the operator's console.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from mirrorsim.coordinator.source_clusters import SourceClusters


async def test_an_abandoned_failed_open_is_not_reported_as_unretrieved(
    free_port: Any, wait_for: Any
) -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        closed = f"127.0.0.1:{free_port()}"
        configs = {"bootstrap.servers": closed, "default.api.timeout.ms": "1000"}
        sources = SourceClusters(1, lambda: {"m": configs})
        caller = asyncio.create_task(sources.client("m"))
        await wait_for(lambda: sources._opening.get("m") is not None, message="the attempt")
        attempt = sources._opening["m"]
        caller.cancel()
        await asyncio.gather(caller, return_exceptions=True)
        await wait_for(attempt.done, timeout=30, message="the attempt to fail")
        del attempt, caller
        gc.collect()
        await wait_for(lambda: "m" not in sources._opening, message="the attempt forgotten")
        gc.collect()
    finally:
        loop.set_exception_handler(previous)
    assert [c.get("message") for c in reported] == []
