"""A chaos step that waits without a bound is cut off and reported with where it waits,
instead of holding the exploration forever."""

from __future__ import annotations

import asyncio

import pytest

from mirrorsim.drills.chaos import explorer
from mirrorsim.drills.chaos.explorer import StepHung, _bounded


async def _waits_for(event: asyncio.Event) -> None:
    await event.wait()


async def _a_step_parked_on_an_event(event: asyncio.Event) -> None:
    await _waits_for(event)


async def test_a_step_that_never_finishes_is_cut_off_naming_its_await_chain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(explorer, "STEP_TIMEOUT_S", 0.2)
    never = asyncio.Event()
    with pytest.raises(StepHung) as hung:
        await _bounded(_a_step_parked_on_an_event(never), "step 3 (chaos_transaction)")
    message = str(hung.value)
    assert message.startswith("step 3 (chaos_transaction) did not finish within 0.2s")
    assert "_waits_for" in message
    assert "_a_step_parked_on_an_event" in message


async def test_a_step_that_finishes_returns_and_its_error_propagates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(explorer, "STEP_TIMEOUT_S", 5.0)
    done = asyncio.Event()
    done.set()
    await _bounded(_a_step_parked_on_an_event(done), "step 0")

    async def fails() -> None:
        raise KeyError("no running broker")

    with pytest.raises(KeyError):
        await _bounded(fails(), "step 1")
