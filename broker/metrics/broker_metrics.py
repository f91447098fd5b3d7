"""One broker's metrics: a registry of its own (several brokers share a process in tests
and drills, so the global default registry would mix them) and its HTTP endpoint.

``metrics.port``: unset means the broker's port + 1000 (any free port when the broker's
own port is chosen at bind time, i.e. configured as 0); 0 disables the endpoint.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from mirrorsim.broker.metrics.http import MetricsEndpoint
from mirrorsim.broker.metrics.mirror import MirrorMetrics
from mirrorsim.broker.metrics.partition_health import PartitionHealthMetrics
from mirrorsim.broker.metrics.requests import RequestMetrics
from mirrorsim.broker.ports import METRICS_PORT_OFFSET


def metrics_port(configured: int | None, broker_port: int) -> int | None:
    """The port to bind (0: any free port), or None when the endpoint is disabled."""
    if configured == 0:
        return None
    if configured is not None:
        return configured
    return 0 if broker_port == 0 else broker_port + METRICS_PORT_OFFSET


class BrokerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = RequestMetrics(self.registry)
        self.mirror = MirrorMetrics(self.registry)
        self.partition_health = PartitionHealthMetrics(self.registry)
        self.endpoint = MetricsEndpoint(self.registry)

    @property
    def port(self) -> int | None:
        """The bound endpoint port, None while it is not serving."""
        return self.endpoint.port

    async def start_endpoint(self, host: str, port: int | None) -> None:
        if port is not None:
            await self.endpoint.start(host, port)

    async def stop_endpoint(self) -> None:
        await self.endpoint.stop()
