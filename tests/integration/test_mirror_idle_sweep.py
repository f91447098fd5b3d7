"""The coordinator's periodic sweep passes settled mirror partitions by.

A destination with 100,000 idle mirror partitions must not start a reconcile task for
each of them every few seconds, nor even look at each: a partition resting in MIRRORING
with its fetcher, with no failure reported, is settled, and only a metadata change or a
fetcher's report (which both kick it) can move it. A partition its fetcher let go of
(the source leader moved) is not settled, and the sweep takes it.
"""

from __future__ import annotations

from typing import Any

from helpers.mirrors import MIRROR, MIRROR_CONFIGS, broker_of, mirror_state

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic

PARTITIONS = 16
TOPIC = "settled"


async def test_a_sweep_kicks_only_partitions_that_are_not_settled(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs=MIRROR_CONFIGS)
    destination = await start_cluster("backup", configs=MIRROR_CONFIGS)
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])).all()
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
    coordinator = broker_of(destination).mirrors
    await wait_for(
        lambda: (
            all(mirror_state(destination, TOPIC, p) == "MIRRORING" for p in range(PARTITIONS))
            and not coordinator._tasks
        ),
        timeout=15,
        message="every partition MIRRORING and no reconcile step running",
    )
    kicked: list[tuple[str, int]] = []
    looked_at: list[tuple[str, int]] = []
    kick, settled = coordinator.kick, coordinator._settled
    coordinator.kick = lambda key: (kicked.append(key), kick(key))[1]  # type: ignore[method-assign]
    coordinator._settled = lambda key: (looked_at.append(key), settled(key))[1]  # type: ignore[method-assign]
    try:
        coordinator._last_sweep = float("-inf")
        await coordinator.on_metadata_change()
        assert kicked == [] and looked_at == []
        coordinator.relocate(TOPIC, 3)
        coordinator._last_sweep = float("-inf")
        await coordinator.on_metadata_change()
        assert set(kicked) == {(TOPIC, 3)} and set(looked_at) <= {(TOPIC, 3)}
    finally:
        coordinator.kick, coordinator._settled = kick, settled  # type: ignore[method-assign]
    await wait_for(
        lambda: (
            coordinator.fetchers.is_fetching((TOPIC, 3))
            and not coordinator.partitions[(TOPIC, 3)].relocating
            and mirror_state(destination, TOPIC, 3) == "MIRRORING"
        ),
        timeout=15,
        message="the relocated partition fetching again",
    )
