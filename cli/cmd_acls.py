"""``mirrorsim acls``: kafka-acls.sh, including KIP-1279's ``--cluster-mirror`` resource.

Bindings are every (principal, host, operation) combination of the options, allow
principals before deny principals, operations in the order given; output lines are
Kafka's ``ResourcePattern(...)`` and ``(principal=..., ...)`` forms.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import click

from mirrorsim.cli.admin_session import CLIENT_ID, run
from mirrorsim.cli.admin_session import command_config as command_config_properties
from mirrorsim.cli.errors import abort
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

CLUSTER_RESOURCE_NAME = "kafka-cluster"
ResourcePattern = tuple[ResourceType, str, PatternType]


def parse_operation(name: str) -> AclOperation:
    """Kafka's operation names (``AlterConfigs``, ``describe_configs``, ``ALL``...)."""
    snake = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name.strip()).replace("-", "_").upper()
    try:
        return AclOperation[snake]
    except KeyError:
        abort(f"Invalid operation {name!r}")


def format_pattern(pattern: ResourcePattern) -> str:
    resource_type, name, pattern_type = pattern
    return (
        f"`ResourcePattern(resourceType={resource_type.name}, name={name}, "
        f"patternType={pattern_type.name})`"
    )


def format_entry(binding: AclBinding) -> str:
    return (
        f"(principal={binding.principal}, host={binding.host}, "
        f"operation={binding.operation.name}, permissionType={binding.permission_type.name})"
    )


def _pattern_of(binding: AclBinding) -> ResourcePattern:
    return (binding.resource_type, binding.resource_name, binding.pattern_type)


def echo_grouped(title: str, bindings: Iterable[AclBinding]) -> None:
    grouped: dict[ResourcePattern, list[AclBinding]] = defaultdict(list)
    for binding in bindings:
        grouped[_pattern_of(binding)].append(binding)
    for pattern, entries in grouped.items():
        click.echo(f"{title} {format_pattern(pattern)}:")
        for entry in entries:
            click.echo(format_entry(entry))


PRODUCER_TOPIC_OPS = (AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE)
CONSUMER_TOPIC_OPS = (AclOperation.READ, AclOperation.DESCRIBE)
TRANSACTIONAL_ID_OPS = (AclOperation.WRITE, AclOperation.DESCRIBE)
RESOURCE_OPTIONS = "--topic, --cluster, --group, --transactional-id, --cluster-mirror"


