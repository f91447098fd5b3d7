"""The coordinator's periodic sweep passes settled mirror partitions by.

A destination with 100,000 idle mirror partitions must not start a reconcile task for
each of them every few seconds: a partition resting in MIRRORING with its fetcher, with
no failure reported, is settled, and only a metadata change or a fetcher's report (which
both kick it) can move it. A partition with a reported failure is not settled, and the
sweep still takes it.
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
    kick = coordinator.kick
    coordinator.kick = lambda key: (kicked.append(key), kick(key))[1]  # type: ignore[method-assign]
    try:
        coordinator._last_sweep = float("-inf")
        await coordinator.on_metadata_change()
        assert kicked == []
        coordinator.partitions[(TOPIC, 3)].failure = "reported by a fetcher"
        coordinator._last_sweep = float("-inf")
        await coordinator.on_metadata_change()
        assert kicked == [(TOPIC, 3)]
    finally:
        coordinator.kick = kick  # type: ignore[method-assign]
    await wait_for(
        lambda: mirror_state(destination, TOPIC, 3) == "FAILED",
        timeout=15,
        message="the partition with a failure FAILED",
    )
