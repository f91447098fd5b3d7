"""A running broker provides every member of the ports its components are typed against.

The coordinator's state topic and sync executor, the leader-epoch bump and the mirror
management handlers name only Protocols, not the broker; nothing else checks that the
broker the server wires still has what those Protocols list, so this asks a real one.
"""

from __future__ import annotations

from conftest import StartCluster

from mirrorsim.broker.handlers.mirror_ports import MirrorLifecyclePort
from mirrorsim.broker.metadata.leader_epochs import LeaderEpochHost, LeaderEpochStore
from mirrorsim.coordinator.state_topic import (
    StateTopicCreator,
    StateTopicHost,
    StateTopicReplicas,
)
from mirrorsim.coordinator.sync_executor import SyncDestination


async def test_a_running_broker_provides_every_port(start_cluster: StartCluster) -> None:
    cluster = await start_cluster()
    (broker,) = cluster.brokers
    assert isinstance(broker, StateTopicHost)
    assert isinstance(broker.controller, StateTopicCreator)
    assert isinstance(broker.replica_manager, StateTopicReplicas)
    assert isinstance(broker, SyncDestination)
    assert isinstance(broker, LeaderEpochHost)
    assert isinstance(broker.store, LeaderEpochStore)
    assert isinstance(broker.mirror_lifecycle, MirrorLifecyclePort)
    assert await broker.mirror_lifecycle.list_mirrors() == []