@click.command()
@click.option("--bootstrap-server", required=True, help="The Kafka server to connect to.")
@click.option(
    "--command-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Property file containing configs to be passed to Admin Client.",
)
@click.option("--add", is_flag=True, help="Add ACLs.")
@click.option("--remove", is_flag=True, help="Remove ACLs.")
@click.option("--list", "list_", is_flag=True, help="List ACLs.")
@click.option("--cluster-mirror", help="A cluster mirror name ('*' for all mirrors).")
@click.option("--topic", help="A topic name ('*' for all topics).")
@click.option("--group", help="A consumer group id ('*' for all groups).")
@click.option("--transactional-id", help="A transactional id ('*' for all of them).")
@click.option("--cluster", is_flag=True, help="The cluster resource.")
@click.option(
    "--resource-pattern-type",
    type=click.Choice(["literal", "prefixed", "any", "match"], case_sensitive=False),
    default="literal",
    show_default=True,
    help="How resource names match: literal or prefixed for --add; any or match also for "
    "--list and --remove.",
)
@click.option(
    "--operation",
    "operations",
    multiple=True,
    help="An operation (Read, Write, Create, Describe, Alter, AlterConfigs, All...); repeatable.",
)
@click.option(
    "--producer",
    is_flag=True,
    help="Convenience: WRITE, DESCRIBE and CREATE on the topic; with --transactional-id "
    "WRITE and DESCRIBE on it; with --idempotent IDEMPOTENT_WRITE on the cluster.",
)
@click.option(
    "--consumer",
    is_flag=True,
    help="Convenience: READ and DESCRIBE on the topic, READ on the group (needs --group).",
)
@click.option(
    "--idempotent", is_flag=True, help="With --producer: IDEMPOTENT_WRITE on the cluster."
)
@click.option(
    "--allow-principal",
    "allow_principals",
    multiple=True,
    help="A principal (User:NAME) the ACLs allow; repeatable.",
)
@click.option(
    "--deny-principal",
    "deny_principals",
    multiple=True,
    help="A principal (User:NAME) the ACLs deny; repeatable.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    help="A host the allow ACLs apply to (default: every host); repeatable.",
)
@click.option(
    "--deny-host",
    "deny_hosts",
    multiple=True,
    help="A host the deny ACLs apply to (default: every host); repeatable.",
)
@click.option(
    "--principal",
    "list_principals",
    multiple=True,
    help="With --list: only the ACLs of this principal; repeatable.",
)
@click.option(
    "--force", is_flag=True, help="Assume yes to all queries and do not prompt (--remove)."
)
def acls(
    bootstrap_server: str,
    command_config: Path | None,
    add: bool,
    remove: bool,
    list_: bool,
    cluster_mirror: str | None,
    topic: str | None,
    group: str | None,
    transactional_id: str | None,
    cluster: bool,
    resource_pattern_type: str,
    operations: tuple[str, ...],
    producer: bool,
    consumer: bool,
    idempotent: bool,
    allow_principals: tuple[str, ...],
    deny_principals: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    deny_hosts: tuple[str, ...],
    list_principals: tuple[str, ...],
    force: bool,
) -> None:
    """Add, remove or list ACLs."""
    if [add, remove, list_].count(True) != 1:
        abort("Command must include exactly one action: --list, --add, --remove")
    if (producer or consumer) and list_:
        abort("--producer and --consumer can only be used with --add or --remove")
    if idempotent and not producer:
        abort("--idempotent can only be used with --producer")
    if list_principals and not list_:
        abort("--principal can only be used with --list")
    pattern_type = PatternType[resource_pattern_type.upper()]
    ops = [parse_operation(o) for o in operations]
    if producer or consumer:
        planned = _convenience(producer, consumer, idempotent, topic, group, transactional_id)
    else:
        names = (
            (ResourceType.CLUSTER_MIRROR, cluster_mirror),
            (ResourceType.TOPIC, topic),
            (ResourceType.GROUP, group),
            (ResourceType.TRANSACTIONAL_ID, transactional_id),
            (ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME if cluster else None),
        )
        planned = [(kind, name, ops) for kind, name in names if name is not None]
    config = command_config_properties(command_config)
    if add:
        if not planned:
            abort(f"You must specify one of: {RESOURCE_OPTIONS}")
        if not (allow_principals or deny_principals) or not all(o for _, _, o in planned):
            abort("--add requires --operation and --allow-principal or --deny-principal")
        if pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            abort(
                f"A '--resource-pattern-type' value of '{resource_pattern_type}' is not valid "
                "when adding acls."
            )
        added = [
            (
                (kind, name, pattern_type),
                _bindings(
                    kind,
                    name,
                    pattern_type,
                    kind_ops,
                    allow_principals,
                    allow_hosts,
                    deny_principals,
                    deny_hosts,
                ),
            )
            for kind, name, kind_ops in planned
        ]
        run(_create(bootstrap_server, config, [b for _, bindings in added for b in bindings]))
        for pattern, bindings in added:
            click.echo(f"Adding ACLs for resource {format_pattern(pattern)}:")
            for binding in bindings:
                click.echo(format_entry(binding))
        return
    if remove:
        if not planned:
            abort(f"You must specify one of: {RESOURCE_OPTIONS}")
        filters = [
            acl_filter
            for kind, name, kind_ops in planned
            for acl_filter in _filters(
                [(kind, name)], pattern_type, kind_ops, allow_principals, deny_principals
            )
        ]
        _confirm_removal(planned, force)
        echo_grouped("Removed ACLs for resource", run(_delete(bootstrap_server, config, filters)))
        return
    resources = [(kind, name) for kind, name, _ in planned]
    filters = _filters(resources, pattern_type, ops, list_principals, ())
    if list_principals:
        filters = [replace(f, permission_type=AclPermissionType.ANY) for f in filters]
    echo_grouped("Current ACLs for resource", run(_describe(bootstrap_server, config, filters)))


