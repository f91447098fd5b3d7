"""The clusters of one drill: brokers in this process, or one OS process per broker.

In process there is no SIGKILL: a killed broker stops without a controlled shutdown, so
its leaderships are not handed over first and the controller re-elects only once it sees
the broker gone. Its log stays on disk as written, and a restart opens the same data
directory (recovery runs as after a crash). A restarted broker binds the port it had
(ports below the kernel's ephemeral range, so no client connection takes it meanwhile),
so mirrors that name it in ``bootstrap.servers`` reach it again, as they would a host
that comes back.

With ``mode: processes`` each broker is a ``mirrorsim.broker.process`` (see
``ProcessCluster``): a kill is a real SIGKILL, so nothing of the broker runs after it,
not even the unregistration (the controller sees it gone when its heartbeat expires),
and whatever its page cache held is what recovery finds. A broker keeps its port across
restarts. The drill inspects such a cluster only over the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path

from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.broker.ports import restartable_base
from mirrorsim.broker.server import Broker
from mirrorsim.broker.supervisor import ProcessCluster
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import IsolationLevel, OffsetSpec, TopicPartition
from mirrorsim.drills.scenario import ClusterDef
from mirrorsim.protocol.errors import KafkaError
from mirrorsim.protocol.records import RawBatch
from mirrorsim.verify.live_fetch import RangeFetcher
from mirrorsim.verify.live_partitions import OffsetRange

# An admin that gives up quickly: drills poll, and a dead cluster must not stall a sample.
FAST_ADMIN = {"default.api.timeout.ms": "5000", "request.timeout.ms": "3000"}


@dataclass(frozen=True, slots=True)
class LogView:
    """One partition's log as a drill inspects it: its batches, log end and size."""

    batches: tuple[RawBatch, ...]
    log_end_offset: int
    size_in_bytes: int


class DrillCluster(ABC):
    kill_kind = "abrupt in-process stop"

    def __init__(self, definition: ClusterDef, data_dir: Path) -> None:
        self.definition = definition
        self.spec = ClusterSpec(
            name=definition.name,
            data_dir=data_dir / definition.name,
            brokers=definition.brokers,
            port=0,
            configs=dict(definition.configs),
        )

    @staticmethod
    def create(definition: ClusterDef, data_dir: Path) -> DrillCluster:
        if definition.mode == "processes":
            return ProcessDrillCluster(definition, data_dir)
        return InProcessCluster(definition, data_dir)

    @property
    def name(self) -> str:
        return self.definition.name

    def broker_data_dir(self, broker_id: int) -> Path:
        return self.spec.data_dir / f"broker-{broker_id}"

    @property
    @abstractmethod
    def running(self) -> bool: ...

    @property
    @abstractmethod
    def bootstrap(self) -> str: ...

    @property
    def in_process_brokers(self) -> list[Broker]:
        """The running brokers whose components the drill can reach into (none for
        processes)."""
        return []

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    @abstractmethod
    async def kill(self) -> None:
        """Stop every broker at once, none handing leadership to another."""

    async def restart(self) -> None:
        for broker_id in range(1, self.spec.brokers + 1):
            if not self.is_running(broker_id):
                await self.start_broker(broker_id)

    @abstractmethod
    def is_running(self, broker_id: int) -> bool: ...

    @abstractmethod
    async def kill_broker(self, broker_id: int) -> None: ...

    @abstractmethod
    async def stop_broker(self, broker_id: int) -> None: ...

    @abstractmethod
    async def start_broker(self, broker_id: int) -> None: ...

    @abstractmethod
    async def log_view(self, topic: str, partition: int) -> LogView:
        """The partition leader's log."""

    @contextlib.asynccontextmanager
    async def admin(self) -> AsyncIterator[Admin]:
        async with Admin(
            bootstrap=self.bootstrap, config=FAST_ADMIN, client_id="mirrorsim-drill"
        ) as admin:
            yield admin


