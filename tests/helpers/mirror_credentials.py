"""A SASL-secured source cluster and the credentials a mirror uses to read it."""

from __future__ import annotations

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
