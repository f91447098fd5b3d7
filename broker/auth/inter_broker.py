"""The client settings every internal client uses to dial the inter-broker listener.

Follower fetchers, transaction markers, mirror-state RPCs and the mirror metadata
manager's destination clients all connect to the registered (inter-broker) endpoint of
some broker of this cluster, so they share one ``ClientConfig`` built once at broker
construction, the way Kafka derives its inter-broker client from the broker config:

- the protocol is the inter-broker listener's (``inter.broker.listener.name`` or
  ``security.inter.broker.protocol``);
- SASL uses ``sasl.mechanism.inter.broker.protocol`` with the username and password of
  ``listener.name.<listener>.<mechanism>.sasl.jaas.config``;
- TLS trusts ``ssl.truststore.location`` and presents the broker's own certificate
  (``ssl.keystore.location``, ``ssl.key.location``) so an mTLS listener accepts it.

The receiving broker sees the authenticated principal (``User:<username>`` or the
certificate subject), which ``super.users`` must list when an authorizer is on.
Invalid or missing settings raise ``ConfigError`` before the broker starts.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from typing import Any

from mirrorsim.broker.config import ConfigError, listener_jaas_config_name
from mirrorsim.broker.network.listener_spec import ListenerSpec
from mirrorsim.client.config import ClientConfig
from mirrorsim.client.sasl import SaslSettings, credentials_from_jaas

ConfigLookup = Callable[[str], Any]


def inter_broker_client_config(
    config: ConfigLookup, static_configs: Mapping[str, str], listener: ListenerSpec
) -> ClientConfig:
    """The settings internal clients use on ``listener``; raises ConfigError."""
    protocol = listener.protocol
    return ClientConfig(
        security_protocol=protocol.value,
        sasl=_sasl_settings(config, static_configs, listener) if protocol.uses_sasl else None,
        ssl_context=_client_ssl_context(config) if protocol.uses_tls else None,
    )


def _sasl_settings(
    config: ConfigLookup, static_configs: Mapping[str, str], listener: ListenerSpec
) -> SaslSettings:
    mechanism = str(config("sasl.mechanism.inter.broker.protocol"))
    enabled = list(config("sasl.enabled.mechanisms"))
    if mechanism not in enabled:
        raise ConfigError(
            f"sasl.mechanism.inter.broker.protocol {mechanism} must be included in "
            f"sasl.enabled.mechanisms ({','.join(enabled)}) when SASL is used for "
            "inter-broker communication"
        )
    name = listener_jaas_config_name(listener.name, mechanism)
    jaas = static_configs.get(name)
    if not jaas:
        raise ConfigError(
            f"The SASL inter-broker listener {listener.name} needs {name} with the "
            'broker\'s username="..." password="..."'
        )
    try:
        username, password = credentials_from_jaas(jaas)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    return SaslSettings(mechanism, username, password)


def _client_ssl_context(config: ConfigLookup) -> ssl.SSLContext:
    """Trust the cluster's CA; present the broker's own certificate for mTLS listeners."""
    truststore = config("ssl.truststore.location") or None
    keystore = config("ssl.keystore.location")
    try:
        context = ssl.create_default_context(cafile=truststore)
        if keystore:
            context.load_cert_chain(
                keystore, config("ssl.key.location") or None, config("ssl.key.password") or None
            )
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"Inter-broker TLS client settings are unusable: {exc}") from None
    if config("ssl.endpoint.identification.algorithm") == "":
        context.check_hostname = False
    return context
