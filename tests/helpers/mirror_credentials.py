"""A SASL-secured source cluster and the credentials a mirror uses to read it."""

from __future__ import annotations

from typing import Any

SECURED_SOURCE = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.users": "mirror:mirror-secret",
    "authorizer.class.name": "mirrorsim.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}


MIRROR_CREDENTIALS = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN",
    "sasl.username": "mirror",
    "sasl.password": "mirror-secret",
}


def sasl_bootstrap(cluster: Any) -> str:
    return f"127.0.0.1:{cluster.brokers[0].server.endpoints()['SASL_PLAINTEXT'][1]}"
