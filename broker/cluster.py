"""Named clusters of brokers running in this process, and the TOML that describes them.

The TOML format is the operator-facing one of ``mirrorsim up``::

    [cluster.primary]
    brokers = 3                 # broker ids 1..3
    host = "127.0.0.1"
    port = 9092                 # broker k listens on port + k - 1 (0: any free port)
    data_dir = "./mirrorsim-data/primary"
    metadata_url = "sqlite:///./mirrorsim-data/primary/metadata.db"

    [cluster.primary.config]
    "default.replication.factor" = 3

Brokers of one cluster share only the metadata database; each has its own listener and
its own data directory (``<data_dir>/broker-<id>``).
"""

from __future__ import annotations

import asyncio
import logging
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from mirrorsim.broker.config import ConfigError, normalize_static_configs
from mirrorsim.broker.server import Broker

log = logging.getLogger(__name__)

DEFAULT_CLUSTERS_TOML = """\
[cluster.primary]
brokers = 3
host = "127.0.0.1"
port = 9092
data_dir = "./mirrorsim-data/primary"
metadata_url = "sqlite:///./mirrorsim-data/primary/metadata.db"

[cluster.backup]
brokers = 3
host = "127.0.0.1"
port = 9192
data_dir = "./mirrorsim-data/backup"
metadata_url = "sqlite:///./mirrorsim-data/backup/metadata.db"
"""

_CLUSTER_KEYS = {"brokers", "host", "port", "data_dir", "metadata_url", "cluster_id", "config"}


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    name: str
    data_dir: Path
    brokers: int = 1
    host: str = "127.0.0.1"
    port: int = 0
    metadata_url: str | None = None
    cluster_id: str | None = None
    configs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def effective_metadata_url(self) -> str:
        return self.metadata_url or f"sqlite:///{self.data_dir / 'metadata.db'}"

    def broker_port(self, broker_id: int) -> int:
        return 0 if self.port == 0 else self.port + broker_id - 1


def parse_cluster_specs(text: str) -> list[ClusterSpec]:
    """Cluster specs from the TOML text; raises ConfigError with the offending key."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}") from None
    clusters = document.get("cluster")
    if not isinstance(clusters, dict) or not clusters:
        raise ConfigError("the config defines no [cluster.<name>] table")
    return [_spec(name, table) for name, table in clusters.items()]


def _spec(name: str, table: Any) -> ClusterSpec:
    if not isinstance(table, dict):
        raise ConfigError(f"cluster.{name} must be a table")
    unknown = sorted(set(table) - _CLUSTER_KEYS)
    if unknown:
        raise ConfigError(f"cluster.{name}: unknown key(s) {', '.join(unknown)}")
    brokers = table.get("brokers", 1)
    if not isinstance(brokers, int) or brokers < 1:
        raise ConfigError(f"cluster.{name}.brokers must be a positive integer")
    port = table.get("port", 0)
    if not isinstance(port, int) or not 0 <= port <= 65535 - brokers + 1:
        raise ConfigError(f"cluster.{name}.port must leave room for {brokers} broker port(s)")
    configs = table.get("config", {})
    normalize_static_configs(configs)
    return ClusterSpec(
        name=name,
        data_dir=Path(table.get("data_dir", f"./mirrorsim-data/{name}")),
        brokers=brokers,
        host=str(table.get("host", "127.0.0.1")),
        port=port,
        metadata_url=table.get("metadata_url"),
        cluster_id=table.get("cluster_id"),
        configs=configs,
    )


class ClusterRunner:
    """Start and stop every broker of one cluster in this process's event loop."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        self.brokers: list[Broker] = []

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    @property
    def cluster_id(self) -> str:
        return self.brokers[0].cluster_id

    async def start(self) -> None:
        """Start brokers 1..N in order (the first one creates the cluster id)."""
        self.spec.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            for broker_id in range(1, self.spec.brokers + 1):
                broker = Broker(
                    broker_id=broker_id,
                    host=self.spec.host,
                    port=self.spec.broker_port(broker_id),
                    data_dir=self.spec.data_dir / f"broker-{broker_id}",
                    metadata_url=self.spec.effective_metadata_url,
                    cluster_id=self.spec.cluster_id,
                    configs=self.spec.configs,
                )
                # its own task: the broker's log context stays out of the caller's
                await asyncio.create_task(broker.start())
                self.brokers.append(broker)
            await asyncio.gather(*(b.refresh_metadata() for b in self.brokers))
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        while self.brokers:
            broker = self.brokers.pop()
            try:
                await broker.stop()
            except Exception:
                log.exception(
                    "cluster %s: broker %d did not stop cleanly", self.name, broker.broker_id
                )

    async def __aenter__(self) -> ClusterRunner:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
