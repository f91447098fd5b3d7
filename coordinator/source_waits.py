"""Mirror partitions riding out a source that does not answer, woken together.

A partition whose step failed against its source used to retry on its own every 0.2 s.
When the source is down that is every mirrored partition, each going through its step,
a shared connection attempt and a log line five times a second: at 20,000 partitions
the destination spent three quarters of a core doing nothing useful, at 100,000 more
than it had. Instead, a partition that failed waits here until one probe per mirror
finds the source answering again (a Metadata request for no topics), retried with a
backoff doubling from ``FIRST_BACKOFF_S`` to ``MAX_BACKOFF_S``; a source that answers at
once (a partition whose own source leader is missing) costs one probe per round.

A partition kicked while it waits (a failover, a pause, its mirror deleted) is woken at
once, so a disaster's failover never waits for the source it is leaving. Waiting and
waking cost a dict entry and a future per partition, whatever the number waiting.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

FIRST_BACKOFF_S = 0.2
MAX_BACKOFF_S = 5.0
ATTEMPT_TIMEOUT_S = 2.0
_PROBE_TROUBLE = (TimeoutError, ConnectionError, OSError)

Probe = Callable[[str], Awaitable[Any]]
"""Ask ``mirror``'s source one question; raises a timeout or a connection error while
the source does not answer. Any other outcome (a LookupError for a mirror that is gone,
a Kafka error) ends the wait: the partitions find out in their own step."""


class SourceWaits:
    """The partitions waiting for their mirror's source, and one probe per mirror."""

    def __init__(self, probe: Probe) -> None:
        self._probe = probe
        self._waiting: dict[str, dict[Any, asyncio.Future[None]]] = {}
        self._mirror_of: dict[Any, str] = {}
        self._probes: dict[str, asyncio.Task[None]] = {}

    def waiting(self, mirror: str) -> int:
        return len(self._waiting.get(mirror, ()))

    def is_waiting(self, key: Any) -> bool:
        return key in self._mirror_of

    def probing(self, mirror: str) -> bool:
        """Whether a probe already waits for ``mirror``'s source (and reports, in its own
        line, how many partitions wait with it)."""
        return mirror in self._probes

    async def wait(self, mirror: str, key: Any, *, at_least_s: float) -> None:
        """``at_least_s``, then until ``mirror``'s source answers a probe or ``key`` is
        woken (a wake or an answer during the first ``at_least_s`` counts)."""
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.wake(key)
        self._waiting.setdefault(mirror, {})[key] = woken
        self._mirror_of[key] = mirror
        if mirror not in self._probes:
            probe = asyncio.get_running_loop().create_task(
                self._until_answered(mirror), name=f"probe source of mirror {mirror}"
            )
            self._probes[mirror] = probe
        try:
            await asyncio.sleep(at_least_s)
            await woken
        finally:
            if self._waiting.get(mirror, {}).get(key) is woken:
                del self._waiting[mirror][key]
                del self._mirror_of[key]

    def wake(self, key: Any) -> None:
        """End ``key``'s wait, if it waits."""
        mirror = self._mirror_of.pop(key, None)
        if mirror is None:
            return
        woken = self._waiting[mirror].pop(key)
        if not woken.done():
            woken.set_result(None)

    async def close(self) -> None:
        probes = list(self._probes.values())
        for probe in probes:
            probe.cancel()
        await asyncio.gather(*probes, return_exceptions=True)

    async def _until_answered(self, mirror: str) -> None:
        """Probe until the source answers (anything but a timeout or a connection
        failure counts: a refusal is an answer), then wake the mirror's partitions. The
        probe is forgotten before the wake, so a partition that fails again starts the
        next one."""
        backoff = FIRST_BACKOFF_S
        try:
            while True:
                try:
                    async with asyncio.timeout(ATTEMPT_TIMEOUT_S):
                        await self._probe(mirror)
                except _PROBE_TROUBLE as exc:
                    log.warning(
                        "mirror %s: source does not answer (%r); %d partitions wait for "
                        "it, next probe in %.1f s",
                        mirror,
                        exc,
                        self.waiting(mirror),
                        backoff,
                    )
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, MAX_BACKOFF_S)
                    continue
                except Exception:  # answered, if not as hoped: the partitions find out
                    pass
                break
        finally:
            if self._probes.get(mirror) is asyncio.current_task():
                del self._probes[mirror]
        for key in list(self._waiting.get(mirror, ())):
            self.wake(key)
