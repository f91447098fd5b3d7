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

    [cluster.kafka]
    server_properties = "config/server.properties"   # a Kafka broker's own file

Brokers of one cluster share only the metadata database; each has its own listener and
its own data directory (``<data_dir>/broker-<id>``).

``server_properties`` names a Kafka ``server.properties`` (relative to the TOML file):
its ``node.id`` is the first broker id, ``log.dirs`` the data directory, its listeners
the first broker's (broker k adds k - 1 to every listener port) and its other settings the
static broker configs; keys of the TOML table, then its ``config`` table, override it.
Names Kafka defines that mean nothing here, and names nobody defines, are not errors:
``ClusterSpec.report()`` lists them in one line each (see ``server_properties.py``).
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

from mirrorsim.broker.config import ConfigError
from mirrorsim.broker.properties_file import load_properties
from mirrorsim.broker.server import Broker
from mirrorsim.broker.server_properties import BrokerSettings, broker_settings

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

_CLUSTER_KEYS = {
    "brokers",
    "host",
    "port",
    "data_dir",
    "metadata_url",
    "cluster_id",
    "config",
    "server_properties",
}
_PER_BROKER_PORTS = ("listeners", "advertised.listeners")


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
    first_broker_id: int = 1
    """Kafka's ``node.id`` of the first broker; 0 is as good an id as any."""
    ignored_configs: tuple[str, ...] = ()
    unknown_configs: tuple[str, ...] = ()

    @property
    def effective_metadata_url(self) -> str:
        return self.metadata_url or f"sqlite:///{self.data_dir / 'metadata.db'}"

    @property
    def broker_ids(self) -> range:
        return range(self.first_broker_id, self.first_broker_id + self.brokers)

    def broker_port(self, broker_id: int) -> int:
        return 0 if self.port == 0 else self.port + broker_id - self.first_broker_id

    def broker_configs(self, broker_id: int) -> dict[str, Any]:
        """The static configs of one broker: explicit listener ports move up by the
        broker's position in the cluster, so one file can describe every broker."""
        step = broker_id - self.first_broker_id
        configs = dict(self.configs)
        for name in _PER_BROKER_PORTS:
            if name in configs and step:
                configs[name] = _shift_ports(str(configs[name]), step)
        return configs

    def report(self) -> list[str]:
        """One line each for the ignored and the unknown config names, if any."""
        settings = BrokerSettings({}, ignored=self.ignored_configs, unknown=self.unknown_configs)
        return [f"cluster {self.name}: {line}" for line in settings.report()]


def _shift_ports(listeners: str, step: int) -> str:
    entries = []
    for entry in (e.strip() for e in listeners.split(",") if e.strip()):
        address, _, port = entry.rpartition(":")
        entries.append(f"{address}:{int(port) + step}" if port.isdigit() and port != "0" else entry)
    return ",".join(entries)


def parse_cluster_specs(text: str, base_dir: Path | None = None) -> list[ClusterSpec]:
    """Cluster specs from the TOML text; raises ConfigError with the offending key.
    ``server_properties`` paths are relative to ``base_dir`` (the TOML file's folder)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}") from None
    clusters = document.get("cluster")
    if not isinstance(clusters, dict) or not clusters:
        raise ConfigError("the config defines no [cluster.<name>] table")
    return [_spec(name, table, base_dir or Path.cwd()) for name, table in clusters.items()]


def cluster_spec_from_properties(name: str, path: Path) -> ClusterSpec:
    """A one-broker cluster from a Kafka ``server.properties``, as ``mirrorsim up`` runs it."""
    return _spec(name, {"server_properties": str(path)}, Path.cwd())


def _spec(name: str, table: Any, base_dir: Path) -> ClusterSpec:
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
    if not isinstance(configs, dict):
        raise ConfigError(f"cluster.{name}.config must be a table")
    settings = broker_settings({**_server_properties(name, table, base_dir), **configs})
    return ClusterSpec(
        name=name,
        data_dir=Path(table.get("data_dir", settings.data_dir or f"./mirrorsim-data/{name}")),
        brokers=brokers,
        host=str(table.get("host", "127.0.0.1")),
        port=port,
        metadata_url=table.get("metadata_url"),
        cluster_id=table.get("cluster_id"),
        configs=settings.configs,
        first_broker_id=1 if settings.first_broker_id is None else settings.first_broker_id,
        ignored_configs=settings.ignored,
        unknown_configs=settings.unknown,
    )


def _server_properties(name: str, table: dict[str, Any], base_dir: Path) -> dict[str, str]:
    path = table.get("server_properties")
    if path is None:
        return {}
    if not isinstance(path, str):
        raise ConfigError(f"cluster.{name}.server_properties must be a path")
    try:
        return load_properties(base_dir / path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cluster.{name}.server_properties: {exc}") from None


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
        """Start the brokers in id order (the first one creates the cluster id)."""
        self.spec.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            for broker_id in self.spec.broker_ids:
                broker = Broker(
                    broker_id=broker_id,
                    host=self.spec.host,
                    port=self.spec.broker_port(broker_id),
                    data_dir=self.spec.data_dir / f"broker-{broker_id}",
                    metadata_url=self.spec.effective_metadata_url,
                    cluster_id=self.spec.cluster_id,
                    configs=self.spec.broker_configs(broker_id),
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
