"""The inter-broker client settings a broker derives from its config, and the configs it
refuses before it starts."""

from __future__ import annotations

import re
import ssl
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorsim.broker.auth.inter_broker import inter_broker_client_config
from mirrorsim.broker.config import (
    BrokerConfigLayers,
    ConfigError,
    effective_broker_config,
    normalize_static_configs,
)
from mirrorsim.broker.handlers.sasl import jaas_plain_users
from mirrorsim.broker.network.listener_spec import (
    inter_broker_listener,
    parse_listeners,
    parse_protocol_map,
)
from mirrorsim.broker.server import Broker

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="broker" password="broker-secret" user_broker="broker-secret";'
)
SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="broker" password="scram-secret";'
)
SASL_INTERNAL = {
    "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
    "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,EXTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
}


def client_config(configs: dict[str, Any]) -> Any:
    static = normalize_static_configs(configs)

    def config(name: str) -> Any:
        return effective_broker_config(BrokerConfigLayers(static=static), name)

    specs = parse_listeners(
        config("listeners"),
        parse_protocol_map(config("listener.security.protocol.map")),
        default_host="127.0.0.1",
        default_port=0,
    )
    listener = inter_broker_listener(
        specs, config("inter.broker.listener.name"), config("security.inter.broker.protocol")
    )
    return inter_broker_client_config(config, static, listener)


def test_a_plaintext_inter_broker_listener_needs_no_credentials() -> None:
    settings = client_config({})
    assert (settings.security_protocol, settings.sasl, settings.ssl_context) == (
        "PLAINTEXT",
        None,
        None,
    )


def test_sasl_credentials_come_from_the_listener_prefixed_jaas_config() -> None:
    settings = client_config(
        {**SASL_INTERNAL, "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS}
    )
    assert settings.security_protocol == "SASL_PLAINTEXT"
    assert settings.sasl is not None
    assert (settings.sasl.mechanism, settings.sasl.username, settings.sasl.password) == (
        "PLAIN",
        "broker",
        "broker-secret",
    )


def test_the_inter_broker_mechanism_picks_its_own_jaas_config() -> None:
    settings = client_config(
        {
            **SASL_INTERNAL,
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.internal.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        }
    )
    assert settings.sasl is not None
    assert (settings.sasl.mechanism, settings.sasl.password) == ("SCRAM-SHA-512", "scram-secret")


def test_a_sasl_inter_broker_listener_without_credentials_is_refused() -> None:
    with pytest.raises(ConfigError) as refused:
        client_config(SASL_INTERNAL)
    message = str(refused.value)
    assert "\n" not in message
    assert "listener.name.internal.plain.sasl.jaas.config" in message


def test_a_jaas_config_without_a_password_is_refused() -> None:
    with pytest.raises(ConfigError, match="no password option"):
        client_config(
            {
                **SASL_INTERNAL,
                "listener.name.internal.plain.sasl.jaas.config": 'x required username="b";',
            }
        )


def test_the_inter_broker_mechanism_must_be_enabled() -> None:
    with pytest.raises(ConfigError, match=re.escape("must be included in sasl.enabled.mechanisms")):
        client_config(
            {
                **SASL_INTERNAL,
                "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS,
            }
        )


def test_security_inter_broker_protocol_names_the_listener() -> None:
    settings = client_config(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        }
    )
    assert settings.security_protocol == "SASL_PLAINTEXT"


def test_both_ways_of_naming_the_inter_broker_listener_are_refused() -> None:
    with pytest.raises(ConfigError, match=re.escape("Only one of inter.broker.listener.name")):
        client_config({**SASL_INTERNAL, "security.inter.broker.protocol": "PLAINTEXT"})


def test_only_lower_case_listener_prefixed_jaas_names_are_broker_configs() -> None:
    with pytest.raises(ConfigError, match="Unknown broker config name"):
        normalize_static_configs({"listener.name.INTERNAL.plain.sasl.jaas.config": PLAIN_JAAS})
    with pytest.raises(ConfigError, match="Unknown broker config name"):
        normalize_static_configs({"listener.name.internal.gssapi.sasl.jaas.config": PLAIN_JAAS})


def test_an_unreadable_keystore_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Inter-broker TLS client settings are unusable"):
        client_config(
            {
                "listeners": "SSL://127.0.0.1:0",
                "ssl.keystore.location": str(tmp_path / "missing.pem"),
            }
        )


def test_tls_without_host_name_checks_when_the_algorithm_is_empty(tmp_path: Path) -> None:
    settings = client_config(
        {"listeners": "SSL://127.0.0.1:0", "ssl.endpoint.identification.algorithm": ""}
    )
    assert isinstance(settings.ssl_context, ssl.SSLContext)
    assert settings.ssl_context.check_hostname is False


def test_the_broker_refuses_to_start_without_inter_broker_credentials(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=re.escape("needs listener.name.internal.plain.sasl.jaas.config")
    ):
        Broker(
            broker_id=1,
            host="127.0.0.1",
            port=0,
            data_dir=tmp_path,
            metadata_url=f"sqlite:///{tmp_path / 'metadata.db'}",
            configs=SASL_INTERNAL,
        )


_NAMES = st.from_regex(r"[A-Za-z0-9]{1,12}", fullmatch=True)
_PASSWORDS = st.text(
    st.characters(codec="utf-8", exclude_characters='"\\', exclude_categories=("Cs", "Cc")),
    max_size=20,
)


@given(st.dictionaries(_NAMES, _PASSWORDS, max_size=5))
def test_jaas_user_options_are_the_plain_users(users: dict[str, str]) -> None:
    options = " ".join(f'user_{name}="{password}"' for name, password in users.items())
    jaas = f'PlainLoginModule required username="broker" password="x" {options};'
    assert jaas_plain_users(jaas) == users
