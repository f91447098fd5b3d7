"""SIGKILL the broker holding the controller lease: another broker takes the lease once it
expires (a session timeout) and elections go on under the new controller."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.processes import SYSTEM_CONFIGS, partition_row, process_clusters

from mirrorsim.broker.controller import ControllerLease, LeaseState
from mirrorsim.broker.metadata.store import MetadataStore
from mirrorsim.broker.supervisor import ProcessCluster
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic

pytestmark = pytest.mark.system

SESSION_TIMEOUT_MS = int(SYSTEM_CONFIGS["broker.session.timeout.ms"])


@pytest.fixture
async def process_cluster(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    async with process_clusters(tmp_path) as start:
        yield start


def lease(cluster: ProcessCluster) -> LeaseState | None:
    store = MetadataStore.open(cluster.spec.effective_metadata_url)
    try:
        return ControllerLease(store.engine).current()
    finally:
        store.close()


async def test_killing_the_controller_moves_the_lease_and_elections_continue(
    process_cluster: Callable[..., Any], wait_for: Any
) -> None:
    cluster: ProcessCluster = await process_cluster()
    old = await wait_for(lambda: lease(cluster), timeout=30, message="a controller")
    topic = "led-by-the-controller"
    others = [b for b in (1, 2, 3) if b != old.broker_id]
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        (
            await admin.create_topics(
                [NewTopic(topic, replica_assignments={0: [old.broker_id, *others]})]
            )
        ).all()
    await wait_for(lambda: partition_row(cluster, topic).isr == (old.broker_id, *others))

    await cluster.kill(old.broker_id, signal.SIGKILL)
    new = await wait_for(
        lambda: (s := lease(cluster)) is not None and s.broker_id != old.broker_id and s,
        timeout=10 * SESSION_TIMEOUT_MS / 1000,
        message="a new controller",
    )
    assert new.controller_epoch == old.controller_epoch + 1
    assert new.broker_id in others

    row = await wait_for(
        lambda: (r := partition_row(cluster, topic)).leader == others[0] and r,
        timeout=10 * SESSION_TIMEOUT_MS / 1000,
        message="the new controller elects a leader",
    )
    assert (row.leader_epoch, row.isr) == (1, tuple(others))

    await cluster.restart(old.broker_id)
    await wait_for(
        lambda: set(partition_row(cluster, topic).isr) == {1, 2, 3},
        timeout=30,
        message="the old controller rejoins the ISR",
    )
    current = lease(cluster)
    assert current is not None
    assert current.broker_id == new.broker_id
    assert current.controller_epoch == new.controller_epoch
