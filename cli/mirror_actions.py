"""What each kafka-mirrors action does against the destination cluster.

--topic takes a regex. For --add it is matched against the SOURCE cluster's topics (the
topics to start mirroring); for --remove, --pause and --resume against the topics of the
mirror on the destination. A plain topic name is sent as given, without matching, so the
broker can answer it with the precise error (UNKNOWN_MIRROR, TOPIC_NOT_IN_MIRROR, ...).

The broker creates a missing mirror topic itself (source topic id, partition count and
configs, the destination's default replication factor). With --replication-factor, --add
creates the missing topics first with that factor, the source topic id (CreateTopics v8
MirrorInfo, so a broker without v8 answers UNSUPPORTED_VERSION rather than creating a topic
with a new id) and the source partition count.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mirrorsim.cli.admin_session import CLIENT_ID, CommandError
from mirrorsim.client import Admin, RequestSpec
from mirrorsim.client.admin_types import (
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    MirrorDescription,
    Results,
    TopicDescription,
)
from mirrorsim.client.errors import KafkaConnectionError, RequestTimedOut, error_from_wire
from mirrorsim.protocol.errors import ErrorCode, KafkaError

CREATE_TOPICS = 19
MIRROR_INFO_VERSION = 8
_PLAIN_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


@dataclass(frozen=True, slots=True)
class TopicPattern:
    pattern: str

    def __post_init__(self) -> None:
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise CommandError(f"Invalid --topic regex {self.pattern!r}: {exc}") from None

    @property
    def is_plain_name(self) -> bool:
        return _PLAIN_TOPIC_NAME.fullmatch(self.pattern) is not None

    def select(self, topics: Iterable[str]) -> list[str]:
        """The topics the whole pattern matches (Java's ``Matcher.matches``), sorted."""
        compiled = re.compile(self.pattern)
        return sorted({t for t in topics if compiled.fullmatch(t)})


@dataclass(frozen=True, slots=True)
class SourceCluster:
    bootstrap: str
    config: Mapping[str, str]


async def add_topics(
    admin: Admin, mirror: str, pattern: TopicPattern, replication_factor: int | None
) -> Results[str]:
    source = await _source_cluster(admin, mirror)
    if source is None:
        if not pattern.is_plain_name:
            raise CommandError(f"Mirror {mirror} does not exist")
        return await admin.add_topics_to_mirror(mirror, [pattern.pattern])
    try:
        described = await _matching_source_topics(source, pattern)
    except (KafkaError, KafkaConnectionError, RequestTimedOut) as exc:
        if not pattern.is_plain_name:
            raise CommandError(
                f"Cannot list the topics of mirror {mirror}'s source cluster "
                f"{source.bootstrap}: {exc}"
            ) from None
        described = {}
    topics = sorted(described) or ([pattern.pattern] if pattern.is_plain_name else [])
    if not topics:
        raise CommandError(f"No topic of the source cluster matches {pattern.pattern!r}")
    if replication_factor is not None:
        await _create_missing_topics(admin, described.values(), replication_factor)
    return await admin.add_topics_to_mirror(mirror, topics)


async def change_topics(
    admin: Admin, action: str, mirror: str, pattern: TopicPattern
) -> Results[str]:
    """--remove, --pause or --resume the mirror topics ``pattern`` selects."""
    if pattern.is_plain_name:
        topics = [pattern.pattern]
    else:
        described = await admin.describe_mirrors([mirror])
        partitions = described.get(mirror, MirrorDescription(mirror, ())).partitions
        topics = pattern.select(p.topic for p in partitions)
        if not topics:
            raise CommandError(f"No topic of mirror {mirror} matches {pattern.pattern!r}")
    method = {
        "remove": admin.remove_topics_from_mirror,
        "pause": admin.pause_mirror_topics,
        "resume": admin.resume_mirror_topics,
    }[action]
    return await method(mirror, topics)


async def alter_mirror_config(admin: Admin, mirror: str, configs: Mapping[str, str]) -> None:
    resource = ConfigResource(ConfigResourceType.MIRROR, mirror)
    results = await admin.incremental_alter_configs(
        {resource: [AlterConfigOp(name, value) for name, value in configs.items()]}
    )
    results.all()


async def _source_cluster(admin: Admin, mirror: str) -> SourceCluster | None:
    """Where the mirror replicates from, with the client settings stored in its config.

    Sensitive values are not described back, so a source that needs a password stored only
    in the mirror config cannot be listed from here; plain topic names still work.
    """
    listing = {m.name: m for m in await admin.list_mirrors()}.get(mirror)
    if listing is None:
        return None
    config: dict[str, str] = {}
    try:
        resource = ConfigResource(ConfigResourceType.MIRROR, mirror)
        described = await admin.describe_configs([resource])
    except KafkaError:
        described = {}
    for entries in described.values():
        config.update({e.name: e.value for e in entries.values() if e.value is not None})
    bootstrap = config.pop("bootstrap.servers", None) or listing.source_bootstrap
    return SourceCluster(bootstrap, config)


async def _matching_source_topics(
    source: SourceCluster, pattern: TopicPattern
) -> dict[str, TopicDescription]:
    async with Admin(source.bootstrap, config=source.config, client_id=CLIENT_ID) as src:
        matched = pattern.select(await src.list_topics())
        return await src.describe_topics(matched) if matched else {}


async def _create_missing_topics(
    admin: Admin, sources: Iterable[TopicDescription], replication_factor: int
) -> None:
    existing = set(await admin.list_topics(include_internal=True))
    missing = [t for t in sources if t.name not in existing]
    if not missing:
        return
    spec = RequestSpec(
        CREATE_TOPICS,
        {
            "topics": [
                {
                    "name": t.name,
                    "num_partitions": len(t.partitions),
                    "replication_factor": replication_factor,
                    "assignments": [],
                    "configs": [],
                    "mirror_info": {"topic_id": t.topic_id},
                }
                for t in missing
            ],
            "timeout": datetime.timedelta(milliseconds=admin.cluster.config.request_timeout_ms),
            "validate_only": False,
        },
        versions=(MIRROR_INFO_VERSION,),
    )
    response = await admin.cluster.retrying(lambda: admin.cluster.send_to_controller(spec))
    for created in response.topics:
        error = error_from_wire(created.error_code, created.error_message)
        if error is not None and error.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            raise error
