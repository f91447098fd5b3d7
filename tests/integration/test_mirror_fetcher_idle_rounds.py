"""A mirror fetcher's idle round asks no partition for its next action.

A destination mirroring many idle partitions runs a round per source max wait; a round
that asked every partition again would cost CPU in proportion to all that is mirrored.
The fetcher here is the real one, fetching from a real source cluster; only the plan's
``next_action`` and the session's ``build`` are wrapped, to count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers.mirrors import MIRROR_CONFIGS, broker_of, mirror_new_topic, mirrored_up_to, produce

from mirrorsim.fetcher import task as fetcher_task
from mirrorsim.fetcher.fetch_session import FetchSessionHandler
from mirrorsim.fetcher.plan import FetchAction, PartitionFetchState

PARTITIONS = 8
QUIET_ROUNDS = 10


class Rounds:
    """Counts fetch rounds and, per round, the partitions asked for their next action."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.asked: list[int] = [0]
        next_action = fetcher_task.next_action
        build = FetchSessionHandler.build

        def counted_next_action(state: PartitionFetchState, now_ms: int) -> FetchAction:
            self.asked[-1] += 1
            return next_action(state, now_ms)

        def counted_build(handler: FetchSessionHandler) -> Any:
            self.asked.append(0)
            return build(handler)

        monkeypatch.setattr(fetcher_task, "next_action", counted_next_action)
        monkeypatch.setattr(FetchSessionHandler, "build", counted_build)

    def quiet_for(self, rounds: int) -> Callable[[], bool]:
        """Whether the last ``rounds`` finished rounds asked no partition."""
        return lambda: len(self.asked) > rounds and not any(self.asked[-rounds - 1 : -1])


async def test_idle_rounds_ask_no_partition_and_a_write_asks_only_its_partition(
    start_cluster: Any, wait_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    await mirror_new_topic(source, destination, "idle", PARTITIONS, wait_for)
    fetchers = broker_of(destination).mirrors.fetchers.fetchers
    assert [sorted(task.partitions) for task in fetchers.values()] == [
        [("idle", p) for p in range(PARTITIONS)]
    ]

    rounds = Rounds(monkeypatch)
    await wait_for(rounds.quiet_for(QUIET_ROUNDS), timeout=20, message="idle rounds")

    written = len(rounds.asked)
    await produce(source.bootstrap, "idle", 3, partitions=1)
    await wait_for(lambda: mirrored_up_to(source, destination, "idle", 0), timeout=20)
    await wait_for(rounds.quiet_for(QUIET_ROUNDS), timeout=20, message="idle again")
    asked = rounds.asked[written - 1 : -1]
    assert sum(asked) >= 1 and max(asked) == 1, asked
