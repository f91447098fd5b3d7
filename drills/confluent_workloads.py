"""Consumer workloads aiokafka cannot run, through confluent-kafka (librdkafka): a KIP-848
member (`group.protocol=consumer`) and a KIP-932 share consumer. They keep the same
ledger as the aiokafka consumer (`AioConsumerWorkload`) and move the same way.

librdkafka's calls block, so each client gets a thread of its own (`BlockingClient`) and
the event loop awaits its calls, which run one at a time in call order: a share consumer
refuses calls that overlap, and a close queued behind a poll still in flight (the move
gave up on it) waits for that poll instead of racing it.

confluent-kafka is the `confluent` extra; a scenario that runs these workloads without it
fails at its first such step, naming the extra.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib
import logging
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from mirrorsim.client.admin_types import AlterConfigOp, ConfigResource, ConfigResourceType
from mirrorsim.drills.workloads import CLIENT_STOP_TIMEOUT_S, ConsumerWorkload

log = logging.getLogger(__name__)
T = TypeVar("T")

POLL_S = 0.2
MAX_RECORDS = 500
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
EXTRA_HINT = "pip install 'mirrorsim[confluent]'"


def confluent_kafka() -> ModuleType:
    """The confluent-kafka module, or a one-line error naming the extra."""
    try:
        return importlib.import_module("confluent_kafka")
    except ImportError:
        raise RuntimeError(
            f"this step runs a confluent-kafka client, which is not installed: {EXTRA_HINT}"
        ) from None


class BlockingClient:
    """A librdkafka client whose every call runs on its own single thread."""

    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=name)

    async def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._thread, functools.partial(function, *args, **kwargs)
        )

    async def stop(self) -> None:
        """Close the client (a consumer leaves its group, a share consumer commits what it
        acknowledged and releases the rest), then let the thread go."""
        try:
            await self.call(self.client.close)
        finally:
            self._thread.shutdown(wait=False)


class ConsumerProtocolWorkload(ConsumerWorkload[BlockingClient]):
    """A KIP-848 group member: the broker assigns, and the member commits after every poll
    (as the aiokafka consumer does), so a move re-delivers only what the synced offsets
    do not cover."""

    async def _connect(self, cluster: str) -> BlockingClient | None:
        kafka = confluent_kafka()
        spec = self.spec
        consumer = kafka.Consumer(
            {
                "bootstrap.servers": self.ctx.cluster(cluster).bootstrap,
                "group.id": spec.group,
                "group.protocol": "consumer",
                "auto.offset.reset": spec.auto_offset_reset,
                "isolation.level": spec.isolation_level,
                "enable.auto.commit": False,
                "client.id": f"drill-{spec.name}",
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        consumer.subscribe(list(spec.topics))
        return BlockingClient(consumer, f"drill-{spec.name}")

    async def _poll(self, client: BlockingClient, cluster: str) -> None:
        kafka = confluent_kafka()
        consumer = client.client
        messages = await client.call(consumer.consume, MAX_RECORDS, POLL_S)
        values = []
        for message in messages:
            if message.error() is not None:
                log.info("consumer %s on %s: %s", self.spec.name, cluster, message.error())
                continue
            values.append(
                self._saw(
                    cluster,
                    message.topic(),
                    message.partition(),
                    message.offset(),
                    message.value(),
                )
            )
        try:
            positions = await client.call(consumer.position, consumer.assignment())
            self.positions = {
                f"{tp.topic}-{tp.partition}": tp.offset for tp in positions if tp.offset >= 0
            }
            if values:
                await client.call(consumer.commit, asynchronous=False)
                self._done(values)
        except kafka.KafkaException as exc:
            log.info("consumer %s on %s: %s", self.spec.name, cluster, exc)


class ShareConsumerWorkload(ConsumerWorkload[BlockingClient]):
    """A share group member: each record of a poll is accepted and the acknowledgements
    are committed before the next poll, so at most one poll's records are in flight.
    ``auto_offset_reset`` is set as the group's ``share.auto.offset.reset`` on each
    cluster the member connects to (share consumers have no such client setting)."""

    async def _connect(self, cluster: str) -> BlockingClient | None:
        kafka = confluent_kafka()
        spec = self.spec
        try:
            async with self.ctx.cluster(cluster).admin() as admin:
                resource = ConfigResource(ConfigResourceType.GROUP, spec.group)
                reset = AlterConfigOp(SHARE_AUTO_OFFSET_RESET, spec.auto_offset_reset)
                (await admin.incremental_alter_configs({resource: [reset]})).all()
        except Exception as exc:
            log.info("share consumer %s cannot reach %s yet: %s", spec.name, cluster, exc)
            return None
        consumer = kafka.ShareConsumer(
            {
                "bootstrap.servers": self.ctx.cluster(cluster).bootstrap,
                "group.id": spec.group,
                "client.id": f"drill-{spec.name}",
                "share.acknowledgement.mode": "explicit",
            }
        )
        consumer.subscribe(list(spec.topics))
        return BlockingClient(consumer, f"drill-{spec.name}")

    async def _poll(self, client: BlockingClient, cluster: str) -> None:
        kafka = confluent_kafka()
        consumer = client.client
        try:
            messages = await client.call(consumer.poll, POLL_S)
        except kafka.KafkaException as exc:
            log.info("share consumer %s on %s: %s", self.spec.name, cluster, exc)
            return
        records, values = [], []
        for message in messages:
            if message.error() is not None:
                log.info("share consumer %s on %s: %s", self.spec.name, cluster, message.error())
                continue
            records.append(message)
            values.append(
                self._saw(
                    cluster, message.topic(), message.partition(), message.offset(), message.value()
                )
            )
        if not records:
            return

        def settle() -> None:
            for message in records:
                consumer.acknowledge(message, kafka.AcknowledgeType.ACCEPT)
            consumer.commit_sync(CLIENT_STOP_TIMEOUT_S)

        try:
            await client.call(settle)
        except kafka.KafkaException as exc:
            log.info("share consumer %s on %s: %s", self.spec.name, cluster, exc)
            return
        self._done(values)
