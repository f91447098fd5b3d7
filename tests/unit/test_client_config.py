"""Kafka client property names → connection settings."""

from __future__ import annotations

import pytest

from mirrorsim.client.cluster import parse_bootstrap
from mirrorsim.client.config import ClientConfig


def test_defaults_are_kafkas() -> None:
    config = ClientConfig.from_properties({})
    assert config.security_protocol == "PLAINTEXT"
    assert config.sasl is None and config.ssl_context is None
    assert config.request_timeout_ms == 30000


def test_sasl_plaintext_with_jaas() -> None:
    config = ClientConfig.from_properties(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": 'ScramLoginModule required username="u" password="p";',
            "request.timeout.ms": "500",
        }
    )
    assert config.sasl is not None
    assert (config.sasl.mechanism, config.sasl.username, config.sasl.password) == (
        "SCRAM-SHA-512",
        "u",
        "p",
    )
    assert config.request_timeout_ms == 500


def test_sasl_username_and_password_properties() -> None:
    config = ClientConfig.from_properties(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "u",
            "sasl.password": "p",
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert config.sasl is not None and config.sasl.username == "u"
    assert config.ssl_context is not None
    assert config.ssl_context.check_hostname is False


@pytest.mark.parametrize(
    "props",
    [
        {"security.protocol": "CARRIER_PIGEON"},
        {"request.timeout.ms": "soon"},
        {"retry.backoff.ms": "-1"},
    ],
)
def test_bad_values_are_rejected(props: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        ClientConfig.from_properties(props)


def test_bootstrap_parsing() -> None:
    assert parse_bootstrap("a:1, b:2,[::1]:3") == [("a", 1), ("b", 2), ("::1", 3)]
    with pytest.raises(ValueError):
        parse_bootstrap("no-port")
    with pytest.raises(ValueError):
        parse_bootstrap(" , ")