def _convenience(
    producer: bool,
    consumer: bool,
    idempotent: bool,
    topic: str | None,
    group: str | None,
    transactional_id: str | None,
) -> list[tuple[ResourceType, str, list[AclOperation]]]:
    """kafka-acls.sh's --producer/--consumer: the resources and operations they stand for."""
    if topic is None:
        abort("--producer and --consumer need --topic")
    planned: list[tuple[ResourceType, str, list[AclOperation]]] = []
    topic_ops = dict.fromkeys((*PRODUCER_TOPIC_OPS,) if producer else ())
    if consumer:
        topic_ops |= dict.fromkeys(CONSUMER_TOPIC_OPS)
    planned.append((ResourceType.TOPIC, topic, list(topic_ops)))
    if consumer:
        if group is None:
            abort("--consumer requires --group")
        planned.append((ResourceType.GROUP, group, [AclOperation.READ]))
    if producer and transactional_id is not None:
        planned.append(
            (ResourceType.TRANSACTIONAL_ID, transactional_id, list(TRANSACTIONAL_ID_OPS))
        )
    if producer and idempotent:
        planned.append(
            (ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, [AclOperation.IDEMPOTENT_WRITE])
        )
    return planned


def _confirm_removal(
    planned: list[tuple[ResourceType, str, list[AclOperation]]], force: bool
) -> None:
    """Ask before removing, as kafka-acls.sh does; only a terminal is asked (a script
    cannot answer), and --force skips the question."""
    if force or not sys.stdin.isatty():
        return
    names = ", ".join(f"{kind.name} {name}" for kind, name, _ in planned)
    if not click.confirm(f"Are you sure you want to remove ACLs from {names}?"):
        abort("removal cancelled")


def _bindings(
    kind: ResourceType,
    name: str,
    pattern_type: PatternType,
    ops: list[AclOperation],
    allow_principals: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    deny_principals: tuple[str, ...],
    deny_hosts: tuple[str, ...],
) -> list[AclBinding]:
    return [
        AclBinding(kind, name, principal, op, permission, host, pattern_type)
        for principals, hosts, permission in (
            (allow_principals, allow_hosts, AclPermissionType.ALLOW),
            (deny_principals, deny_hosts, AclPermissionType.DENY),
        )
        for principal in principals
        for host in hosts or ("*",)
        for op in ops
    ]


def _filters(
    resources: list[tuple[ResourceType, str]],
    pattern_type: PatternType,
    ops: list[AclOperation],
    allow_principals: tuple[str, ...],
    deny_principals: tuple[str, ...],
) -> list[AclBindingFilter]:
    principals: list[tuple[str | None, AclPermissionType]] = [
        *((p, AclPermissionType.ALLOW) for p in allow_principals),
        *((p, AclPermissionType.DENY) for p in deny_principals),
    ] or [(None, AclPermissionType.ANY)]
    return [
        AclBindingFilter(
            kind,
            name,
            pattern_type if resources else PatternType.ANY,
            principal,
            None,
            op,
            permission,
        )
        for kind, name in resources or [(ResourceType.ANY, None)]
        for principal, permission in principals
        for op in ops or [AclOperation.ANY]
    ]


async def _create(bootstrap: str, config: dict[str, str], bindings: list[AclBinding]) -> None:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        (await admin.create_acls(bindings)).all()


async def _delete(
    bootstrap: str, config: dict[str, str], filters: list[AclBindingFilter]
) -> list[AclBinding]:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        deleted = await admin.delete_acls(filters)
    return list(dict.fromkeys(b for bindings in deleted.values() for b in bindings))


async def _describe(
    bootstrap: str, config: dict[str, str], filters: list[AclBindingFilter]
) -> list[AclBinding]:
    async with Admin(bootstrap, config=config, client_id=CLIENT_ID) as admin:
        found: list[AclBinding] = []
        for acl_filter in filters:
            found.extend(await admin.describe_acls(acl_filter))
    return list(dict.fromkeys(found))
