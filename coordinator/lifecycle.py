"""The mirror management operations: validate, then change the cluster metadata.

Every broker can serve them (the metadata store is the controller). They change only
configuration (the mirror's configs, a topic's ``mirror.name``); the partition leaders
see the change on their next metadata refresh and move the partition states
(``MirrorCoordinator``). Validation and error codes follow the spec's RPC descriptions
and its Errors table; per-topic failures are returned, request-wide ones raised.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mirrorsim.broker.config import (
    MIRROR_NAME,
    MIRROR_STOP_REASON,
    TOPIC_CONFIGS,
    topic_name_error,
)
from mirrorsim.broker.metadata.mirror_source_clusters import MirrorSourceClusters
from mirrorsim.broker.metadata.models import TopicExistsError, TopicRecord
from mirrorsim.client.cluster import RequestSpec
from mirrorsim.coordinator.source_clusters import BOOTSTRAP_SERVERS
from mirrorsim.coordinator.state_machine import (
    PAUSED_SUFFIX,
    REMOVED_SUFFIX,
    MirrorNameIntent,
    MirrorPartitionState,
    parse_mirror_name,
)
from mirrorsim.coordinator.sync.patterns import PatternList, SyncFilterError
from mirrorsim.coordinator.sync.topics import (
    DEFAULT_TOPIC_PROPERTIES_EXCLUDE,
    MIRROR_TOPIC_PROPERTIES_EXCLUDE,
    topic_config_exclusion,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError

DESCRIBE_CONFIGS_KEY = 32
TOPIC_RESOURCE_TYPE = 2
TOPIC_CONFIG_SOURCE = 1
ADDABLE_STATES = frozenset({MirrorPartitionState.UNKNOWN, MirrorPartitionState.STOPPED})


def mirror_name_error(name: str) -> str | None:
    if name.endswith((REMOVED_SUFFIX, PAUSED_SUFFIX)):
        return f"Mirror name {name!r} must not end with {REMOVED_SUFFIX} or {PAUSED_SUFFIX}"
    problem = topic_name_error(name)
    return problem.replace("Topic name", "Mirror name") if problem else None


@dataclass(frozen=True, slots=True)
class MirrorListing:
    name: str
    bootstrap: str
    cluster_id: str
    topic_count: int


class MirrorLifecycle:
    def __init__(self, broker: Any) -> None:
        self._broker = broker

    @property
    def _coordinator(self) -> Any:
        return self._broker.mirrors

    async def _mirrors(self) -> dict[str, Any]:
        return await asyncio.to_thread(self._broker.store.mirrors)  # type: ignore[no-any-return]

    async def _require_mirror(self, name: str) -> None:
        if name not in await self._mirrors():
            raise KafkaError(ErrorCode.UNKNOWN_MIRROR, f"Mirror {name} does not exist")

    def _topics_of(self, mirror: str) -> dict[str, MirrorNameIntent]:
        found = {}
        for name, topic in self._broker.snapshot.topics.items():
            parsed = parse_mirror_name(topic.configs.get(MIRROR_NAME))
            if parsed.mirror == mirror:
                found[name] = parsed.intent
        return found

    # -- create, list, delete ------------------------------------------------------------

    async def create_mirror(self, name: str, configs: Mapping[str, str | None]) -> None:
        problem = mirror_name_error(name)
        if problem:
            raise KafkaError(ErrorCode.INVALID_MIRROR_NAME, problem)
        missing = [k for k, v in configs.items() if v is None]
        if missing:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Null value for mirror config {missing[0]}")
        if not configs.get(BOOTSTRAP_SERVERS):
            raise KafkaError(
                ErrorCode.INVALID_CONFIG, f"Mirror config {BOOTSTRAP_SERVERS} is required"
            )
        await self._coordinator.state_topic.ensure_created()
        try:
            await asyncio.to_thread(self._broker.store.create_mirror, name, dict(configs))
        except KeyError:
            raise KafkaError(
                ErrorCode.INVALID_MIRROR_NAME, f"Mirror name {name} is already in use"
            ) from None
        await self._broker.refresh_metadata()

    async def list_mirrors(self) -> list[MirrorListing]:
        """The source cluster id is the one stored for the mirror, the same on every broker."""
        cluster_ids = await asyncio.to_thread(MirrorSourceClusters(self._broker.store).cluster_ids)
        listings = []
        for name, record in sorted((await self._mirrors()).items()):
            topics = self._topics_of(name)
            listings.append(
                MirrorListing(
                    name,
                    record.configs.get(BOOTSTRAP_SERVERS, ""),
                    cluster_ids.get(name, ""),
                    sum(1 for i in topics.values() if i is not MirrorNameIntent.REMOVE),
                )
            )
        return listings

    async def delete_mirror(self, name: str) -> None:
        await self._require_mirror(name)
        topics = self._topics_of(name)
        active = sorted(t for t, i in topics.items() if i is not MirrorNameIntent.REMOVE)
        if active:
            raise KafkaError(ErrorCode.MIRROR_NOT_EMPTY, f"Mirror {name} still has topics {active}")
        for topic in sorted(topics):
            record = self._broker.snapshot.topics[topic]
            states = await self._coordinator.states.read(
                name, topic, [p.partition for p in record.partitions]
            )
            if any(s.state is not MirrorPartitionState.STOPPED for s in states.values()):
                raise KafkaError(
                    ErrorCode.MIRROR_NOT_EMPTY, f"Topic {topic} of mirror {name} is still stopping"
                )
        for topic in sorted(topics):
            configs = dict(self._broker.snapshot.topics[topic].configs)
            configs.pop(MIRROR_NAME, None)
            configs.pop(MIRROR_STOP_REASON, None)
            await self._broker.controller.set_topic_configs(topic, configs)
        await self._coordinator.states.delete_mirror(name, set(topics))
        await asyncio.to_thread(self._broker.store.delete_mirror, name)
        await self._coordinator.sources.close(name)
        await self._broker.refresh_metadata()

    # -- topics --------------------------------------------------------------------------

    async def add_topics(
        self, mirror: str, topics: Iterable[tuple[str, uuid.UUID | None]]
    ) -> dict[str, KafkaError | None]:
        mirrors = await self._mirrors()
        if mirror not in mirrors:
            raise KafkaError(ErrorCode.UNKNOWN_MIRROR, f"Mirror {mirror} does not exist")
        excluded = self._excluded_topic_configs(mirrors[mirror].configs)
        if not self._coordinator.sources.knows(mirror):
            await self._broker.refresh_metadata()
        if not self._coordinator.sources.knows(mirror):
            raise KafkaError(ErrorCode.UNKNOWN_MIRROR, f"Mirror {mirror} does not exist")
        results: dict[str, KafkaError | None] = {}
        for name, _ in topics:
            try:
                await self._add_topic(mirror, name, excluded)
            except KafkaError as exc:
                results[name] = exc
            else:
                results[name] = None
        return results

    @staticmethod
    def _excluded_topic_configs(mirror_configs: Mapping[str, str]) -> PatternList:
        """The source configs a mirror topic never copies, as the metadata sync decides."""
        value = mirror_configs.get(
            MIRROR_TOPIC_PROPERTIES_EXCLUDE, DEFAULT_TOPIC_PROPERTIES_EXCLUDE
        )
        try:
            return topic_config_exclusion(value)
        except SyncFilterError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None

    async def _add_topic(self, mirror: str, name: str, excluded: PatternList) -> None:
        # The store, not this broker's snapshot: a config set a moment ago elsewhere
        # (``mirror.support.unclean.leader.election``) must survive the rewrite below.
        existing = (await asyncio.to_thread(self._broker.store.topics, [name])).get(name)
        if existing is not None:
            current = parse_mirror_name(existing.configs.get(MIRROR_NAME))
            if (
                current.mirror not in (None, mirror)
                and current.intent is not MirrorNameIntent.REMOVE
            ):
                raise KafkaError(
                    ErrorCode.TOPIC_ALREADY_IN_MIRROR,
                    f"Topic {name} is already in mirror {current.mirror}",
                )
            if current.mirror is not None:
                await self._require_partitions_addable(current.mirror, existing)
        source = await self._coordinator.sources.client(mirror)
        view = await source.refresh_metadata([name])
        info = view.topics.get(name)
        if info is None or info.error != ErrorCode.NONE or info.topic_id is None:
            raise KafkaError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist on the source"
            )
        configs = await self._source_topic_configs(source, name, excluded)
        if existing is None:
            await self._create_mirror_topic(name, info.topic_id, len(info.partitions), configs)
            existing = self._broker.snapshot.topics[name]
        elif existing.topic_id != info.topic_id:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                f"Topic {name} has id {existing.topic_id} here but {info.topic_id} on the source",
            )
        kept = {k: v for k, v in existing.configs.items() if k != MIRROR_STOP_REASON}
        await self._broker.controller.set_topic_configs(
            name, {**kept, **configs, MIRROR_NAME: mirror}
        )

    async def _require_partitions_addable(self, mirror: str, topic: TopicRecord) -> None:
        states = await self._coordinator.states.read(
            mirror, topic.name, [p.partition for p in topic.partitions]
        )
        busy = sorted(p for p, s in states.items() if s.state not in ADDABLE_STATES)
        if busy:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                f"Partitions {busy} of {topic.name} are neither UNKNOWN nor STOPPED",
            )

    async def _source_topic_configs(
        self, source: Any, name: str, excluded: PatternList
    ) -> dict[str, str]:
        """The source's topic-level overrides that a mirror topic copies."""
        spec = RequestSpec(
            DESCRIBE_CONFIGS_KEY,
            {
                "resources": [
                    {
                        "resource_type": TOPIC_RESOURCE_TYPE,
                        "resource_name": name,
                        "configuration_keys": None,
                    }
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
        )
        response = await source.retrying(lambda: source.send_to_any(spec))
        copied = {}
        for result in response.results:
            if result.error_code != ErrorCode.NONE:
                continue
            for entry in result.configs:
                if (
                    int(getattr(entry, "config_source", 0)) == TOPIC_CONFIG_SOURCE
                    and entry.value is not None
                    and entry.name in TOPIC_CONFIGS
                    and not excluded.matches(entry.name)
                ):
                    copied[entry.name] = entry.value
        return copied

    async def _create_mirror_topic(
        self, name: str, topic_id: uuid.UUID, partitions: int, configs: Mapping[str, str]
    ) -> None:
        """Create ``name`` with the source's topic id (CreateTopics v8 MirrorInfo semantics)."""
        planned = await self._broker.controller.create_topic(
            name, num_partitions=partitions, configs=configs, validate_only=True
        )
        if self._broker.snapshot.topic_by_id(topic_id) is not None:
            raise KafkaError(
                ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic id {topic_id} is used by another topic"
            )
        record = dataclasses.replace(planned, topic_id=topic_id)
        try:
            await asyncio.to_thread(self._broker.store.create_topic, record)
        except TopicExistsError as exc:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, str(exc)) from None
        await self._broker.refresh_metadata()

    async def remove_topics(
        self, mirror: str, topics: Iterable[str]
    ) -> dict[str, KafkaError | None]:
        return await self._retag(mirror, topics, self._removal)

    async def pause_topics(
        self, mirror: str, topics: Iterable[str]
    ) -> dict[str, KafkaError | None]:
        return await self._retag(mirror, topics, self._pausing)

    async def resume_topics(
        self, mirror: str, topics: Iterable[str]
    ) -> dict[str, KafkaError | None]:
        return await self._retag(mirror, topics, self._resuming)

    @staticmethod
    def _removal(mirror: str, intent: MirrorNameIntent) -> str:
        if intent is MirrorNameIntent.REMOVE:
            raise KafkaError(ErrorCode.TOPIC_NOT_IN_MIRROR, "The topic was already removed")
        return mirror + REMOVED_SUFFIX

    @staticmethod
    def _pausing(mirror: str, intent: MirrorNameIntent) -> str:
        if intent is MirrorNameIntent.PAUSE:
            raise KafkaError(ErrorCode.MIRROR_TOPIC_ALREADY_PAUSED)
        if intent is MirrorNameIntent.REMOVE:
            raise KafkaError(ErrorCode.TOPIC_NOT_IN_MIRROR, "The topic was removed")
        return mirror + PAUSED_SUFFIX

    @staticmethod
    def _resuming(mirror: str, intent: MirrorNameIntent) -> str:
        if intent is MirrorNameIntent.MIRROR:
            raise KafkaError(ErrorCode.MIRROR_TOPIC_NOT_PAUSED)
        if intent is MirrorNameIntent.REMOVE:
            raise KafkaError(ErrorCode.MIRROR_TOPIC_BEING_REMOVED)
        return mirror

    async def _retag(
        self, mirror: str, topics: Iterable[str], new_value: Any
    ) -> dict[str, KafkaError | None]:
        await self._require_mirror(mirror)
        results: dict[str, KafkaError | None] = {}
        for name in topics:
            topic = self._broker.snapshot.topics.get(name)
            try:
                if topic is None:
                    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                current = parse_mirror_name(topic.configs.get(MIRROR_NAME))
                if current.mirror is None:
                    raise KafkaError(ErrorCode.UNKNOWN_MIRROR)
                if current.mirror != mirror:
                    raise KafkaError(ErrorCode.TOPIC_NOT_IN_MIRROR)
                value = new_value(mirror, current.intent)
                await self._broker.controller.set_topic_configs(
                    name, {**topic.configs, MIRROR_NAME: value}
                )
            except KafkaError as exc:
                results[name] = exc
            else:
                results[name] = None
        return results
