"""``mirrorsim groups``: kafka-consumer-groups.sh's list and describe, for both protocols.

``--list`` prints one line per group: id, type (``classic`` or ``consumer``), state and
protocol type. ``--describe --group G`` prints the group's line and then its members with
their assignment; a KIP-848 group (type ``consumer``) also shows its group epoch, the
server-side assignor and each member's epoch and target assignment, read with
ConsumerGroupDescribe. A group that does not exist is an error (exit 1).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import click

from mirrorsim.cli.admin_session import CLIENT_ID, CommandError, run
from mirrorsim.cli.admin_session import command_config as command_config_properties
from mirrorsim.cli.errors import abort
from mirrorsim.cli.output import table
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import ConsumerGroupListing, TopicPartition

CONSUMER_GROUP_TYPE = "consumer"


def format_partitions(partitions: Iterable[TopicPartition]) -> str:
    """``orders:0,1;payments:2``, topics and partitions sorted; ``-`` for none."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return "-"
    return ";".join(
        f"{topic}:{','.join(str(p) for p in sorted(parts))}"
        for topic, parts in sorted(by_topic.items())
    )


@click.command()
@click.option("--bootstrap-server", required=True, help="REQUIRED: The Kafka server to connect to.")
@click.option(
    "--command-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Property file containing configs to be passed to Admin Client.",
)
@click.option("--list", "list_", is_flag=True, help="List all consumer groups.")
@click.option("--describe", is_flag=True, help="Describe a group: members and assignment.")
@click.option("--group", help="The group to describe.")
def groups(
    bootstrap_server: str,
    command_config: Path | None,
    list_: bool,
    describe: bool,
    group: str | None,
) -> None:
    """List or describe consumer groups of both protocols (kafka-consumer-groups.sh)."""
    if list_ == describe:
        abort("Command must include exactly one action: --list, --describe")
    if describe and not group:
        abort("--describe requires --group")
    config = command_config_properties(command_config)
    if list_:
        click.echo(run(_list(bootstrap_server, config)))
    else:
        click.echo(run(_describe(bootstrap_server, config, group or "")))


def _admin(bootstrap: str, config: dict[str, str]) -> Admin:
    return Admin(bootstrap, config=config, client_id=CLIENT_ID)


async def _list(bootstrap: str, config: dict[str, str]) -> str:
    async with _admin(bootstrap, config) as admin:
        listed = await admin.list_consumer_groups()
    return table(
        ("GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"),
        ((g.group_id, g.group_type, g.state, g.protocol_type or "-") for g in listed),
    )


async def _describe(bootstrap: str, config: dict[str, str], group_id: str) -> str:
    async with _admin(bootstrap, config) as admin:
        listing = await _listing(admin, group_id)
        if listing.group_type == CONSUMER_GROUP_TYPE:
            return await _describe_consumer(admin, group_id)
        return await _describe_classic(admin, group_id)


async def _listing(admin: Admin, group_id: str) -> ConsumerGroupListing:
    for listing in await admin.list_consumer_groups():
        if listing.group_id == group_id:
            return listing
    raise CommandError(f"Consumer group '{group_id}' does not exist.")


async def _describe_consumer(admin: Admin, group_id: str) -> str:
    group = (await admin.describe_consumer_protocol_groups([group_id]))[group_id]
    head = table(
        ("GROUP", "TYPE", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "ASSIGNOR"),
        [
            (
                group.group_id,
                CONSUMER_GROUP_TYPE,
                group.state,
                group.group_epoch,
                group.assignment_epoch,
                group.assignor,
            )
        ],
    )
    members = table(
        ("MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT", "TARGET-ASSIGNMENT"),
        (
            (
                m.member_id,
                m.client_id,
                m.client_host,
                m.member_epoch,
                format_partitions(m.assignment),
                format_partitions(m.target_assignment),
            )
            for m in group.members
        ),
    )
    return f"{head}\n\n{members}"


async def _describe_classic(admin: Admin, group_id: str) -> str:
    group = (await admin.describe_consumer_groups([group_id]))[group_id]
    head = table(
        ("GROUP", "TYPE", "STATE", "PROTOCOL-TYPE", "PROTOCOL"),
        [
            (
                group.group_id,
                "classic",
                group.state,
                group.protocol_type or "-",
                group.protocol or "-",
            )
        ],
    )
    members = table(
        ("MEMBER-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"),
        (
            (m.member_id, m.client_id, m.client_host, format_partitions(m.assignment))
            for m in group.members
        ),
    )
    return f"{head}\n\n{members}"
