"""Kafka client configuration names → the settings the connection layer needs.

Operators hand the same property files to our tools as to Kafka's, so the names are
Kafka's (``security.protocol``, ``sasl.jaas.config``, ``ssl.truststore.location``...).
librdkafka's PEM names (``ssl.ca.location``, ``ssl.certificate.location``,
``ssl.key.location``) are accepted too. Unknown names are ignored, as Kafka does.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass

from mirrorsim.client.sasl import SaslSettings, credentials_from_jaas

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True, slots=True)
class ClientConfig:
    security_protocol: str = "PLAINTEXT"
    sasl: SaslSettings | None = None
    ssl_context: ssl.SSLContext | None = None
    request_timeout_ms: int = 30000
    default_api_timeout_ms: int = 60000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1000

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ClientConfig:
        protocol = props.get("security.protocol", "PLAINTEXT").upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security.protocol {protocol!r} is not one of {SECURITY_PROTOCOLS}")
        return cls(
            security_protocol=protocol,
            sasl=_sasl_settings(props) if protocol.startswith("SASL_") else None,
            ssl_context=_ssl_context(props) if protocol.endswith("SSL") else None,
            request_timeout_ms=_int(props, "request.timeout.ms", 30000),
            default_api_timeout_ms=_int(props, "default.api.timeout.ms", 60000),
            retry_backoff_ms=_int(props, "retry.backoff.ms", 100),
            retry_backoff_max_ms=_int(props, "retry.backoff.max.ms", 1000),
            reconnect_backoff_ms=_int(props, "reconnect.backoff.ms", 50),
            reconnect_backoff_max_ms=_int(props, "reconnect.backoff.max.ms", 1000),
        )


def _int(props: Mapping[str, str], name: str, default: int) -> int:
    raw = props.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")
    return value


def _sasl_settings(props: Mapping[str, str]) -> SaslSettings:
    mechanism = props.get("sasl.mechanism", "GSSAPI").upper()
    jaas = props.get("sasl.jaas.config")
    if jaas is not None:
        username, password = credentials_from_jaas(jaas)
    else:
        username = props.get("sasl.username", "")
        password = props.get("sasl.password", "")
    return SaslSettings(mechanism, username, password)


def _ssl_context(props: Mapping[str, str]) -> ssl.SSLContext:
    """Client TLS from PEM files (Kafka's ``ssl.truststore.type=PEM`` or librdkafka's names)."""
    cafile = props.get("ssl.truststore.location") or props.get("ssl.ca.location")
    context = ssl.create_default_context(cafile=cafile)
    certfile = props.get("ssl.keystore.location") or props.get("ssl.certificate.location")
    if certfile:
        context.load_cert_chain(
            certfile,
            keyfile=props.get("ssl.key.location"),
            password=props.get("ssl.key.password") or props.get("ssl.keystore.password"),
        )
    if props.get("ssl.endpoint.identification.algorithm", "https") == "":
        context.check_hostname = False
    return context
