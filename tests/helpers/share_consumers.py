"""Share consumers for tests that need a share group's members and durable share state:
confluent-kafka's ``ShareConsumer`` polling in its own thread (librdkafka's calls block,
and the broker answers on the test's event loop), acknowledging every record implicitly.

- ``ShareReader(bootstrap, group, topic)``: a member that reads until ``close()``, which
  also sends its last acknowledgements; ``seen()`` lists what it got as (partition, offset).
- ``await read_from_earliest(bootstrap, group)``: the group's ``share.auto.offset.reset``
  set to ``earliest`` (Kafka's default is ``latest``).
"""

from __future__ import annotations

import threading

from confluent_kafka import ShareConsumer

from mirrorsim.client import Admin, AlterConfigOp, ConfigResource, ConfigResourceType

SHARE_CONFIGS = {"group.share.heartbeat.interval.ms": 500}
"""Broker configs under which a share consumer joins and learns its assignment quickly."""
CLOSE_TIMEOUT_S = 60.0


class ShareReader:
    def __init__(self, bootstrap: str, group: str, topic: str, name: str = "reader") -> None:
        self.name = name
        self._seen: list[tuple[int, int]] = []
        self._errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._consumer = ShareConsumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name}
        )
        self._consumer.subscribe([topic])
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for message in self._consumer.poll(0.2):
                with self._lock:
                    if message.error() is not None:
                        self._errors.append(str(message.error()))
                    else:
                        self._seen.append((message.partition(), message.offset()))
        self._consumer.close()

    def seen(self) -> list[tuple[int, int]]:
        with self._lock:
            return list(self._seen)

    def errors(self) -> list[str]:
        with self._lock:
            return list(self._errors)

    def close(self) -> None:
        """Stop polling and leave the group; blocks until the consumer has closed."""
        self._stop.set()
        self._thread.join(CLOSE_TIMEOUT_S)
        assert not self._thread.is_alive(), f"{self.name} did not close"


async def read_from_earliest(bootstrap: str, group: str) -> None:
    async with Admin(bootstrap=bootstrap) as admin:
        resource = ConfigResource(ConfigResourceType.GROUP, group)
        setting = AlterConfigOp("share.auto.offset.reset", "earliest")
        (await admin.incremental_alter_configs({resource: [setting]})).all()
