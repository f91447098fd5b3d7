"""The clusters of one drill, started in this process, with abrupt stops and restarts.

In process there is no SIGKILL: a killed broker stops without a controlled shutdown, so
its leaderships are not handed over first and the controller re-elects only once it sees
the broker gone. Its log stays on disk as written, and a restart opens the same data
directory (recovery runs as after a crash). Restarted brokers bind new free ports.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.broker.server import Broker
from mirrorsim.client import Admin
from mirrorsim.drills.scenario import ClusterDef
from mirrorsim.protocol.errors import KafkaError

# An admin that gives up quickly: drills poll, and a dead cluster must not stall a sample.
FAST_ADMIN = {"default.api.timeout.ms": "5000", "request.timeout.ms": "3000"}


class DrillCluster:
    def __init__(self, definition: ClusterDef, data_dir: Path) -> None:
        self.definition = definition
        self.runner = ClusterRunner(
            ClusterSpec(
                name=definition.name,
                data_dir=data_dir / definition.name,
                brokers=definition.brokers,
                port=0,
                configs=dict(definition.configs),
            )
        )

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def spec(self) -> ClusterSpec:
        return self.runner.spec

    @property
    def running(self) -> bool:
        return bool(self.runner.brokers)

    @property
    def bootstrap(self) -> str:
        return self.runner.bootstrap

    def broker(self, broker_id: int) -> Broker:
        for broker in self.runner.brokers:
            if broker.broker_id == broker_id:
                return broker
        raise KeyError(f"cluster {self.name} has no running broker {broker_id}")

    def broker_data_dir(self, broker_id: int) -> Path:
        return self.spec.data_dir / f"broker-{broker_id}"

    async def start(self) -> None:
        await self.runner.start()

    async def stop(self) -> None:
        await self.runner.stop()

    async def kill(self) -> None:
        """Stop every broker at once, none handing leadership to another."""
        while self.runner.brokers:
            await self.kill_broker(self.runner.brokers[-1].broker_id)

    async def restart(self) -> None:
        for broker_id in range(1, self.spec.brokers + 1):
            if all(b.broker_id != broker_id for b in self.runner.brokers):
                await self.start_broker(broker_id)

    async def kill_broker(self, broker_id: int) -> None:
        broker = self.broker(broker_id)
        self.runner.brokers.remove(broker)
        broker.static_configs = {**broker.static_configs, "controlled.shutdown.enable": "false"}
        await broker.stop()

    async def stop_broker(self, broker_id: int) -> None:
        broker = self.broker(broker_id)
        self.runner.brokers.remove(broker)
        await broker.stop()

    async def start_broker(self, broker_id: int) -> Broker:
        broker = Broker(
            broker_id=broker_id,
            host=self.spec.host,
            port=0,
            data_dir=self.broker_data_dir(broker_id),
            metadata_url=self.spec.effective_metadata_url,
            configs=self.spec.configs,
        )
        await broker.start()
        self.runner.brokers.append(broker)
        self.runner.brokers.sort(key=lambda b: b.broker_id)
        return broker

    @contextlib.asynccontextmanager
    async def admin(self) -> AsyncIterator[Admin]:
        async with Admin(
            bootstrap=self.bootstrap, config=FAST_ADMIN, client_id="mirrorsim-drill"
        ) as admin:
            yield admin

    def partition_log(self, topic: str, partition: int, broker_id: int | None = None) -> Any:
        """The log of the partition's leader here (or of ``broker_id``'s replica)."""
        for broker in self.runner.brokers:
            if broker_id is not None and broker.broker_id != broker_id:
                continue
            try:
                replica = broker.replica_manager.partition(topic, partition)
            except KafkaError:
                continue
            if broker_id is not None or replica.is_leader:
                return replica.log
        raise KeyError(f"cluster {self.name}: no log for {topic}-{partition}")
