"""Where a test's event loop was stuck, printed shortly before pytest-timeout fails it.

pytest-timeout's failure shows the main thread inside the event loop's ``select``, which
says nothing about which coroutine never finished. A timer thread fires a little before
the timeout, finds the event loop running on the main thread (a frame of ``run_forever``
holds it as ``self``) and prints the stack of every pending task to stderr, which pytest
shows with the failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
import threading
from collections.abc import Iterator
from types import FrameType

REPORT_BEFORE_TIMEOUT_S = 15.0
STACK_LIMIT = 25


def _running_loop(frame: FrameType | None) -> asyncio.AbstractEventLoop | None:
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, asyncio.AbstractEventLoop) and candidate.is_running():
            return candidate
        frame = frame.f_back
    return None


def pending_task_stacks(thread_id: int) -> str:
    """The stacks of the pending tasks of the loop running on ``thread_id``."""
    loop = _running_loop(sys._current_frames().get(thread_id))
    if loop is None:
        return "no event loop is running on the test's thread\n"
    for _ in range(5):
        try:
            tasks = list(asyncio.all_tasks(loop))
            break
        except RuntimeError:
            continue
    else:
        return "the loop's tasks changed while they were listed\n"
    out = io.StringIO()
    out.write(f"{len(tasks)} pending tasks:\n")
    for task in tasks:
        out.write(f"{task.get_name()}:\n")
        out.writelines(f"  {line}\n" for line in await_chain(task.get_coro()))
    return out.getvalue()


def await_chain(awaitable: object) -> list[str]:
    """Where a suspended coroutine waits, outermost first: each frame of the chain of
    coroutines it awaits (a task's own stack stops at its outermost coroutine)."""
    lines: list[str] = []
    while awaitable is not None and len(lines) < STACK_LIMIT:
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None)
        if frame is None:
            lines.append(f"awaiting {awaitable!r}"[:200])
            break
        code = frame.f_code
        lines.append(f"{code.co_filename}:{frame.f_lineno} in {code.co_name}")
        awaitable = getattr(awaitable, "cr_await", None) or getattr(awaitable, "gi_yieldfrom", None)
    return lines


@contextlib.contextmanager
def report_hang_after(seconds: float, test_name: str) -> Iterator[None]:
    """Print the pending tasks' stacks if the body is still running after ``seconds``."""
    thread_id = threading.get_ident()

    def report() -> None:
        sys.stderr.write(
            f"\n{test_name} still running after {seconds:.0f}s; " + pending_task_stacks(thread_id)
        )

    timer = threading.Timer(seconds, report)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
