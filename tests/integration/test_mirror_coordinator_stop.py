"""The mirror coordinator's stop ends every reconcile loop, even one that lost its
cancellation.

Before Python 3.12, ``asyncio.wait_for`` can swallow a cancellation that lands as its
inner call completes. A reconcile loop that lost it in this way went on retrying its
partition and held the broker's stop for the chaos soak's 180 s step bound (seed 5,
schedule 457, an outage). The test plants exactly that: a step that turns its
cancellation into a retriable error.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mirrorsim.coordinator.mirror_coordinator import MirrorCoordinator
from mirrorsim.protocol.errors import ErrorCode, KafkaError

STOP_BOUND_S = 10.0


async def test_a_reconcile_loop_that_lost_its_cancellation_does_not_hold_the_stop(
    start_cluster: Any, monkeypatch: Any, wait_for: Any
) -> None:
    cluster = await start_cluster()
    coordinator: MirrorCoordinator = cluster.brokers[0].mirrors
    steps = 0

    async def step_losing_its_cancellation(_key: Any) -> bool:
        nonlocal steps
        steps += 1
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "cancellation lost") from None
        return False

    monkeypatch.setattr(coordinator, "_step", step_losing_its_cancellation)
    coordinator.kick(("orders", 0))
    await wait_for(lambda: steps == 1, timeout=5, message="the reconcile loop's first step")
    await asyncio.wait_for(coordinator.stop(), STOP_BOUND_S)
    assert coordinator._tasks == {}
