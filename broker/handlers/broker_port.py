"""What request handlers may use of the broker that dispatches to them.

Handlers sit below the broker process (``server.py`` wires them), so they name this
Protocol instead of ``Broker``. Each member is typed with the class of its own, lower
layer, or with a port where that class lives above the handlers (the mirror coordinator
and lifecycle). A running ``Broker`` satisfies it: ``tests/integration/test_broker_ports.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mirrorsim.broker.config import BrokerConfigLayers
from mirrorsim.broker.controller.active import ClusterController
from mirrorsim.broker.group import GroupCoordinator
from mirrorsim.broker.group.share_sessions import ShareSessionCache
from mirrorsim.broker.group.share_state_store import ShareStateStore
from mirrorsim.broker.handlers.metadata_cache import EncodedTopicCache
from mirrorsim.broker.handlers.mirror_ports import MirrorCoordinatorView, MirrorLifecyclePort
from mirrorsim.broker.handlers.topic_config_entries import TopicConfigEntries
from mirrorsim.broker.metadata.controller import MetadataController
from mirrorsim.broker.metadata.models import BrokerRegistration
from mirrorsim.broker.metadata.store import MetadataStore
from mirrorsim.broker.metadata.view import ClusterSnapshot
from mirrorsim.broker.metrics import BrokerMetrics
from mirrorsim.broker.quotas.manager import ClientQuotas
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.broker.share.manager import SharePartitionManager
from mirrorsim.broker.txn.service import TransactionService


@runtime_checkable
class HandlerBroker(Protocol):
    """The broker as every handler sees it."""

    @property
    def broker_id(self) -> int: ...

    @property
    def cluster_id(self) -> str: ...

    @property
    def static_configs(self) -> Mapping[str, str]: ...

    @property
    def data_dir(self) -> Path: ...

    @property
    def snapshot(self) -> ClusterSnapshot: ...

    @property
    def store(self) -> MetadataStore: ...

    @property
    def controller(self) -> MetadataController: ...

    @property
    def cluster_controller(self) -> ClusterController: ...

    @property
    def replica_manager(self) -> ReplicaManager: ...

    @property
    def groups(self) -> GroupCoordinator: ...

    @property
    def share_states(self) -> ShareStateStore: ...

    @property
    def transactions(self) -> TransactionService: ...

    @property
    def share_sessions(self) -> ShareSessionCache: ...

    @property
    def share_partitions(self) -> SharePartitionManager: ...

    @property
    def client_quotas(self) -> ClientQuotas: ...

    @property
    def metrics(self) -> BrokerMetrics: ...

    @property
    def metadata_topic_cache(self) -> EncodedTopicCache: ...

    @property
    def topic_config_entries(self) -> TopicConfigEntries: ...

    @property
    def mirrors(self) -> MirrorCoordinatorView: ...

    @property
    def mirror_lifecycle(self) -> MirrorLifecyclePort: ...

    def config(self, name: str) -> Any: ...

    def config_layers(self) -> BrokerConfigLayers: ...

    def live_brokers(self) -> list[BrokerRegistration]: ...

    def controller_id(self) -> int: ...

    async def refresh_metadata(self) -> None: ...

    async def refresh_client_quotas(self) -> None: ...
