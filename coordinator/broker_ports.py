"""What each mirror component needs of the broker it runs in, as Protocols.

The mirror coordinator, the lifecycle operations, the state client, the metadata manager
and the source-deletion handler each name only the parts of the broker they use, so each
can be read without the broker process, and the broker process (the layer above) is never
imported here. A running ``Broker`` satisfies every port;
``tests/integration/test_broker_ports.py`` checks that on a started broker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mirrorsim.broker.metadata.controller import MetadataController
from mirrorsim.broker.metadata.leader_epochs import LeaderEpochHost
from mirrorsim.broker.metadata.models import BrokerRegistration
from mirrorsim.broker.metadata.store import MetadataStore
from mirrorsim.broker.metadata.view import ClusterSnapshot
from mirrorsim.broker.metrics import BrokerMetrics
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.client.config import ClientConfig
from mirrorsim.coordinator.state_topic import StateTopicHost
from mirrorsim.coordinator.sync_executor import SyncDestination

if TYPE_CHECKING:
    from mirrorsim.coordinator.metadata_manager import MirrorMetadataManager
    from mirrorsim.coordinator.mirror_coordinator import MirrorCoordinator


@runtime_checkable
class BrokerIdentity(Protocol):
    """Who this broker is, what it knows of the cluster, and its effective configs."""

    @property
    def broker_id(self) -> int: ...

    @property
    def snapshot(self) -> ClusterSnapshot: ...

    def config(self, name: str) -> Any: ...


@runtime_checkable
class InterBrokerClientHost(BrokerIdentity, Protocol):
    """What a component needs to open a client to its own cluster (state RPCs, commits)."""

    @property
    def inter_broker_client(self) -> ClientConfig: ...

    @property
    def bootstrap(self) -> str: ...


@runtime_checkable
class MirrorCoordinatorHost(StateTopicHost, InterBrokerClientHost, LeaderEpochHost, Protocol):
    """The mirror coordinator and the parts it builds (state topic, state client, leader
    epoch bumps): the local replicas it writes and gates, the stored mirrors and topics it
    reads, and the metrics it reports into."""

    @property
    def store(self) -> MetadataStore: ...

    @property
    def metrics(self) -> BrokerMetrics: ...

    @property
    def replica_manager(self) -> ReplicaManager: ...


@runtime_checkable
class SourceDeletionsHost(BrokerIdentity, Protocol):
    """The source-deletion handler writes topic configs through the controller."""

    @property
    def controller(self) -> MetadataController: ...


@runtime_checkable
class MetadataManagerHost(InterBrokerClientHost, SourceDeletionsHost, SyncDestination, Protocol):
    """The metadata manager and the sync executor it builds: the stored mirrors it syncs,
    which brokers are alive (it spreads mirrors over them), and the metrics it reports
    into."""

    @property
    def metrics(self) -> BrokerMetrics: ...

    def live_brokers(self) -> list[BrokerRegistration]: ...


@runtime_checkable
class LifecycleHost(BrokerIdentity, Protocol):
    """The mirror operations (create, add, remove, pause, resume, delete): the metadata
    store and controller they change, and the coordinator and metadata manager that carry
    the change out."""

    @property
    def cluster_id(self) -> str: ...

    @property
    def store(self) -> MetadataStore: ...

    @property
    def controller(self) -> MetadataController: ...

    @property
    def mirrors(self) -> MirrorCoordinator: ...

    @property
    def mirror_metadata(self) -> MirrorMetadataManager: ...

    async def refresh_metadata(self) -> None: ...
