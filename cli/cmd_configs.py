"""``mirrorsim configs``: kafka-configs.sh for topics, brokers, (KIP-1279) mirrors, groups, the
SCRAM credentials of users (``scram_users.py``) and the client quotas of users and client
ids (``client_quotas.py``).

``--add-config`` takes Kafka's syntax ``k1=v1,k2=[a,b],k3=v3``: commas inside square
brackets belong to the value and the brackets are dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from mirrorsim.cli.admin_session import CLIENT_ID, run
from mirrorsim.cli.admin_session import command_config as command_config_properties
from mirrorsim.cli.client_quotas import (
    CLIENTS,
    QUOTA_KEYS,
    alter_quotas,
    describe_quotas,
    quota_entity_of,
)
from mirrorsim.cli.errors import abort
from mirrorsim.cli.scram_users import (
    alter_users,
    describe_all_users,
    describe_user,
    has_scram_credentials,
)
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
)

ENTITY_TYPES = {
    "topics": (ConfigResourceType.TOPIC, "topic"),
    "brokers": (ConfigResourceType.BROKER, "broker"),
    "mirrors": (ConfigResourceType.MIRROR, "mirror"),
    "groups": (ConfigResourceType.GROUP, "group"),
}
USERS = "users"
_OWN_SOURCES = {
    ConfigResourceType.TOPIC: ConfigSource.DYNAMIC_TOPIC_CONFIG,
    ConfigResourceType.BROKER: ConfigSource.DYNAMIC_BROKER_CONFIG,
    ConfigResourceType.MIRROR: ConfigSource.UNKNOWN,
    ConfigResourceType.GROUP: ConfigSource.GROUP_CONFIG,
}
"""Without --all, only the entity's own values, as kafka-configs.sh filters them (a
mirror's set values have no source of their own: UNKNOWN)."""
_TOP_LEVEL_COMMA = re.compile(r",(?=[^\]]*(?:\[|$))")


def parse_add_config(text: str) -> dict[str, str]:
    configs: dict[str, str] = {}
    for item in _TOP_LEVEL_COMMA.split(text):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            abort(
                f"Invalid entity config: all configs to be added must be in the format "
                f'"key=val", got {item!r}'
            )
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        configs[name.strip()] = value
    return configs