class InProcessCluster(DrillCluster):
    def __init__(self, definition: ClusterDef, data_dir: Path) -> None:
        super().__init__(definition, data_dir)
        self.spec = replace(self.spec, port=restartable_base(definition.brokers, self.spec.host))
        self.runner = ClusterRunner(self.spec)

    @property
    def running(self) -> bool:
        return bool(self.runner.brokers)

    @property
    def bootstrap(self) -> str:
        return self.runner.bootstrap

    @property
    def in_process_brokers(self) -> list[Broker]:
        return list(self.runner.brokers)

    def broker(self, broker_id: int) -> Broker:
        for broker in self.runner.brokers:
            if broker.broker_id == broker_id:
                return broker
        raise KeyError(f"cluster {self.name} has no running broker {broker_id}")

    def is_running(self, broker_id: int) -> bool:
        return any(b.broker_id == broker_id for b in self.runner.brokers)

    async def start(self) -> None:
        await self.runner.start()

    async def stop(self) -> None:
        await self.runner.stop()

    async def kill(self) -> None:
        while self.runner.brokers:
            await self.kill_broker(self.runner.brokers[-1].broker_id)

    async def kill_broker(self, broker_id: int) -> None:
        """Stop ``broker_id`` as a crash would: no controlled shutdown, and no answer to
        a request it holds. A drained follower fetch parked at this leader would hand
        the follower the leader's last writes as it goes, which a killed process never
        does."""
        broker = self.broker(broker_id)
        self.runner.brokers.remove(broker)
        broker.static_configs = {
            **broker.static_configs,
            "controlled.shutdown.enable": "false",
            "shutdown.drain.timeout.ms": "0",
        }
        await broker.stop()

    async def stop_broker(self, broker_id: int) -> None:
        broker = self.broker(broker_id)
        self.runner.brokers.remove(broker)
        await broker.stop()

    async def start_broker(self, broker_id: int) -> None:
        broker = Broker(
            broker_id=broker_id,
            host=self.spec.host,
            port=self.spec.broker_port(broker_id),
            data_dir=self.broker_data_dir(broker_id),
            metadata_url=self.spec.effective_metadata_url,
            configs=self.spec.configs,
        )
        await broker.start()
        self.runner.brokers.append(broker)
        self.runner.brokers.sort(key=lambda b: b.broker_id)

    async def log_view(self, topic: str, partition: int) -> LogView:
        for broker in self.runner.brokers:
            try:
                replica = broker.replica_manager.partition(topic, partition)
            except KafkaError:
                continue
            if replica.is_leader:
                log = replica.log
                return LogView(
                    tuple(log.batches()), int(log.log_end_offset), int(log.size_in_bytes)
                )
        raise KeyError(f"cluster {self.name}: no log for {topic}-{partition}")


class ProcessDrillCluster(DrillCluster):
    kill_kind = "SIGKILL"

    def __init__(self, definition: ClusterDef, data_dir: Path) -> None:
        super().__init__(definition, data_dir)
        self.processes = ProcessCluster(self.spec)

    @property
    def running(self) -> bool:
        return any(b.running for b in self.processes.brokers.values())

    @property
    def bootstrap(self) -> str:
        """The running brokers (all of them while none runs: clients then fail to connect
        rather than refuse an empty list)."""
        brokers = self.processes.brokers.values()
        running = [b for b in brokers if b.running] or list(brokers)
        return ",".join(f"{self.spec.host}:{b.port}" for b in running)

    def is_running(self, broker_id: int) -> bool:
        broker = self.processes.brokers.get(broker_id)
        return broker is not None and broker.running

    async def start(self) -> None:
        await self.processes.start()

    async def stop(self) -> None:
        await self.processes.stop()

    async def kill(self) -> None:
        for broker_id in sorted(self.processes.brokers, reverse=True):
            if self.is_running(broker_id):
                await self.kill_broker(broker_id)

    async def kill_broker(self, broker_id: int) -> None:
        await self.processes.kill(broker_id, signal.SIGKILL)

    async def stop_broker(self, broker_id: int) -> None:
        await self.processes.kill(broker_id, signal.SIGTERM)

    async def start_broker(self, broker_id: int) -> None:
        await self.processes.restart(broker_id)

    async def freeze_broker(self, broker_id: int, seconds: float) -> None:
        """SIGSTOP the broker for ``seconds``, then SIGCONT: a process pause (a long GC,
        a stalled VM) during which its sessions and leases run out."""
        process = self.processes.brokers[broker_id].process
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGSTOP)
        try:
            await asyncio.sleep(seconds)  # the fault's duration, not a synchronization
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGCONT)

    async def log_view(self, topic: str, partition: int) -> LogView:
        """Read from the leader like a consumer: its log up to the high watermark, which
        is all of it once the followers have caught up."""
        tp = TopicPartition(topic, partition)
        async with self.admin() as admin:
            start = await admin.list_offsets({tp: OffsetSpec.EARLIEST})
            end = await admin.list_offsets({tp: OffsetSpec.LATEST})
            log_end = end[tp].offset
            fetcher = RangeFetcher(
                admin,
                OffsetRange(topic, partition, start[tp].offset, log_end, overlapping=True),
                IsolationLevel.READ_UNCOMMITTED,
            )
            batches: list[RawBatch] = []
            while not fetcher.done:
                batches += await fetcher.next_batches()
        return LogView(tuple(batches), log_end, sum(b.size for b in batches))
