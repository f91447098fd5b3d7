"""Listener names, their security protocols and the parsing of ``listeners``.

Kept apart from the servers so that connections and handlers can name a listener
without importing the networking code.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mirrorsim.broker.config import ConfigError


class SecurityProtocol(enum.Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


class ListenerConfigError(ConfigError):
    """A ``listeners`` value Kafka would refuse at startup."""


@dataclass(frozen=True, slots=True)
class ListenerSpec:
    name: str
    protocol: SecurityProtocol
    host: str
    port: int


def parse_protocol_map(entries: list[str]) -> dict[str, SecurityProtocol]:
    mapping: dict[str, SecurityProtocol] = {}
    for entry in entries:
        name, sep, protocol = entry.partition(":")
        if not sep:
            raise ListenerConfigError(f"Invalid listener.security.protocol.map entry {entry!r}")
        try:
            mapping[name.strip().upper()] = SecurityProtocol(protocol.strip().upper())
        except ValueError:
            raise ListenerConfigError(f"Unknown security protocol {protocol!r}") from None
    return mapping


def parse_listeners(
    listeners: list[str] | None,
    protocol_map: dict[str, SecurityProtocol],
    *,
    default_host: str,
    default_port: int,
) -> list[ListenerSpec]:
    """``NAME://host:port`` entries; an empty host means ``default_host`` (Kafka: all
    interfaces; here the broker's host so the advertised endpoint is dialable)."""
    if not listeners:
        return [ListenerSpec("PLAINTEXT", SecurityProtocol.PLAINTEXT, default_host, default_port)]
    specs = []
    for entry in listeners:
        name, sep, address = entry.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ListenerConfigError(f"Invalid listener {entry!r}: expected NAME://host:port")
        name = name.upper()
        if name not in protocol_map:
            raise ListenerConfigError(
                f"No security protocol defined for listener {name} "
                "in listener.security.protocol.map"
            )
        specs.append(ListenerSpec(name, protocol_map[name], host or default_host, int(port)))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ListenerConfigError(f"Each listener must have a different name: {names}")
    return specs


def parse_advertised_listeners(
    advertised: list[str] | None, specs: list[ListenerSpec]
) -> dict[str, tuple[str, int]]:
    """``advertised.listeners``: listener name -> (host, port) told to clients, when it
    differs from the bound address. Port 0 means the bound port; every name must be a
    listener, as Kafka requires."""
    names = {s.name for s in specs}
    result: dict[str, tuple[str, int]] = {}
    for entry in advertised or []:
        name, sep, address = entry.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ListenerConfigError(
                f"Invalid advertised listener {entry!r}: expected NAME://host:port"
            )
        name = name.upper()
        if name not in names:
            raise ListenerConfigError(
                f"advertised.listeners listener names must be equal to or a subset of the "
                f"ones defined in listeners: {name} is not one of {sorted(names)}"
            )
        if host in ("", "0.0.0.0"):
            raise ListenerConfigError(f"advertised.listeners cannot use the address {host!r}")
        result[name] = (host, int(port))
    return result


def inter_broker_listener(
    specs: list[ListenerSpec], listener_name: str | None, security_protocol: str | None
) -> ListenerSpec:
    """Kafka's choice: ``inter.broker.listener.name``, or else the listener named after
    ``security.inter.broker.protocol``; setting both is refused. With neither, the first
    listener (Kafka would pick the one named PLAINTEXT; the first keeps a single custom
    listener working without extra settings)."""
    if listener_name and security_protocol:
        raise ListenerConfigError(
            "Only one of inter.broker.listener.name and security.inter.broker.protocol "
            "should be set"
        )
    wanted = (listener_name or security_protocol or specs[0].name).upper()
    for spec in specs:
        if spec.name == wanted:
            return spec
    setting = "inter.broker.listener.name" if listener_name else "security.inter.broker.protocol"
    raise ListenerConfigError(f"{setting} {wanted} is not one of the listeners")
