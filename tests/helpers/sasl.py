"""SASL/PLAIN clusters and client configs for authorization tests."""

from __future__ import annotations

from typing import Any

SECURED = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.users": "admin:admin-secret,alice:alice-secret",
    "authorizer.class.name": "mirrorsim.AclAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
    "mirror.topic.num.partitions": 3,
    "mirror.fetch.max.wait.ms": 50,
    "default.replication.factor": 1,
    "metadata.refresh.interval.ms": 100,
}


def sasl(user: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": f"{user}-secret",
        "default.api.timeout.ms": "3000",
    }


def sasl_address(broker: Any) -> str:
    """One broker's SASL_PLAINTEXT listener."""
    return f"127.0.0.1:{broker.server.endpoints()['SASL_PLAINTEXT'][1]}"


def sasl_bootstrap(cluster: Any) -> str:
    """Every broker's SASL_PLAINTEXT listener, as a bootstrap list."""
    return ",".join(sasl_address(b) for b in cluster.brokers)