def parse_delete_config(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def format_entry(entry: ConfigEntry) -> str:
    value = None if entry.is_sensitive else entry.value
    return (
        f"  {entry.name}={value if value is not None else 'null'} "
        f"sensitive={'true' if entry.is_sensitive else 'false'}"
    )


@click.command()
@click.option("--bootstrap-server", required=True, help="The Kafka server to connect to.")
@click.option(
    "--command-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Property file containing configs to be passed to Admin Client.",
)
@click.option(
    "--entity-type",
    "entity_types",
    multiple=True,
    type=click.Choice(sorted([*ENTITY_TYPES, USERS, CLIENTS])),
    help="Type of entity: topics, brokers, mirrors, groups, users or clients (implied by "
    "--topic and --broker); users and clients may be given together for a (user, client-id) "
    "quota.",
)
@click.option(
    "--entity-name",
    "entity_names",
    multiple=True,
    help="Name of the entity (broker id for brokers), paired with the --entity-type in "
    "order; without it --describe shows every entity of the type.",
)
@click.option(
    "--entity-default",
    is_flag=True,
    help="The cluster-wide default of brokers, or the default user or client id (quotas).",
)
@click.option("--topic", help="The topic's name (--entity-type topics --entity-name TOPIC).")
@click.option("--broker", help="The broker's id (--entity-type brokers --entity-name ID).")
@click.option("--describe", is_flag=True, help="List configs for the given entity.")
@click.option("--all", "all_configs", is_flag=True, help="With --describe, include defaults.")
@click.option("--alter", is_flag=True, help="Alter the configuration for the entity.")
@click.option("--add-config", help="Configs to add or update: k1=v1,k2=[v1,v2],k3=v3.")
@click.option(
    "--add-config-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A properties file of configs to add or update.",
)
@click.option("--delete-config", help="Config names to remove: k1,k2.")
def configs(
    bootstrap_server: str,
    command_config: Path | None,
    entity_types: tuple[str, ...],
    entity_names: tuple[str, ...],
    entity_default: bool,
    topic: str | None,
    broker: str | None,
    describe: bool,
    all_configs: bool,
    alter: bool,
    add_config: str | None,
    add_config_file: Path | None,
    delete_config: str | None,
) -> None:
    """Describe or alter the configuration of a topic, broker, cluster mirror, user or client."""
    if describe == alter:
        abort("Command must include exactly one action: --describe, --alter")
    adds = add_config or add_config_file
    if alter and not (adds or delete_config):
        abort("--alter requires --add-config, --add-config-file or --delete-config")
    if describe and (adds or delete_config):
        abort("--add-config, --add-config-file and --delete-config can only be used with --alter")
    client_config = command_config_properties(command_config)
    if entity_types == (USERS,):
        _users(
            bootstrap_server,
            client_config,
            (entity_names, entity_default),
            alter,
            add_config,
            delete_config,
        )
        return
    if CLIENTS in entity_types or USERS in entity_types:
        _quotas(
            bootstrap_server,
            client_config,
            (entity_types, entity_names, entity_default),
            alter,
            add_config,
            delete_config,
        )
        return
    if len(entity_types) > 1 or len(entity_names) > 1:
        abort("only users and clients can be given together")
    entity_type, entity_name = _entity(
        next(iter(entity_types), None),
        next(iter(entity_names), None),
        entity_default,
        topic,
        broker,
    )
    if alter and entity_name is None:
        abort("an entity name must be specified with --alter")
    resource_type, label = ENTITY_TYPES[entity_type]
    if alter:
        added = parse_add_config(add_config or "")
        if add_config_file is not None:
            added |= command_config_properties(add_config_file)
        ops = [AlterConfigOp(k, v) for k, v in added.items()]
        ops += [
            AlterConfigOp(k, None, AlterConfigOpType.DELETE)
            for k in parse_delete_config(delete_config or "")
        ]
        resource = ConfigResource(resource_type, entity_name or "")
        run(_alter(bootstrap_server, client_config, resource, ops))
        target = DEFAULT_BROKER_LABEL if entity_default else f"{label} {entity_name}"
        click.echo(f"Completed updating {'default ' if entity_default else ''}config for {target}.")
        return
    described = run(_describe(bootstrap_server, client_config, resource_type, entity_name))
    own = (
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if entity_default
        else _OWN_SOURCES[resource_type]
    )
    for name, entries in described.items():
        shown = [e for e in entries if all_configs or e.source == own]
        target = DEFAULT_BROKER_LABEL if entity_default else f"{label} {name}"
        kind = "All" if all_configs else "Default" if entity_default else "Dynamic"
        click.echo(f"{kind} configs for {target} are:")
        for entry in sorted(shown, key=lambda e: e.name):
            click.echo(format_entry(entry))


DEFAULT_BROKER_LABEL = "brokers in the cluster"


def _quotas(
    bootstrap: str,
    client_config: dict[str, str],
    given: tuple[tuple[str, ...], tuple[str, ...], bool],
    alter: bool,
    add_config: str | None,
    delete_config: str | None,
) -> None:
    entity_types, entity_names, entity_default = given
    if not set(entity_types) <= {USERS, CLIENTS}:
        abort("only users and clients can be given together")
    if alter or entity_names or entity_default:
        entity = quota_entity_of(entity_types, entity_names, entity_default)
    else:
        entity = None
    if alter and entity is not None:
        added = parse_add_config(add_config or "")
        deleted = parse_delete_config(delete_config or "")
        unknown = sorted((set(added) | set(deleted)) - set(QUOTA_KEYS))
        if unknown:
            abort(f"Invalid config(s): {', '.join(unknown)}")
        alter_quotas(bootstrap, client_config, entity, added, deleted)
        return
    describe_quotas(bootstrap, client_config, entity_types, entity)


def _users(
    bootstrap: str,
    client_config: dict[str, str],
    given: tuple[tuple[str, ...], bool],
    alter: bool,
    add_config: str | None,
    delete_config: str | None,
) -> None:
    """A user's SCRAM credentials (``SCRAM-*`` names) and quotas (the other names), as
    kafka-configs.sh --entity-type users manages both; ``--describe`` shows both."""
    names, entity_default = given
    if len(names) > 1 or (names and entity_default):
        abort("give one --entity-name or --entity-default for users")
    user = names[0] if names else None
    entity = None if user is None and not entity_default else (("user", user),)
    if not alter:
        described = describe_quotas(bootstrap, client_config, [USERS], entity)
        if entity is None:
            describe_all_users(bootstrap, client_config)
        elif user is not None and (
            not described or has_scram_credentials(bootstrap, client_config, user)
        ):
            describe_user(bootstrap, client_config, user)
        return
    if entity is None:
        abort("--alter needs --entity-name or --entity-default")
    added = parse_add_config(add_config or "")
    deleted = parse_delete_config(delete_config or "")
    scram_added = {k: v for k, v in added.items() if k.startswith(SCRAM_PREFIX)}
    scram_deleted = [k for k in deleted if k.startswith(SCRAM_PREFIX)]
    quota_added = {k: v for k, v in added.items() if k not in scram_added}
    quota_deleted = [k for k in deleted if k not in scram_deleted]
    unknown = sorted((set(quota_added) | set(quota_deleted)) - set(QUOTA_KEYS))
    if unknown:
        abort(f"Invalid config(s): {', '.join(unknown)}")
    if (scram_added or scram_deleted) and user is None:
        abort("SCRAM credentials belong to a named user, not the default")
    if scram_added or scram_deleted:
        alter_users(bootstrap, client_config, str(user), scram_added, scram_deleted)
    if quota_added or quota_deleted:
        alter_quotas(
            bootstrap,
            client_config,
            entity,
            quota_added,
            quota_deleted,
            echo=not (scram_added or scram_deleted),
        )


SCRAM_PREFIX = "SCRAM-"


def _entity(
    entity_type: str | None,
    entity_name: str | None,
    entity_default: bool,
    topic: str | None,
    broker: str | None,
) -> tuple[str, str | None]:
    """The entity type and name from Kafka's long form or its shortcuts (one of them)."""
    given = [
        (kind, name) for kind, name in (("topics", topic), ("brokers", broker)) if name is not None
    ]
    if entity_default:
        given.append(("brokers", ""))
    if entity_type is not None or entity_name is not None:
        if entity_type is None:
            abort("--entity-name needs --entity-type")
        given.append((entity_type, entity_name))
    if len(given) != 1:
        abort(
            "give exactly one entity: --entity-type [--entity-name], --entity-default, "
            "--topic or --broker"
        )
    kind, name = given[0]
    if entity_default and kind != "brokers":
        abort("--entity-default applies to brokers only")
    return kind, name


async def _describe(
    bootstrap: str, config: dict[str, str], resource_type: ConfigResourceType, name: str | None
) -> dict[str, list[ConfigEntry]]:
    """Each named entity's configs; every entity of the type when no name is given."""
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        names = [name] if name is not None else await _all_names(admin, resource_type)
        resources = [ConfigResource(resource_type, n) for n in names]
        described = await admin.describe_configs(resources) if resources else {}
    return {r.name: list(described.get(r, {}).values()) for r in resources}


async def _all_names(admin: Admin, resource_type: ConfigResourceType) -> list[str]:
    if resource_type == ConfigResourceType.TOPIC:
        return await admin.list_topics()
    if resource_type == ConfigResourceType.BROKER:
        cluster = await admin.describe_cluster()
        return [str(b.node_id) for b in sorted(cluster.brokers, key=lambda b: b.node_id)]
    if resource_type == ConfigResourceType.GROUP:
        return sorted(g.group_id for g in await admin.list_consumer_groups())
    return sorted(m.name for m in await admin.list_mirrors())


async def _alter(
    bootstrap: str, config: dict[str, str], resource: ConfigResource, ops: list[AlterConfigOp]
) -> None:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        (await admin.incremental_alter_configs({resource: ops})).all()
