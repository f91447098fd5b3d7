"""A secured destination cluster and client properties files for the kafka-mirrors CLI."""

from __future__ import annotations

from pathlib import Path

USERS = {"admin": "admin-secret", "mirror-admin": "ma-secret", "monitor": "mon-secret"}


DESTINATION = {
    "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
    "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
    "sasl.users": ",".join(f"{user}:{password}" for user, password in USERS.items()),
    "authorizer.class.name": "mirrorsim.AclAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
}


def properties(directory: Path, user: str) -> Path:
    """A client properties file in Kafka's JAAS form, as an operator would write it."""
    path = directory / f"{user}.properties"
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{USERS[user]}";'
    )
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        f"sasl.jaas.config={jaas}\n"
        "default.api.timeout.ms=5000\n"
    )
    return path
