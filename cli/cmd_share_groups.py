"""``mirrorsim share-groups``: kafka-share-groups.sh's list, describe, offset reset, offset
deletion and group deletion for KIP-932 share groups (the work is in
``share_group_actions``; this module reads the options).

As ``mirrorsim groups`` does, ``--describe`` prints the group's state, its members and its
offsets (start offset and lag per partition) unless ``--state``, ``--members`` or
``--offsets`` picks one; Kafka's tool prints the offsets by default. ``--reset-offsets``
only prints its plan without ``--execute``, and refuses a group with members.
"""

from __future__ import annotations

from pathlib import Path

import click

from mirrorsim.cli import share_group_actions as actions
from mirrorsim.cli.admin_session import command_config as command_config_properties
from mirrorsim.cli.admin_session import run
from mirrorsim.cli.cmd_groups import DRY_RUN_WARNING, SECTIONS
from mirrorsim.cli.errors import abort
from mirrorsim.cli.group_offsets import ResetTarget, parse_datetime

ACTIONS = ("--list", "--describe", "--delete", "--reset-offsets", "--delete-offsets")


@click.command()
@click.option("--bootstrap-server", required=True, help="REQUIRED: The Kafka server to connect to.")
@click.option(
    "--command-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Property file containing configs to be passed to Admin Client.",
)
@click.option("--list", "list_", is_flag=True, help="List all share groups.")
@click.option("--describe", is_flag=True, help="Describe a share group: state, members, offsets.")
@click.option("--delete", is_flag=True, help="Delete an empty share group and its offsets.")
@click.option("--reset-offsets", is_flag=True, help="Reset an empty share group's start offsets.")
@click.option("--delete-offsets", is_flag=True, help="Delete an empty share group's offsets.")
@click.option("--group", help="The share group.")
@click.option("--state", "only_state", is_flag=True, help="With --list or --describe: the state.")
@click.option("--members", "only_members", is_flag=True, help="With --describe: members only.")
@click.option("--offsets", "only_offsets", is_flag=True, help="With --describe: offsets only.")
@click.option("--verbose", is_flag=True, help="With --describe: epochs too.")
@click.option("--topic", "topics", multiple=True, help="T, or T:0,1,2 with --reset-offsets.")
@click.option("--all-topics", is_flag=True, help="With --reset-offsets: every topic with offsets.")
@click.option("--to-earliest", is_flag=True, help="Reset to the earliest offset.")
@click.option("--to-latest", is_flag=True, help="Reset to the latest offset.")
@click.option("--to-offset", type=int, help="Reset to this offset.")
@click.option("--to-datetime", help="Reset to the first offset at or after YYYY-MM-DDTHH:mm:SS.")
@click.option("--dry-run", is_flag=True, help="Print the new offsets only (the default).")
@click.option("--execute", is_flag=True, help="Set the new offsets.")
def share_groups(
    bootstrap_server: str,
    command_config: Path | None,
    list_: bool,
    describe: bool,
    delete: bool,
    reset_offsets: bool,
    delete_offsets: bool,
    group: str | None,
    only_state: bool,
    only_members: bool,
    only_offsets: bool,
    verbose: bool,
    topics: tuple[str, ...],
    all_topics: bool,
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    to_datetime: str | None,
    dry_run: bool,
    execute: bool,
) -> None:
    """List, describe, reset or delete share groups (kafka-share-groups.sh)."""
    flags = (list_, describe, delete, reset_offsets, delete_offsets)
    chosen = [name for name, on in zip(ACTIONS, flags, strict=True) if on]
    if len(chosen) != 1:
        abort(f"Command must include exactly one action: {', '.join(ACTIONS)}.")
    if not list_ and not group:
        abort(f"{chosen[0]} requires --group")
    config = command_config_properties(command_config)
    group_id = group or ""
    if list_:
        listed = run(actions.list_groups(bootstrap_server, config, with_state=only_state))
        if listed:
            click.echo(listed)
    elif describe:
        sections = _sections(only_state, only_members, only_offsets)
        click.echo(run(actions.describe(bootstrap_server, config, group_id, sections, verbose)))
    elif delete:
        click.echo(run(actions.delete_group(bootstrap_server, config, group_id)))
    elif delete_offsets:
        if not topics:
            abort("--delete-offsets requires at least one --topic")
        click.echo(run(actions.delete_offsets(bootstrap_server, config, group_id, topics)))
    else:
        target = _reset_target(to_earliest, to_latest, to_offset, to_datetime)
        if bool(topics) == all_topics:
            abort("--reset-offsets needs exactly one of --topic, --all-topics")
        if dry_run and execute:
            abort("Choose one of --dry-run, --execute")
        chosen_topics = [_topic_spec(t) for t in topics]
        plan = actions.reset_offsets(
            bootstrap_server, config, group_id, target, chosen_topics, execute
        )
        click.echo(run(plan))
        if not (dry_run or execute):
            click.echo(DRY_RUN_WARNING, err=True)


def _sections(only_state: bool, only_members: bool, only_offsets: bool) -> list[str]:
    flags = (only_state, only_members, only_offsets)
    chosen = [name for name, on in zip(SECTIONS, flags, strict=True) if on]
    if len(chosen) > 1:
        abort("Choose at most one of --state, --members, --offsets")
    return chosen or list(SECTIONS)


def _reset_target(
    to_earliest: bool, to_latest: bool, to_offset: int | None, to_datetime: str | None
) -> ResetTarget:
    given = [
        target
        for target in (
            ResetTarget("earliest") if to_earliest else None,
            ResetTarget("latest") if to_latest else None,
            ResetTarget("offset", to_offset) if to_offset is not None else None,
            _datetime_target(to_datetime) if to_datetime is not None else None,
        )
        if target is not None
    ]
    if len(given) != 1:
        abort(
            "--reset-offsets needs exactly one of --to-earliest, --to-latest, --to-offset, "
            "--to-datetime"
        )
    return given[0]


def _datetime_target(text: str) -> ResetTarget:
    try:
        return ResetTarget("datetime", parse_datetime(text))
    except ValueError as exc:
        abort(str(exc))


def _topic_spec(text: str) -> tuple[str, list[int] | None]:
    """``T`` (every partition) or ``T:0,1,2``."""
    topic, _, partitions = text.partition(":")
    if not topic:
        abort(f"Invalid --topic '{text}': expected TOPIC or TOPIC:0,1,2")
    if not partitions:
        return topic, None
    try:
        return topic, [int(p) for p in partitions.split(",")]
    except ValueError:
        abort(f"Invalid --topic '{text}': partitions must be integers")
