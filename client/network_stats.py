"""What one client's connections carried, as Kafka's client ``*-metrics`` group counts it.

A ``ClusterClient`` hands one ``NetworkStats`` to every connection it opens, so the totals
cover bootstrap, metadata and per-broker connections alike; a mirror fetcher owns its
client, which makes these its ``mirror-broker-…-fetcher-…-mirror-…-metrics``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class NetworkStats:
    connections_created: int = 0
    connections_closed: int = 0
    requests: int = 0
    responses: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0

    @property
    def connection_count(self) -> int:
        """Connections open now."""
        return self.connections_created - self.connections_closed
