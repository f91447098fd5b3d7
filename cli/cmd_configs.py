"""``mirrorsim configs``: kafka-configs.sh for topics, brokers, (KIP-1279) mirrors and the
SCRAM credentials of users (``scram_users.py``).

``--add-config`` takes Kafka's syntax ``k1=v1,k2=[a,b],k3=v3``: commas inside square
brackets belong to the value and the brackets are dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from mirrorsim.cli.admin_session import CLIENT_ID, run
from mirrorsim.cli.admin_session import command_config as command_config_properties
from mirrorsim.cli.errors import abort
from mirrorsim.cli.scram_users import alter_users, describe_user
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
}
USERS = "users"
_STATIC_SOURCES = {ConfigSource.DEFAULT_CONFIG, ConfigSource.STATIC_BROKER_CONFIG}
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
@click.option("--entity-type", type=click.Choice(sorted([*ENTITY_TYPES, USERS])), required=True)
@click.option("--entity-name", required=True, help="Name of the entity (broker id for brokers).")
@click.option("--describe", is_flag=True, help="List configs for the given entity.")
@click.option("--all", "all_configs", is_flag=True, help="With --describe, include defaults.")
@click.option("--alter", is_flag=True, help="Alter the configuration for the entity.")
@click.option("--add-config", help="Configs to add or update: k1=v1,k2=[v1,v2],k3=v3.")
@click.option("--delete-config", help="Config names to remove: k1,k2.")
def configs(
    bootstrap_server: str,
    command_config: Path | None,
    entity_type: str,
    entity_name: str,
    describe: bool,
    all_configs: bool,
    alter: bool,
    add_config: str | None,
    delete_config: str | None,
) -> None:
    """Describe or alter the configuration of a topic, broker, cluster mirror or user."""
    if describe == alter:
        abort("Command must include exactly one action: --describe, --alter")
    if alter and not (add_config or delete_config):
        abort("--alter requires --add-config or --delete-config")
    if describe and (add_config or delete_config):
        abort("--add-config and --delete-config can only be used with --alter")
    client_config = command_config_properties(command_config)
    if entity_type == USERS:
        if alter:
            added = parse_add_config(add_config or "")
            deleted = parse_delete_config(delete_config or "")
            alter_users(bootstrap_server, client_config, entity_name, added, deleted)
        else:
            describe_user(bootstrap_server, client_config, entity_name)
        return
    resource_type, label = ENTITY_TYPES[entity_type]
    resource = ConfigResource(resource_type, entity_name)
    if alter:
        ops = [AlterConfigOp(k, v) for k, v in parse_add_config(add_config or "").items()]
        ops += [
            AlterConfigOp(k, None, AlterConfigOpType.DELETE)
            for k in parse_delete_config(delete_config or "")
        ]
        run(_alter(bootstrap_server, client_config, resource, ops))
        click.echo(f"Completed updating config for {label} {entity_name}.")
        return
    entries = run(_describe(bootstrap_server, client_config, resource))
    shown = [e for e in entries if all_configs or e.source not in _STATIC_SOURCES]
    click.echo(f"{'All' if all_configs else 'Dynamic'} configs for {label} {entity_name} are:")
    for entry in sorted(shown, key=lambda e: e.name):
        click.echo(format_entry(entry))


async def _alter(
    bootstrap: str, config: dict[str, str], resource: ConfigResource, ops: list[AlterConfigOp]
) -> None:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        (await admin.incremental_alter_configs({resource: ops})).all()


async def _describe(
    bootstrap: str, config: dict[str, str], resource: ConfigResource
) -> list[ConfigEntry]:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        described = await admin.describe_configs([resource])
    return [entry for entries in described.values() for entry in entries.values()]
