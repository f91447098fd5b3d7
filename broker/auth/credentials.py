"""SCRAM credentials in the metadata store (Kafka keeps them in the metadata log).

Every broker of the cluster reads the same table, so a user created through any broker
(AlterUserScramCredentials) can authenticate on all of them.
"""

from __future__ import annotations

import base64

from sqlalchemy import and_, delete, select

from mirrorsim.broker.auth.scram import ScramCredential
from mirrorsim.broker.metadata import schema
from mirrorsim.broker.metadata.store import MetadataStore, transaction


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def upsert_scram_credential(
    store: MetadataStore, username: str, mechanism: str, credential: ScramCredential
) -> None:
    table = schema.scram_credentials
    with transaction(store.engine) as conn:
        conn.execute(
            delete(table).where(and_(table.c.username == username, table.c.mechanism == mechanism))
        )
        conn.execute(
            table.insert().values(
                username=username,
                mechanism=mechanism,
                salt=_b64(credential.salt),
                stored_key=_b64(credential.stored_key),
                server_key=_b64(credential.server_key),
                iterations=credential.iterations,
            )
        )


def delete_scram_credential(store: MetadataStore, username: str, mechanism: str) -> bool:
    """Whether a credential existed (Kafka answers RESOURCE_NOT_FOUND otherwise)."""
    table = schema.scram_credentials
    with transaction(store.engine) as conn:
        result = conn.execute(
            delete(table).where(and_(table.c.username == username, table.c.mechanism == mechanism))
        )
        return bool(result.rowcount)


def scram_credential(store: MetadataStore, username: str, mechanism: str) -> ScramCredential | None:
    table = schema.scram_credentials
    with transaction(store.engine) as conn:
        row = conn.execute(
            select(table).where(and_(table.c.username == username, table.c.mechanism == mechanism))
        ).first()
    if row is None:
        return None
    return ScramCredential(
        base64.b64decode(row.salt),
        base64.b64decode(row.stored_key),
        base64.b64decode(row.server_key),
        int(row.iterations),
    )


def scram_users(store: MetadataStore) -> dict[str, list[tuple[str, int]]]:
    """username -> [(mechanism, iterations)], for DescribeUserScramCredentials."""
    table = schema.scram_credentials
    users: dict[str, list[tuple[str, int]]] = {}
    with transaction(store.engine) as conn:
        for row in conn.execute(select(table).order_by(table.c.username, table.c.mechanism)):
            users.setdefault(row.username, []).append((row.mechanism, int(row.iterations)))
    return users
