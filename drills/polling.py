"""Waiting on a condition with a deadline: the one way drills synchronize."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mirrorsim.protocol.errors import KafkaError

POLL_INTERVAL_S = 0.05


class DrillTimeout(TimeoutError):
    """A condition did not hold in time; the message says which."""


async def wait_until(
    predicate: Callable[[], Any] | Callable[[], Awaitable[Any]],
    timeout: float,
    what: str,
) -> Any:
    """Poll ``predicate`` until it returns something truthy (returned). Kafka errors and
    connection errors count as "not yet": the cluster may be electing or restarting."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = predicate()
            if inspect.isawaitable(result):
                result = await result
            if result:
                return result
        except (TimeoutError, KafkaError, OSError) as exc:
            last_error = exc
        if time.monotonic() > deadline:
            suffix = f" (last error: {last_error})" if last_error else ""
            raise DrillTimeout(f"timed out after {timeout}s waiting for {what}{suffix}")
        await asyncio.sleep(POLL_INTERVAL_S)
