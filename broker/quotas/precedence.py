"""Which configured quota applies to a (user, client-id), in Kafka's order of precedence.

The first entity in ``PRECEDENCE`` that holds the key wins. Its quota id says which clients
share one rate: a ``user`` entity meters all of that user's clients together, a
``client-id`` entity all users of that client id together, a pair each pair apart. A
default entity meters each name apart (every user under ``<default>`` has its own rate).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mirrorsim.broker.quotas.entity import CLIENT_ID, USER, Entity

NAMED = "named"
DEFAULT = "default"

PRECEDENCE: tuple[tuple[str | None, str | None], ...] = (
    # (user part, client-id part): NAMED = the caller's own name, DEFAULT = <default>,
    # None = the entity has no such part
    (NAMED, NAMED),  # /config/users/<user>/clients/<client-id>
    (NAMED, DEFAULT),  # /config/users/<user>/clients/<default>
    (NAMED, None),  # /config/users/<user>
    (DEFAULT, NAMED),  # /config/users/<default>/clients/<client-id>
    (DEFAULT, DEFAULT),  # /config/users/<default>/clients/<default>
    (DEFAULT, None),  # /config/users/<default>
    (None, NAMED),  # /config/clients/<client-id>
    (None, DEFAULT),  # /config/clients/<default>
)


@dataclass(frozen=True, slots=True)
class QuotaId:
    """The clients one rate is measured over (Kafka's quota metric tags)."""

    user: str
    client_id: str


@dataclass(frozen=True, slots=True)
class AppliedQuota:
    quota_id: QuotaId
    bound: float


def _entity(user_part: str | None, client_part: str | None, user: str, client_id: str) -> Entity:
    pairs: list[tuple[str, str | None]] = []
    for entity_type, part, name in ((CLIENT_ID, client_part, client_id), (USER, user_part, user)):
        if part is not None:
            pairs.append((entity_type, name if part == NAMED else None))
    return tuple(sorted(pairs))


def resolve(
    quotas: Mapping[Entity, Mapping[str, float]], key: str, user: str, client_id: str
) -> AppliedQuota | None:
    """The quota ``key`` that applies to this user and client id, or None (unlimited). A
    request without a client id (or a user) matches no entity with that part, as in Kafka."""
    for user_part, client_part in PRECEDENCE:
        if (client_part is not None and not client_id) or (user_part is not None and not user):
            continue
        values = quotas.get(_entity(user_part, client_part, user, client_id))
        if values is not None and key in values:
            quota_id = QuotaId(
                user if user_part is not None else "",
                client_id if client_part is not None else "",
            )
            return AppliedQuota(quota_id, values[key])
    return None
