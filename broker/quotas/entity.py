"""Client quota entities, keys and Kafka's validation of both (sans-I/O).

An entity maps entity types (``user``, ``client-id``, ``ip``) to a name, ``None`` naming
the type's default entity (``--entity-default`` in ``kafka-configs.sh``). Kafka accepts
``user`` and ``client-id`` alone or together, ``ip`` only alone; each combination has its
own keys. Every refusal is INVALID_REQUEST with Kafka's message, except an unknown entity
type in a DescribeClientQuotas filter, which Kafka answers UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mirrorsim.protocol.errors import ErrorCode, KafkaError

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"


class KeyType(enum.Enum):
    LONG = "long"
    INT = "int"
    DOUBLE = "double"


USER_AND_CLIENT_KEYS: Mapping[str, KeyType] = {
    PRODUCER_BYTE_RATE: KeyType.LONG,
    CONSUMER_BYTE_RATE: KeyType.LONG,
    REQUEST_PERCENTAGE: KeyType.DOUBLE,
    CONTROLLER_MUTATION_RATE: KeyType.DOUBLE,
}
IP_KEYS: Mapping[str, KeyType] = {CONNECTION_CREATION_RATE: KeyType.INT}

_LIMITS = {KeyType.LONG: (2**63 - 1, "a LONG"), KeyType.INT: (2**31 - 1, "an INT")}

Entity = tuple[tuple[str, str | None], ...]
"""(entity type, name or None for the default), sorted by type: hashable and canonical."""


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """The canonical entity; raises INVALID_REQUEST for what Kafka's controller refuses."""
    seen: dict[str, str | None] = {}
    for entity_type, name in pairs:
        if entity_type in seen:
            raise _invalid(f"Invalid client quota entity, duplicate entity entry {entity_type}")
        if entity_type not in ENTITY_TYPES:
            raise _invalid(f"Unhandled client quota entity type: {entity_type}")
        if name is not None and not name:
            raise _invalid(f"Empty {entity_type} not supported")
        seen[entity_type] = name
    if not seen:
        raise _invalid("Invalid empty client quota entity")
    return tuple(sorted(seen.items()))


def keys_for(entity: Entity) -> Mapping[str, KeyType]:
    """The quota keys an entity may carry (Kafka's ``configKeysForEntityType``)."""
    types = dict(entity)
    if IP in types:
        if USER in types or CLIENT_ID in types:
            raise _invalid(
                "Invalid quota entity combination, IP entity should not be combined with "
                "User or ClientId"
            )
        ip = types[IP]
        if ip is not None and not _is_ip(ip):
            raise _invalid(f"{ip} is not a valid IP or resolvable host.")
        return IP_KEYS
    return USER_AND_CLIENT_KEYS


def check_value(keys: Mapping[str, KeyType], key: str, value: float) -> None:
    """Kafka's ``validateQuotaKeyValue``: a known key, above zero, integral where typed so."""
    key_type = keys.get(key)
    if key_type is None:
        raise _invalid(f"Invalid configuration key {key}")
    if not value > 0.0:
        raise _invalid(f"Quota {key} must be greater than 0")
    if key_type is KeyType.DOUBLE:
        return
    limit, type_name = _LIMITS[key_type]
    if value > limit:
        raise _invalid(f"Proposed value for {key} is too large for {type_name}.")
    if abs(value % 1.0) > 1e-6:
        raise _invalid(f"{key} cannot be a fractional value.")


class MatchType(enum.IntEnum):
    """DescribeClientQuotas filter component match types."""

    EXACT = 0
    DEFAULT = 1
    SPECIFIED = 2


@dataclass(frozen=True, slots=True)
class QuotaFilter:
    """A validated DescribeClientQuotas filter (Kafka's ``describeClientQuotas`` rules)."""

    exact: Mapping[str, str | None]
    """Entity type -> the name it must have (None: the default entity)."""
    typed: frozenset[str]
    """Entity types the entity must have, under any name."""
    strict: bool

    @classmethod
    def parse(cls, components: Iterable[tuple[str, int, str | None]], strict: bool) -> QuotaFilter:
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for entity_type, match_type, match in components:
            if not entity_type:
                raise _invalid("Invalid empty entity type.")
            if entity_type in exact or entity_type in typed:
                raise _invalid(
                    f"Entity type {entity_type} cannot appear more than once in the filter."
                )
            if entity_type not in ENTITY_TYPES:
                raise KafkaError(
                    ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}"
                )
            if match_type == MatchType.EXACT:
                if match is None:
                    raise _invalid("Request has exact match type but no match string")
                exact[entity_type] = match
            elif match_type == MatchType.DEFAULT:
                exact[entity_type] = None
            elif match_type == MatchType.SPECIFIED:
                typed.add(entity_type)
            else:
                raise _invalid(f"Unexpected match type: {match_type}")
        used = set(exact) | typed
        if IP in used and (USER in used or CLIENT_ID in used):
            raise _invalid(
                "Invalid entity filter component combination. IP filter component should not "
                "be used with user or clientId filter component."
            )
        return cls(exact, frozenset(typed), strict)

    def matches(self, entity: Entity) -> bool:
        types = dict(entity)
        if self.strict and len(types) != len(self.exact) + len(self.typed):
            return False
        for entity_type, name in self.exact.items():
            if entity_type not in types or types[entity_type] != name:
                return False
        return all(entity_type in types for entity_type in self.typed)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_REQUEST, message)
