"""``mirrorsim topics``: kafka-topics.sh's create, list, describe, alter and delete.

Operators check leaders and in-sync replicas during every drill, so ``--describe`` prints
Kafka's own lines (``Topic: orders	Partition: 0	Leader: 1	Replicas: 1,2	Isr: 1,2``).
As in Kafka, ``--topic`` is a regex (full match) for every action but ``--create``, and a
topic that does not exist is an error unless ``--if-exists`` says otherwise.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import click

from mirrorsim.cli.admin_session import CLIENT_ID, CommandError, run
from mirrorsim.cli.admin_session import command_config as command_config_properties
from mirrorsim.cli.errors import abort
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    NewTopic,
    TopicDescription,
)

ACTIONS = ("create", "list", "describe", "alter", "delete")
NEEDS_TOPIC = frozenset({"create", "alter", "delete"})


def _choose_action(flags: dict[str, bool]) -> str:
    chosen = [name for name in ACTIONS if flags[name]]
    if len(chosen) != 1:
        abort("Command must include exactly one action: " + ", ".join(f"--{a}" for a in ACTIONS))
    return chosen[0]


def _parse_configs(items: tuple[str, ...]) -> dict[str, str]:
    configs = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            abort(
                f'Invalid topic config: all configs must be in the format "key=val", got {item!r}'
            )
        configs[name] = value
    return configs


@click.command()
@click.option("--bootstrap-server", required=True, help="REQUIRED: The Kafka server to connect to.")
@click.option(
    "--command-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Property file containing configs to be passed to Admin Client.",
)
@click.option("--create", is_flag=True, help="Create a new topic.")
@click.option("--list", "list_", is_flag=True, help="List all available topics.")
@click.option("--describe", is_flag=True, help="List details (leader, replicas, ISR) for topics.")
@click.option("--alter", is_flag=True, help="Alter the number of partitions of a topic.")
@click.option("--delete", is_flag=True, help="Delete a topic.")
@click.option("--topic", help="The topic to create, or a regex of the topics to act on.")
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    help="The number of partitions (create: default num.partitions; alter: the new count).",
)
@click.option(
    "--replication-factor",
    type=click.IntRange(min=1, max=32767),
    help="The replication factor of a new topic (default: the broker's).",
)
@click.option(
    "--config", "config_items", multiple=True, help="A topic config override k=v (repeatable)."
)
@click.option("--if-exists", is_flag=True, help="Alter, describe or delete only if it exists.")
@click.option("--if-not-exists", is_flag=True, help="Create only if the topic does not exist.")
@click.option(
    "--exclude-internal", is_flag=True, help="Leave out internal topics from list and describe."
)
def topics(
    bootstrap_server: str,
    command_config: Path | None,
    topic: str | None,
    partitions: int | None,
    replication_factor: int | None,
    config_items: tuple[str, ...],
    if_exists: bool,
    if_not_exists: bool,
    exclude_internal: bool,
    list_: bool,
    **flags: bool,
) -> None:
    """Create, list, describe, alter or delete topics (kafka-topics.sh)."""
    action = _choose_action({**flags, "list": list_})
    if action in NEEDS_TOPIC and topic is None:
        abort(f"--{action} requires --topic")
    if action == "alter" and partitions is None:
        abort("--alter requires --partitions")
    if action != "create" and (replication_factor is not None or config_items):
        abort("--replication-factor and --config can only be used with --create")
    if topic is not None and action != "create":
        try:
            re.compile(topic)
        except re.error as exc:
            abort(f"--topic is not a valid regex: {exc}")
    client_config = command_config_properties(command_config)
    session = _Session(bootstrap_server, client_config)
    if action == "create":
        new = NewTopic(
            topic or "", partitions or -1, replication_factor or -1, _parse_configs(config_items)
        )
        if run(session.create(new, if_not_exists)):
            click.echo(f"Created topic {topic}.")
    elif action == "alter":
        run(session.alter(topic or "", partitions or 0, if_exists))
    elif action == "delete":
        run(session.delete(topic or "", if_exists))
    elif action == "list":
        click.echo("\n".join(run(session.matching(topic, not exclude_internal, True))))
    else:
        for line in run(session.describe(topic, not exclude_internal, if_exists)):
            click.echo(line)


class _Session:
    """Each action's cluster calls, over one Admin connection per action."""

    def __init__(self, bootstrap: str, config: dict[str, str]) -> None:
        self.bootstrap = bootstrap
        self.config = config

    def _admin(self) -> Admin:
        return Admin(self.bootstrap, config=self.config, client_id=CLIENT_ID)

    async def matching(
        self, pattern: str | None, internal: bool, missing_ok: bool, admin: Admin | None = None
    ) -> list[str]:
        """The topic names fully matching ``pattern`` (all without one)."""
        if admin is None:
            async with self._admin() as opened:
                return await self.matching(pattern, internal, missing_ok, opened)
        names = await admin.list_topics(include_internal=internal)
        found = [n for n in names if pattern is None or re.fullmatch(pattern, n)]
        if not found and pattern is not None and not missing_ok:
            raise CommandError(f"Topic '{pattern}' does not exist as expected")
        return found

    async def create(self, new: NewTopic, if_not_exists: bool) -> bool:
        async with self._admin() as admin:
            if if_not_exists and new.name in await admin.list_topics(include_internal=True):
                return False
            (await admin.create_topics([new])).all()
        return True

    async def alter(self, pattern: str, count: int, if_exists: bool) -> None:
        async with self._admin() as admin:
            names = await self.matching(pattern, True, if_exists, admin)
            if names:
                (await admin.create_partitions(dict.fromkeys(names, count))).all()

    async def delete(self, pattern: str, if_exists: bool) -> None:
        async with self._admin() as admin:
            names = await self.matching(pattern, False, if_exists, admin)
            if names:
                (await admin.delete_topics(names)).all()

    async def describe(self, pattern: str | None, internal: bool, if_exists: bool) -> list[str]:
        async with self._admin() as admin:
            names = await self.matching(pattern, internal, if_exists or pattern is None, admin)
            if not names:
                return []
            described = await admin.describe_topics(names)
            resources = [ConfigResource(ConfigResourceType.TOPIC, n) for n in names]
            configs = await admin.describe_configs(resources)
        lines = []
        for name in names:
            entries = configs.get(ConfigResource(ConfigResourceType.TOPIC, name), {})
            overrides = ",".join(
                f"{e.name}={e.value}"
                for e in sorted(entries.values(), key=lambda e: e.name)
                if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG and not e.is_sensitive
            )
            lines += describe_lines(described[name], overrides)
        return lines


def describe_lines(topic: TopicDescription, configs: str) -> list[str]:
    """kafka-topics.sh's summary line, then one line per partition."""
    replication = len(topic.partitions[0].replicas) if topic.partitions else 0
    lines = [
        f"Topic: {topic.name}\tTopicId: {_topic_id(topic)}\t"
        f"PartitionCount: {len(topic.partitions)}\tReplicationFactor: {replication}\t"
        f"Configs: {configs}"
    ]
    for p in topic.partitions:
        leader = "none" if p.leader_id < 0 else str(p.leader_id)
        line = (
            f"\tTopic: {topic.name}\tPartition: {p.partition}\tLeader: {leader}\t"
            f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}"
        )
        if p.offline_replicas:
            line += f"\tOffline: {','.join(map(str, p.offline_replicas))}"
        lines.append(line)
    return lines


def _topic_id(topic: TopicDescription) -> str:
    """Kafka's base64url spelling of a topic id (as in its tools and logs)."""
    if topic.topic_id is None:
        return "none"
    return base64.urlsafe_b64encode(topic.topic_id.bytes).decode().rstrip("=")
