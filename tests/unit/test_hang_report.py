"""The report a test prints before pytest-timeout fails it names the coroutine that hung."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from helpers.hang_report import pending_task_stacks, report_hang_after


async def _stuck_on(event: asyncio.Event) -> None:
    await event.wait()


async def test_the_report_shows_each_pending_task_where_it_waits() -> None:
    never = asyncio.Event()
    stuck = asyncio.create_task(_stuck_on(never))
    await asyncio.sleep(0)
    try:
        report = await asyncio.to_thread(pending_task_stacks, threading.get_ident())
    finally:
        stuck.cancel()
    assert "pending tasks" in report
    assert "_stuck_on" in report


def test_without_a_running_loop_the_report_says_so() -> None:
    report = pending_task_stacks(threading.get_ident())
    assert report == "no event loop is running on the test's thread\n"


async def test_a_body_still_running_after_the_delay_is_reported(
    capsys: pytest.CaptureFixture[str], wait_for: Any
) -> None:
    stuck = asyncio.create_task(_stuck_on(asyncio.Event()))
    err: list[str] = []

    def reported() -> bool:
        err.append(capsys.readouterr().err)
        return "_stuck_on" in "".join(err)

    with report_hang_after(0.05, "the-test"):
        await wait_for(reported, timeout=10, message="the hang report")
    stuck.cancel()
    assert "the-test still running after 0s; " in "".join(err)


def test_a_body_that_ends_in_time_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with report_hang_after(60, "the-test"):
        pass
    assert capsys.readouterr().err == ""
