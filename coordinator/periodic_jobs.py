"""Named periodic jobs that survive their own failures, as MirrorMaker 2's scheduler runs
its sync tasks.

A job runs its work every ``interval_s()`` seconds (read before each wait, so a dynamic
config change applies from the next cycle). A failed cycle is logged (an I/O failure,
such as an unreachable metadata store, in one line; anything else with its traceback), reported to
``on_error`` (the metric counter) and retried at the next interval: one bad cycle never
ends the job. ``run_now()`` starts a cycle at once and waits for it, so callers (an
operator action, a test) need not wait out the interval; a cycle already running when
it is called does not count, since it may have read its inputs before the caller's
change.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

STOP_RECANCEL_S = 1.0


class PeriodicJob(Generic[T]):
    def __init__(
        self,
        name: str,
        interval_s: Callable[[], float],
        work: Callable[[], Awaitable[T]],
        on_error: Callable[[BaseException], None] = lambda exc: None,
    ) -> None:
        self.name = name
        self._interval_s = interval_s
        self._work = work
        self._on_error = on_error
        self._wake = asyncio.Event()
        self._waiters: list[asyncio.Future[T]] = []
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.cycles = 0
        """Cycles started."""
        self.completed = 0
        """Cycles that ended (succeeded or failed): what a caller waits on to know that
        cycles which started after a change of its have run."""
        self.failures = 0

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self._task is None and not self._stopping:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name=self.name)

    async def stop(self) -> None:
        """Cancel the job; callers waiting in ``run_now`` get CancelledError.

        Cancellation is repeated until the task ends, and the loop also checks a stop
        flag: on Python 3.11 ``asyncio.wait_for`` (used by libraries inside a cycle) can
        swallow a cancellation that arrives as its inner future completes, and the task
        would otherwise run on with a stale cancel request.
        """
        task, self._task = self._task, None
        self._stopping = True
        while task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task], timeout=STOP_RECANCEL_S)
        for waiter in self._waiters:
            waiter.cancel()
        self._waiters.clear()

    def run_now(self) -> asyncio.Future[T]:
        """Ask for a cycle that starts after this call; the future holds its result (or
        its error). Registered before returning, so a cycle running right now never
        answers it. The regular schedule continues from that cycle."""
        if not self.running:
            raise RuntimeError(f"job {self.name!r} is not running")
        waiter: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._wake.set()
        return waiter

    async def _loop(self) -> None:
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(self._interval_s(), 0.0)):
                    await self._wake.wait()
            if self._stopping:
                return
            self._wake.clear()
            waiters, self._waiters = self._waiters, []
            await self._cycle(waiters)

    async def _cycle(self, waiters: list[asyncio.Future[T]]) -> None:
        started = time.monotonic()
        self.cycles += 1
        try:
            result = await self._work()
        except asyncio.CancelledError:
            for waiter in waiters:
                waiter.cancel()
            raise
        except Exception as exc:
            self.completed += 1
            self.failures += 1
            took = time.monotonic() - started
            if isinstance(exc, OSError):
                log.warning("job %r failed after %.3fs: %s", self.name, took, exc)
            else:
                log.exception("job %r failed after %.3fs", self.name, took)
            self._on_error(exc)
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        self.completed += 1
        log.debug("job %r took %.3fs", self.name, time.monotonic() - started)
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(result)
