"""The one wait helper: what counts as "not yet", what fails at once, and what a timeout says."""

from __future__ import annotations

import itertools

import pytest

from mirrorsim.drills.polling import DrillTimeout, wait_until, wait_until_blocking
from mirrorsim.protocol.errors import ErrorCode, KafkaError


async def test_the_first_truthy_value_is_returned_from_a_plain_or_async_predicate() -> None:
    calls = itertools.count()
    assert await wait_until(lambda: next(calls) >= 3 and "ready", 5, "three polls", interval=0) == (
        "ready"
    )

    async def ready() -> int:
        return 7

    assert await wait_until(ready, 5, "an async predicate") == 7


async def test_a_drill_waits_through_kafka_errors_and_names_the_last_one() -> None:
    def electing() -> bool:
        raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "electing")

    with pytest.raises(DrillTimeout, match=r"timed out after 0.1s waiting for a leader \(last"):
        await wait_until(electing, 0.1, "a leader", interval=0.01)


async def test_a_test_wait_fails_at_once_on_an_error() -> None:
    calls = itertools.count()

    def broken() -> bool:
        next(calls)
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "broken")

    with pytest.raises(KafkaError):
        await wait_until(broken, 5, "never", retry_on=(), interval=0.01)
    assert next(calls) == 1


def test_the_blocking_wait_returns_the_value_or_names_what_it_waited_for() -> None:
    calls = itertools.count()
    assert wait_until_blocking(lambda: next(calls) >= 2, 5, "two polls", interval=0) is True
    with pytest.raises(DrillTimeout, match="waiting for a worker"):
        wait_until_blocking(lambda: False, 0.05, "a worker", interval=0.01)
