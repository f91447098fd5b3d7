"""The broker's transaction components, wired together.

Built before the listener opens (so handlers find them) and started once the broker is
registered and its partitions applied, because starting resumes unfinished transactions
by sending markers, over the wire, possibly to this broker itself.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from mirrorsim.broker.group import GroupCoordinator
from mirrorsim.broker.metadata.store import MetadataStore
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.broker.replica.manager import wall_clock_ms
from mirrorsim.broker.txn.cluster_view import BrokerTxnCluster, TxnClusterHost
from mirrorsim.broker.txn.coordinator import TransactionCoordinator, TxnCoordinatorConfig
from mirrorsim.broker.txn.markers import MarkerWriter
from mirrorsim.broker.txn.pending_offsets import PendingTxnOffsets
from mirrorsim.broker.txn.store import TxnStore
from mirrorsim.client.config import ClientConfig


@runtime_checkable
class TxnServiceHost(TxnClusterHost, Protocol):
    """What the transaction components need of their broker: its metadata store (the
    transaction log), the group coordinator (transactional offsets), the replica manager
    (producer ids) and how to reach its own cluster (markers)."""

    @property
    def store(self) -> MetadataStore: ...

    @property
    def groups(self) -> GroupCoordinator: ...

    @property
    def replica_manager(self) -> ReplicaManager: ...

    @property
    def bootstrap(self) -> str: ...

    @property
    def inter_broker_client(self) -> ClientConfig: ...


class TransactionService:
    def __init__(self, broker: TxnServiceHost) -> None:
        store = TxnStore(broker.store)
        cluster = BrokerTxnCluster(broker)
        self.pending_offsets = PendingTxnOffsets(store, broker.groups, cluster.offsets_partition)
        self._markers = MarkerWriter(
            lambda: str(broker.bootstrap),
            cluster,
            f"txn-coordinator-{broker.broker_id}",
            broker.inter_broker_client,
        )
        self.coordinator = TransactionCoordinator(
            store=store,
            cluster=cluster,
            markers=self._markers,
            allocate_producer_id=broker.replica_manager.producer_ids.allocate,
            clock_ms=wall_clock_ms,
            config=TxnCoordinatorConfig(
                max_timeout_ms=int(broker.config("transaction.max.timeout.ms")),
                cleanup_interval_ms=int(
                    broker.config("transaction.abort.timed.out.transaction.cleanup.interval.ms")
                ),
                stop_before_markers=bool(broker.config("transaction.fault.stop.before.markers")),
            ),
        )

    async def start(self) -> None:
        await self._markers.start()
        await self.coordinator.start()

    async def stop(self) -> None:
        await self.coordinator.stop()
        await self._markers.close()
