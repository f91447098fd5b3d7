"""``mirrorsim configs --entity-type users|clients``: client quotas as kafka-configs.sh
manages them.

``--entity-type users --entity-name alice --entity-type clients --entity-name app`` names
the pair (types and names pair up in order); ``--entity-default`` stands for the name of a
type given without one (``--entity-type users --entity-default``: the default user).
``--add-config producer_byte_rate=1024,consumer_byte_rate=2048`` sets quotas,
``--delete-config request_percentage`` removes one. ``--describe`` prints Kafka's lines,
``Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=1024.0``,
for the entities of exactly these types (all of them when no name is given).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import click

from mirrorsim.cli.admin_session import CLIENT_ID, run
from mirrorsim.cli.errors import abort
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    QuotaAlteration,
    QuotaEntity,
    QuotaFilterComponent,
    QuotaMatch,
)

USERS = "users"
CLIENTS = "clients"
ENTITY_TYPES = {USERS: "user", CLIENTS: "client-id"}
"""kafka-configs.sh's entity types -> the protocol's quota entity types."""
LABELS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}
QUOTA_KEYS = (
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
)


def quota_entity_of(
    types: Sequence[str], names: Sequence[str], entity_default: bool
) -> tuple[tuple[str, str | None], ...]:
    """(quota entity type, name or None for the default) per given type, in order."""
    if len(set(types)) != len(types) or not set(types) <= set(ENTITY_TYPES):
        abort("client quotas take --entity-type users, clients, or both once each")
    if len(names) > len(types):
        abort("more --entity-name than --entity-type")
    missing = len(types) - len(names)
    if missing > 1 or (missing == 1) != entity_default:
        abort("give each --entity-type an --entity-name, or --entity-default for one of them")
    padded: list[str | None] = [*names, *([None] * missing)]
    return tuple((ENTITY_TYPES[t], n) for t, n in zip(types, padded, strict=True))


def parse_quota_values(added: Mapping[str, str]) -> dict[str, float]:
    values = {}
    for key, text in added.items():
        try:
            values[key] = float(text)
        except ValueError:
            abort(f"Invalid value {text!r} for quota {key}: a number is required")
    return values


def alter_quotas(
    bootstrap: str,
    client_config: dict[str, str],
    entity: tuple[tuple[str, str | None], ...],
    added: Mapping[str, str],
    deleted: Sequence[str],
    *,
    echo: bool = True,
) -> None:
    ops: dict[str, float | None] = {**parse_quota_values(added), **dict.fromkeys(deleted)}
    alteration = QuotaAlteration(tuple(sorted(entity)), ops)
    run(_alter(bootstrap, client_config, alteration))
    if echo:
        click.echo(f"Completed updating config for {_entity_text(entity, short=True)}.")


def describe_quotas(
    bootstrap: str,
    client_config: dict[str, str],
    entity_types: Sequence[str],
    entity: tuple[tuple[str, str | None], ...] | None,
) -> int:
    """Print the quotas of the entity (or of every entity of exactly these types); how many
    entities were printed."""
    if entity is None:
        components = [
            QuotaFilterComponent(ENTITY_TYPES[t], QuotaMatch.SPECIFIED) for t in entity_types
        ]
    else:
        components = [QuotaFilterComponent.of_entity(t, n) for t, n in entity]
    described = run(_describe(bootstrap, client_config, components))
    for found, values in sorted(described.items(), key=lambda item: repr(item[0])):
        listed = ", ".join(f"{key}={value!r}" for key, value in sorted(values.items()))
        click.echo(f"Quota configs for {_entity_text(found)} are {listed}")
    return len(described)


def _entity_text(entity: QuotaEntity, *, short: bool = False) -> str:
    names = dict(entity)
    parts = []
    for entity_type in ("user", "client-id", "ip"):
        if entity_type not in names:
            continue
        name = names[entity_type]
        if short:
            label = "user" if entity_type == "user" else "client"
            parts.append(f"{label} {name}" if name is not None else f"the default {label}")
        else:
            label = LABELS[entity_type]
            parts.append(f"{label} '{name}'" if name is not None else f"the default {label}")
    return ", ".join(parts)


async def _alter(bootstrap: str, config: dict[str, str], alteration: QuotaAlteration) -> None:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        (await admin.alter_client_quotas([alteration])).all()


async def _describe(
    bootstrap: str, config: dict[str, str], components: list[QuotaFilterComponent]
) -> dict[QuotaEntity, dict[str, float]]:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        return await admin.describe_client_quotas(components, strict=True)
