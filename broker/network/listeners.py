"""Kafka's ``listeners``: one TCP server per ``NAME://host:port``, each with its security
protocol from ``listener.security.protocol.map``.

Without ``listeners`` the broker has exactly one PLAINTEXT listener on the host and port
it was constructed with, so nothing changes for a broker that does not ask for security.
The inter-broker listener (``inter.broker.listener.name``, default the first one) is the
endpoint registered in the metadata store: the one other brokers and internal clients
dial. Every listener's endpoint (its ``advertised.listeners`` entry, if any) is advertised to
clients connected on that listener.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

from mirrorsim.broker.network.connection import ConnectionLimits, Dispatch
from mirrorsim.broker.network.listener_spec import (
    ListenerConfigError,
    ListenerSpec,
    inter_broker_listener,
    parse_advertised_listeners,
    parse_listeners,
    parse_protocol_map,
)
from mirrorsim.broker.network.server import KafkaServer

_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


def server_ssl_context(config: Callable[[str], Any]) -> ssl.SSLContext:
    """TLS server context from PEM files: ``ssl.keystore.location`` holds the certificate
    chain (and the key unless ``ssl.key.location`` names it); ``ssl.truststore.location``
    holds the CAs that client certificates must chain to."""
    keystore = config("ssl.keystore.location")
    if not keystore:
        raise ListenerConfigError("An SSL listener needs ssl.keystore.location (a PEM file)")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(
        keystore, config("ssl.key.location") or None, config("ssl.key.password") or None
    )
    context.verify_mode = _CLIENT_AUTH[config("ssl.client.auth")]
    truststore = config("ssl.truststore.location")
    if truststore:
        context.load_verify_locations(cafile=truststore)
    elif context.verify_mode != ssl.CERT_NONE:
        raise ListenerConfigError("ssl.client.auth needs ssl.truststore.location")
    return context


class Listeners:
    """Every listener's server behind the single-server interface the broker uses."""

    def __init__(
        self,
        servers: list[KafkaServer],
        inter_broker: str,
        advertised: dict[str, tuple[str, int]] | None = None,
    ) -> None:
        self._servers = servers
        self._inter_broker = next(s for s in servers if s.listener.name == inter_broker)
        self._advertised = advertised or {}

    @classmethod
    def from_config(
        cls,
        host: str,
        port: int,
        dispatch: Dispatch,
        limits: ConnectionLimits,
        config: Callable[[str], Any],
    ) -> Listeners:
        specs = parse_listeners(
            config("listeners"),
            parse_protocol_map(config("listener.security.protocol.map")),
            default_host=host,
            default_port=port,
        )
        inter_broker = inter_broker_listener(
            specs, config("inter.broker.listener.name"), config("security.inter.broker.protocol")
        ).name
        tls = server_ssl_context(config) if any(s.protocol.uses_tls for s in specs) else None
        servers = [
            KafkaServer(
                spec.host,
                spec.port,
                dispatch,
                limits,
                listener=spec,
                ssl_context=tls if spec.protocol.uses_tls else None,
            )
            for spec in specs
        ]
        return cls(
            servers, inter_broker, parse_advertised_listeners(config("advertised.listeners"), specs)
        )

    @property
    def host(self) -> str:
        return self._inter_broker.host

    @property
    def port(self) -> int:
        """The inter-broker listener's bound port: the one registered for this broker."""
        return self._inter_broker.port

    @property
    def inter_broker_listener(self) -> ListenerSpec:
        return self._inter_broker.listener

    @property
    def connection_count(self) -> int:
        return sum(s.connection_count for s in self._servers)

    @property
    def unsent_bytes(self) -> int:
        return sum(s.unsent_bytes for s in self._servers)

    def endpoints(self) -> dict[str, tuple[str, int]]:
        """Listener name -> the (host, port) clients are told: ``advertised.listeners``
        where it names the listener (port 0 there: the bound port), else the bound one."""
        return {s.listener.name: self._advertised_endpoint(s) for s in self._servers}

    def registered_endpoint(self) -> tuple[str, int]:
        """The inter-broker listener's advertised endpoint: the broker's registration."""
        return self._advertised_endpoint(self._inter_broker)

    def _advertised_endpoint(self, server: KafkaServer) -> tuple[str, int]:
        host, port = self._advertised.get(server.listener.name, (server.host, 0))
        return host, port or server.port

    async def start(self) -> None:
        started: list[KafkaServer] = []
        try:
            for server in self._servers:
                await server.start()
                started.append(server)
        except BaseException:
            for server in started:
                await server.stop(0)
            raise

    async def stop(self, drain_timeout_s: float) -> None:
        for server in self._servers:
            await server.stop(drain_timeout_s)
