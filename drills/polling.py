"""Waiting on a condition with a deadline: the one way drills, benchmarks and tests
synchronize.

Every wait polls a predicate (plain or async) until it returns something truthy, and fails
after its timeout with a message that names what it waited for. Drills treat Kafka and
connection errors as "not yet" (the cluster may be electing or restarting); tests pass
``retry_on=()`` so that an unexpected error fails them at once.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mirrorsim.protocol.errors import KafkaError

POLL_INTERVAL_S = 0.05
NOT_YET: tuple[type[BaseException], ...] = (TimeoutError, KafkaError, OSError)
"""Errors a drill's predicate may raise while the cluster is still getting there."""


class DrillTimeout(TimeoutError):
    """A condition did not hold in time; the message says which."""


async def wait_until(
    predicate: Callable[[], Any] | Callable[[], Awaitable[Any]],
    timeout: float,
    what: str,
    *,
    retry_on: tuple[type[BaseException], ...] = NOT_YET,
    interval: float = POLL_INTERVAL_S,
) -> Any:
    """Poll ``predicate`` until it returns something truthy (returned). Errors of the
    ``retry_on`` types count as "not yet"; the last one is named if time runs out."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            result = predicate()
            if inspect.isawaitable(result):
                result = await result
            if result:
                return result
        except retry_on as exc:
            last_error = exc
        if time.monotonic() > deadline:
            suffix = f" (last error: {last_error})" if last_error else ""
            raise DrillTimeout(f"timed out after {timeout}s waiting for {what}{suffix}")
        await asyncio.sleep(interval)


def wait_until_blocking(
    predicate: Callable[[], Any], timeout: float, what: str, *, interval: float = 0.2
) -> Any:
    """:func:`wait_until` for code without an event loop (a test driving subprocesses)."""
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise DrillTimeout(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
    return result
