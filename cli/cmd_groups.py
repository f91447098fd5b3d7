"""``mirrorsim groups``: kafka-consumer-groups.sh's list, describe and offset reset, for
both protocols.

``--list`` prints one line per group: id, type (``classic`` or ``consumer``), state and
protocol type. ``--describe --group G`` prints the group's line, its members with their
assignment, and its offsets with lag; ``--state``, ``--members`` or ``--offsets`` print
only that part. A KIP-848 group (type ``consumer``) also shows its group epoch, the
server-side assignor and each member's epoch and target assignment, read with
ConsumerGroupDescribe. A group that does not exist is an error (exit 1).

``--reset-offsets`` moves an inactive group's committed offsets (rules in
``group_offsets``); without ``--execute`` it only prints the plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import click

from mirrorsim.cli.admin_session import CLIENT_ID, CommandError, run
from mirrorsim.cli.admin_session import command_config as command_config_properties
from mirrorsim.cli.errors import abort
from mirrorsim.cli.group_offsets import (
    ResetTarget,
    lag_rows,
    parse_datetime,
    plan_reset,
)
from mirrorsim.cli.output import table
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    ConsumerGroupListing,
    ConsumerProtocolMember,
    MemberDescription,
    OffsetSpec,
    TopicPartition,
)

CONSUMER_GROUP_TYPE = "consumer"
INACTIVE_STATES = frozenset({"Empty", "Dead"})
DRY_RUN_WARNING = (
    "WARN: No action will be performed as the --execute option is missing. "
    "Add --dry-run to keep this behaviour without the warning."
)
SECTIONS = ("state", "members", "offsets")


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
@click.option("--describe", is_flag=True, help="Describe a group: state, members, offsets.")
@click.option("--reset-offsets", is_flag=True, help="Reset an inactive group's offsets.")
@click.option("--group", help="The group to describe or reset.")
@click.option("--state", "only_state", is_flag=True, help="With --describe: the state only.")
@click.option("--members", "only_members", is_flag=True, help="With --describe: members only.")
@click.option("--offsets", "only_offsets", is_flag=True, help="With --describe: offsets only.")
@click.option("--topic", "topics", multiple=True, help="With --reset-offsets: T or T:0,1,2.")
@click.option("--all-topics", is_flag=True, help="With --reset-offsets: every committed topic.")
@click.option("--to-earliest", is_flag=True, help="Reset to the earliest offset.")
@click.option("--to-latest", is_flag=True, help="Reset to the latest offset.")
@click.option("--to-offset", type=int, help="Reset to this offset.")
@click.option("--shift-by", type=int, help="Move the committed offsets by this much.")
@click.option("--to-datetime", help="Reset to the first offset at or after YYYY-MM-DDTHH:mm:SS.")
@click.option("--dry-run", is_flag=True, help="Print the new offsets only (the default).")
@click.option("--execute", is_flag=True, help="Commit the new offsets.")
def groups(
    bootstrap_server: str,
    command_config: Path | None,
    list_: bool,
    describe: bool,
    reset_offsets: bool,
    group: str | None,
    only_state: bool,
    only_members: bool,
    only_offsets: bool,
    topics: tuple[str, ...],
    all_topics: bool,
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    shift_by: int | None,
    to_datetime: str | None,
    dry_run: bool,
    execute: bool,
) -> None:
    """List, describe or reset consumer groups of both protocols (kafka-consumer-groups.sh)."""
    if list_ + describe + reset_offsets != 1:
        abort("Command must include exactly one action: --list, --describe, --reset-offsets")
    if (describe or reset_offsets) and not group:
        abort(f"--{'describe' if describe else 'reset-offsets'} requires --group")
    config = command_config_properties(command_config)
    if list_:
        click.echo(run(_list(bootstrap_server, config)))
    elif describe:
        flags = (only_state, only_members, only_offsets)
        chosen = [name for name, on in zip(SECTIONS, flags, strict=True) if on]
        if len(chosen) > 1:
            abort("Choose at most one of --state, --members, --offsets")
        sections = chosen or list(SECTIONS)
        click.echo(run(_describe(bootstrap_server, config, group or "", sections)))
    else:
        target = _reset_target(to_earliest, to_latest, to_offset, shift_by, to_datetime)
        if bool(topics) == all_topics:
            abort("--reset-offsets needs exactly one of --topic, --all-topics")
        if dry_run and execute:
            abort("Choose one of --dry-run, --execute")
        chosen_topics = [_topic_spec(t) for t in topics]
        reset = _reset(bootstrap_server, config, group or "", target, chosen_topics, execute)
        click.echo(run(reset))
        if not (dry_run or execute):
            click.echo(DRY_RUN_WARNING, err=True)


def _reset_target(
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    shift_by: int | None,
    to_datetime: str | None,
) -> ResetTarget:
    given = [
        target
        for target in (
            ResetTarget("earliest") if to_earliest else None,
            ResetTarget("latest") if to_latest else None,
            ResetTarget("offset", to_offset) if to_offset is not None else None,
            ResetTarget("shift", shift_by) if shift_by is not None else None,
            _datetime_target(to_datetime) if to_datetime is not None else None,
        )
        if target is not None
    ]
    if len(given) != 1:
        abort(
            "--reset-offsets needs exactly one of --to-earliest, --to-latest, --to-offset, "
            "--shift-by, --to-datetime"
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


def _admin(bootstrap: str, config: dict[str, str]) -> Admin:
    return Admin(bootstrap, config=config, client_id=CLIENT_ID)


async def _list(bootstrap: str, config: dict[str, str]) -> str:
    async with _admin(bootstrap, config) as admin:
        listed = await admin.list_consumer_groups()
    return table(
        ("GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"),
        ((g.group_id, g.group_type, g.state, g.protocol_type or "-") for g in listed),
    )


async def _describe(
    bootstrap: str, config: dict[str, str], group_id: str, sections: Sequence[str]
) -> str:
    async with _admin(bootstrap, config) as admin:
        listing = await _listing(admin, group_id)
        if listing.group_type == CONSUMER_GROUP_TYPE:
            head, members, owners = await _describe_consumer(admin, group_id)
        else:
            head, members, owners = await _describe_classic(admin, group_id)
        parts = {"state": head, "members": members}
        if "offsets" in sections:
            parts["offsets"] = await _offsets(admin, group_id, owners)
    return "\n\n".join(parts[name] for name in sections)


async def _offsets(admin: Admin, group_id: str, owners: dict[TopicPartition, str]) -> str:
    committed = await _committed(admin, group_id)
    wanted = set(committed) | set(owners)
    ends = await _offsets_at(admin, wanted, OffsetSpec.LATEST) if wanted else {}
    rows = lag_rows(committed, ends, owners)
    return table(
        ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID"),
        (
            (
                group_id,
                row.partition.topic,
                row.partition.partition,
                "-" if row.current is None else row.current,
                row.log_end,
                "-" if row.lag is None else row.lag,
                row.owner or "-",
            )
            for row in rows
        ),
    )


async def _reset(
    bootstrap: str,
    config: dict[str, str],
    group_id: str,
    target: ResetTarget,
    topics: list[tuple[str, list[int] | None]],
    execute: bool,
) -> str:
    async with _admin(bootstrap, config) as admin:
        listing = await _find_listing(admin, group_id)
        if listing is not None and listing.state not in INACTIVE_STATES:
            raise CommandError(
                f"Assignments can only be reset if the group '{group_id}' is inactive, "
                f"but the current state is {listing.state}."
            )
        committed = await _committed(admin, group_id)
        partitions = (
            await _named_partitions(admin, topics) if topics else sorted(committed, key=_order)
        )
        if not partitions:
            raise CommandError(f"Consumer group '{group_id}' has no committed offsets to reset.")
        earliest = await _offsets_at(admin, partitions, OffsetSpec.EARLIEST)
        latest = await _offsets_at(admin, partitions, OffsetSpec.LATEST)
        by_time = (
            await _offsets_at(admin, partitions, target.value)
            if target.kind == "datetime"
            else None
        )
        plan = plan_reset(target, partitions, committed, earliest, latest, by_time)
        if execute:
            (await admin.alter_consumer_group_offsets(group_id, plan)).all()
    return table(
        ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
        ((group_id, tp.topic, tp.partition, offset) for tp, offset in plan.items()),
    )


def _order(tp: TopicPartition) -> tuple[str, int]:
    return tp.topic, tp.partition


async def _named_partitions(
    admin: Admin, topics: list[tuple[str, list[int] | None]]
) -> list[TopicPartition]:
    await admin.cluster.refresh_metadata([topic for topic, _ in topics])
    chosen = []
    for topic, partitions in topics:
        info = admin.cluster.metadata.topics.get(topic)
        if info is None:
            raise CommandError(f"Topic '{topic}' does not exist.")
        for p in partitions if partitions is not None else sorted(info.partitions):
            if p not in info.partitions:
                raise CommandError(f"Partition {topic}-{p} does not exist.")
            chosen.append(TopicPartition(topic, p))
    return chosen


async def _committed(admin: Admin, group_id: str) -> dict[TopicPartition, int]:
    return {tp: om.offset for tp, om in (await admin.list_consumer_group_offsets(group_id)).items()}


async def _offsets_at(
    admin: Admin, partitions: Iterable[TopicPartition], spec: int
) -> dict[TopicPartition, int]:
    found = await admin.list_offsets(dict.fromkeys(partitions, spec))
    return {tp: info.offset for tp, info in found.items()}


async def _find_listing(admin: Admin, group_id: str) -> ConsumerGroupListing | None:
    for listing in await admin.list_consumer_groups():
        if listing.group_id == group_id:
            return listing
    return None


async def _listing(admin: Admin, group_id: str) -> ConsumerGroupListing:
    listing = await _find_listing(admin, group_id)
    if listing is not None:
        return listing
    raise CommandError(f"Consumer group '{group_id}' does not exist.")


async def _describe_consumer(
    admin: Admin, group_id: str
) -> tuple[str, str, dict[TopicPartition, str]]:
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
    return head, members, _owners(group.members)


async def _describe_classic(
    admin: Admin, group_id: str
) -> tuple[str, str, dict[TopicPartition, str]]:
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
    return head, members, _owners(group.members)


def _owners(
    members: Iterable[MemberDescription | ConsumerProtocolMember],
) -> dict[TopicPartition, str]:
    """Each assigned partition's member id."""
    return {tp: m.member_id for m in members for tp in m.assignment}
