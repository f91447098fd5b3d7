"""What ``mirrorsim share-groups`` does on the cluster: each action is a coroutine over
``Admin`` that returns the text to print, in kafka-share-groups.sh's columns and words.

A share group's offset of a partition is its start offset (SPSO); its lag is what the
broker reports (records from the start offset to the high watermark not yet acknowledged).
Offsets change only while the group has no members: a reset of a group with members is
refused before anything is sent, as Kafka's tool does, and the broker refuses the rest
(NON_EMPTY_GROUP).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mirrorsim.cli.admin_session import CLIENT_ID, CommandError
from mirrorsim.cli.cmd_groups import format_partitions
from mirrorsim.cli.group_offsets import ResetTarget, plan_reset
from mirrorsim.cli.output import describe_error, table
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    ConsumerGroupListing,
    OffsetSpec,
    ShareGroupDescription,
    SharePartitionOffsetInfo,
    TopicPartition,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError

SHARE_GROUP_TYPE = "share"
EMPTY = "Empty"
MISSING = "-"


def _admin(bootstrap: str, config: dict[str, str]) -> Admin:
    return Admin(bootstrap, config=config, client_id=CLIENT_ID)


async def list_groups(bootstrap: str, config: dict[str, str], *, with_state: bool) -> str:
    """One group id per line, or ``GROUP STATE`` lines with ``--state``."""
    async with _admin(bootstrap, config) as admin:
        listed = await admin.list_share_groups()
    if with_state:
        return table(("GROUP", "STATE"), ((g.group_id, g.state) for g in listed))
    return "\n".join(g.group_id for g in listed)


async def describe(
    bootstrap: str, config: dict[str, str], group_id: str, sections: Sequence[str], verbose: bool
) -> str:
    async with _admin(bootstrap, config) as admin:
        group = await _described(admin, group_id)
        parts = {}
        if "members" in sections:
            parts["members"] = _members(group, verbose)
        if "state" in sections:
            coordinator = await admin.cluster.find_coordinator(group_id)
            where = f"{coordinator.host}:{coordinator.port}  ({coordinator.node_id})"
            parts["state"] = _state(group, where, verbose)
        if "offsets" in sections:
            offsets = await admin.list_share_group_offsets(group_id)
            parts["offsets"] = _offsets(group_id, offsets, verbose)
    return "\n\n".join(parts[name] for name in sections)


async def _described(admin: Admin, group_id: str) -> ShareGroupDescription:
    try:
        return (await admin.describe_share_groups([group_id]))[group_id]
    except KafkaError as exc:
        if exc.code != ErrorCode.GROUP_ID_NOT_FOUND:
            raise
        if await _listing(admin, group_id) is not None:
            raise CommandError(f"Group '{group_id}' is not a share group.") from None
        raise CommandError(f"Share group '{group_id}' does not exist.") from None


def _state(group: ShareGroupDescription, coordinator: str, verbose: bool) -> str:
    if verbose:
        return table(
            ("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"),
            [
                (
                    group.group_id,
                    coordinator,
                    group.state,
                    group.group_epoch,
                    group.assignment_epoch,
                    len(group.members),
                )
            ],
        )
    return table(
        ("GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS"),
        [(group.group_id, coordinator, group.state, len(group.members))],
    )


def _members(group: ShareGroupDescription, verbose: bool) -> str:
    if not group.members:
        return f"Share group '{group.group_id}' has no active members."
    header = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
    epoch = ("MEMBER-EPOCH",) if verbose else ()
    return table(
        (*header, *epoch, "ASSIGNMENT"),
        (
            (
                group.group_id,
                m.member_id,
                m.client_host,
                m.client_id,
                len(m.assignment),
                *((m.member_epoch,) if verbose else ()),
                format_partitions(m.assignment),
            )
            for m in sorted(group.members, key=lambda m: m.member_id)
        ),
    )


def _offsets(
    group_id: str, offsets: Mapping[TopicPartition, SharePartitionOffsetInfo], verbose: bool
) -> str:
    if not offsets:
        return f"Share group '{group_id}' has no offset information."

    def shown(value: int | None) -> object:
        return MISSING if value is None else value

    epoch = ("LEADER-EPOCH",) if verbose else ()
    return table(
        ("GROUP", "TOPIC", "PARTITION", *epoch, "START-OFFSET", "LAG"),
        (
            (
                group_id,
                tp.topic,
                tp.partition,
                *((shown(info.leader_epoch),) if verbose else ()),
                info.start_offset,
                shown(info.lag),
            )
            for tp, info in sorted(offsets.items())
        ),
    )


async def reset_offsets(
    bootstrap: str,
    config: dict[str, str],
    group_id: str,
    target: ResetTarget,
    topics: list[tuple[str, list[int] | None]],
    execute: bool,
) -> str:
    """The new start offsets, clamped to each partition's log as Kafka's tool does; set
    only with ``execute``. A group id no group has yet is reset too (the broker creates the
    share group)."""
    async with _admin(bootstrap, config) as admin:
        await _refuse_members(admin, group_id)
        if topics:
            partitions = await _named_partitions(admin, topics)
        else:
            partitions = sorted(await admin.list_share_group_offsets(group_id))
        if not partitions:
            raise CommandError(f"Share group '{group_id}' has no offsets to reset.")
        earliest = await _offsets_at(admin, partitions, OffsetSpec.EARLIEST)
        latest = await _offsets_at(admin, partitions, OffsetSpec.LATEST)
        by_time = (
            await _offsets_at(admin, partitions, target.value)
            if target.kind == "datetime"
            else None
        )
        plan = plan_reset(target, partitions, {}, earliest, latest, by_time)
        if execute:
            (await admin.alter_share_group_offsets(group_id, plan)).all()
    return table(
        ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
        ((group_id, tp.topic, tp.partition, offset) for tp, offset in plan.items()),
    )


async def _refuse_members(admin: Admin, group_id: str) -> None:
    try:
        group = (await admin.describe_share_groups([group_id]))[group_id]
    except KafkaError as exc:
        if exc.code == ErrorCode.GROUP_ID_NOT_FOUND:
            return
        raise
    if group.state != EMPTY:
        raise CommandError(f"Share group '{group_id}' is not empty.")


async def _named_partitions(
    admin: Admin, topics: list[tuple[str, list[int] | None]]
) -> list[TopicPartition]:
    await admin.cluster.refresh_metadata([topic for topic, _ in topics])
    chosen = []
    for topic, partitions in topics:
        existing = admin.cluster.partitions_for(topic)
        if not existing:
            raise CommandError(f"Topic '{topic}' does not exist.")
        for p in existing if partitions is None else partitions:
            if p not in existing:
                raise CommandError(f"Partition {topic}-{p} does not exist.")
            chosen.append(TopicPartition(topic, p))
    return chosen


async def _offsets_at(
    admin: Admin, partitions: Iterable[TopicPartition], spec: int
) -> dict[TopicPartition, int]:
    found = await admin.list_offsets(dict.fromkeys(partitions, spec))
    return {tp: info.offset for tp, info in found.items()}


async def delete_offsets(
    bootstrap: str, config: dict[str, str], group_id: str, topics: Iterable[str]
) -> str:
    """``TOPIC STATUS`` per topic: ``Successful`` or ``Error: <why>``; an error of the whole
    request (a group with members, no such share group) is raised instead."""
    async with _admin(bootstrap, config) as admin:
        results = await admin.delete_share_group_offsets(group_id, topics)
    return table(
        ("TOPIC", "STATUS"),
        (
            (topic, "Successful" if error is None else f"Error: {error.message}")
            for topic, error in sorted(results.items())
        ),
    )


async def delete_group(bootstrap: str, config: dict[str, str], group_id: str) -> str:
    """DeleteGroups for an Empty share group, which takes its offsets with it. A group of
    another type, or one with members, is refused before anything is sent."""
    async with _admin(bootstrap, config) as admin:
        listing = await _listing(admin, group_id)
        if listing is not None and listing.group_type != SHARE_GROUP_TYPE:
            raise CommandError(f"Group '{group_id}' is not a share group.")
        if listing is not None and listing.state != EMPTY:
            raise CommandError(f"Share group '{group_id}' is not EMPTY.")
        error = (await admin.delete_share_groups([group_id]))[group_id]
    if error is not None and error.code == ErrorCode.GROUP_ID_NOT_FOUND:
        raise CommandError(f"Group '{group_id}' is not a share group.")
    if error is not None:
        raise CommandError(
            f"Group '{group_id}' could not be deleted due to: {describe_error(error)}"
        )
    return f"Deletion of requested share groups ('{group_id}') was successful."


async def _listing(admin: Admin, group_id: str) -> ConsumerGroupListing | None:
    """The group of any type with this id, as ListGroups lists it."""
    return next((g for g in await admin.list_consumer_groups() if g.group_id == group_id), None)
