"""The broker's transaction components, wired together.

Built before the listener opens (so handlers find them) and started once the broker is
registered and its partitions applied, because starting resumes unfinished transactions
by sending markers, over the wire, possibly to this broker itself.
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.replica.manager import wall_clock_ms
from mirrorsim.broker.txn.cluster_view import BrokerTxnCluster
from mirrorsim.broker.txn.coordinator import TransactionCoordinator, TxnCoordinatorConfig
from mirrorsim.broker.txn.markers import MarkerWriter
from mirrorsim.broker.txn.pending_offsets import PendingTxnOffsets
from mirrorsim.broker.txn.store import TxnStore


class TransactionService:
    def __init__(self, broker: Any) -> None:
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
