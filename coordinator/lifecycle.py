"""The mirror management operations: validate, then change the cluster metadata.

Every broker can serve them (the metadata store is the controller). They change only
configuration (the mirror's configs, a topic's ``mirror.name``); the partition leaders
see the change on their next metadata refresh and move the partition states
(``MirrorCoordinator``). Validation and error codes follow the spec's RPC descriptions
and its Errors table; per-topic failures are returned, request-wide ones raised.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mirrorsim.broker.config import (
    MIRROR_NAME,
    MIRROR_STOP_REASON,
    TOPIC_CONFIGS,
    ConfigError,
    topic_name_error,
)
from mirrorsim.broker.metadata.controller import NewTopicRequest
from mirrorsim.broker.metadata.mirror_configs import validate_mirror_configs
from mirrorsim.broker.metadata.mirror_source_clusters import MirrorSourceClusters
from mirrorsim.broker.metadata.models import TopicRecord
from mirrorsim.client.admin import Admin
from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.client.errors import KafkaConnectionError, RequestTimedOut
from mirrorsim.coordinator.broker_ports import LifecycleHost
from mirrorsim.coordinator.mirror_cycles import cycle_error, mirrored_from_here
from mirrorsim.coordinator.source_clusters import BOOTSTRAP_SERVERS, source_client_id
from mirrorsim.coordinator.source_pool import connection_settings
from mirrorsim.coordinator.state_machine import (
    PAUSED_SUFFIX,
    REMOVED_SUFFIX,
    MirrorEvent,
    MirrorNameConfig,
    MirrorNameIntent,
    MirrorPartitionState,
    event_for_config,
    next_state,
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
FINISHES_BY_ITSELF = {
    MirrorPartitionState.PREPARING: MirrorEvent.TRUNCATION_COMPLETE,
    MirrorPartitionState.PAUSING: MirrorEvent.FETCHERS_REMOVED,
    MirrorPartitionState.STOPPING: MirrorEvent.STOP_COMPLETE,
}
"""The in-flight states and the event that ends them without any request."""
GATE_POLL_S = 0.05
"""How often an add re-reads the states of the partitions it waits on."""


def settles_into(
    state: MirrorPartitionState, mirror_name: str, target: MirrorPartitionState
) -> bool:
    """Whether a partition in ``state`` reaches ``target`` once ``mirror.name`` is
    ``mirror_name``, following the state machine's own rules: the leader applies
    ``event_for_config`` and in-flight states finish. A partition whose state is not
    known yet (UNKNOWN) is left to its leader.

    This is how PauseMirrorTopics and RemoveTopicsFromMirror check the spec's "Valid
    from" table: a FAILED partition can never pause, a STOPPED one neither (it would stay
    STOPPED under a ``.paused`` name), while a PREPARING one pauses once it mirrors.
    """
    seen: set[MirrorPartitionState] = set()
    while state not in seen:
        if state in (target, MirrorPartitionState.UNKNOWN):
            return True
        seen.add(state)
        event = event_for_config(state, mirror_name) or FINISHES_BY_ITSELF.get(state)
        if event is None:
            return False
        state = next_state(state, event)
    return False


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
    def __init__(self, broker: LifecycleHost) -> None:
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
        try:
            validate_mirror_configs(configs)
        except ConfigError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
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
            await self._broker.controller.update_topic_configs(
                topic, lambda current: _untagged(current, name)
            )
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
        requested = list(topics)
        pinned = {n: i for n, i in requested if i is not None and i.int != 0}
        names = list(dict.fromkeys(n for n, _ in requested))
        return await self._add_topics(mirror, names, pinned, excluded)

    async def _add_topics(
        self,
        mirror: str,
        names: list[str],
        pinned: Mapping[str, uuid.UUID],
        excluded: PatternList,
    ) -> dict[str, KafkaError | None]:
        """Each topic is checked on its own, but the work is done for all of them at once:
        one store read, one Metadata and one DescribeConfigs to the source, one batch of
        topic creations and one of config writes (each followed by a single metadata
        refresh). Done topic by topic, every topic cost two refreshes of the whole
        cluster view and two source round trips, which made adding many topics quadratic.

        A topic created here carries ``mirror.name`` from its first record: created plain
        and tagged by the config write, it took produce in between."""
        results: dict[str, KafkaError | None] = {}
        # The store, not this broker's snapshot: a config set a moment ago elsewhere
        # (``mirror.support.unclean.leader.election``) must survive the rewrite below.
        existing = await asyncio.to_thread(self._broker.store.topics, names)
        addable = []
        for name in names:
            try:
                await self._require_addable(mirror, existing.get(name))
            except KafkaError as exc:
                results[name] = exc
            else:
                addable.append(name)
        if not addable:
            return results
        try:
            source = await self._source_of(mirror)
            view = await source.refresh_metadata(addable)
            on_source = {}
            for name in addable:
                info = view.topics.get(name)
                if info is None or info.error != ErrorCode.NONE or info.topic_id is None:
                    results[name] = KafkaError(
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"Topic {name} does not exist on the source",
                    )
                elif name in pinned and pinned[name] != info.topic_id:
                    results[name] = KafkaError(
                        ErrorCode.UNKNOWN_TOPIC_ID,
                        f"Topic {name} has id {info.topic_id} on the source, not {pinned[name]}",
                    )
                else:
                    on_source[name] = info
            configs = await self._source_topic_configs(source, list(on_source), excluded)
            mirrored_back = await self._mirrored_back(mirror, list(on_source))
        except KafkaError as exc:
            return {name: results.get(name, exc) for name in names}
        except (KafkaConnectionError, RequestTimedOut) as exc:
            unreachable = KafkaError(
                ErrorCode.NETWORK_EXCEPTION,
                f"The source cluster of mirror {mirror} cannot be reached: {exc}",
            )
            return {name: results.get(name, unreachable) for name in names}
        for name, back in mirrored_back.items():
            results[name] = cycle_error(name, back)
            del on_source[name]
        to_create = [
            NewTopicRequest(
                name,
                num_partitions=len(info.partitions),
                configs={**configs.get(name, {}), MIRROR_NAME: mirror},
                topic_id=info.topic_id,
                internal_configs=True,
            )
            for name, info in on_source.items()
            if name not in existing
        ]
        existed = {name for name in on_source if name in existing}
        created = await self._broker.controller.create_topics(to_create)
        for request, outcome in zip(to_create, created, strict=True):
            if isinstance(outcome, KafkaError):
                results[request.name] = outcome
            else:
                existing[request.name] = outcome
        tagged = {}
        for name, info in on_source.items():
            topic = existing.get(name)
            if topic is None:
                continue
            if topic.topic_id != info.topic_id:
                results[name] = KafkaError(
                    ErrorCode.INVALID_REQUEST,
                    f"Topic {name} has id {topic.topic_id} here but {info.topic_id} on the source",
                )
                continue
            tagged[name] = functools.partial(_tagged, copied=configs.get(name, {}), mirror=mirror)
        tagging = await self._broker.controller.update_configs_of_topics(tagged)
        results.update(tagging)
        retagged = {
            name: existing[name]
            for name, error in tagging.items()
            if error is None and name in existed
        }
        results.update(await self._await_read_only(mirror, retagged))
        return {name: results[name] for name in names}

    async def _await_read_only(
        self, mirror: str, topics: Mapping[str, TopicRecord]
    ) -> dict[str, KafkaError | None]:
        """Answer an add of existing topics only once every partition's leader has closed it
        to produce (its state left UNKNOWN or STOPPED, which the leader writes after
        closing its write gate).

        A leader sees the new ``mirror.name`` at its next metadata refresh; until then a
        failed-over (STOPPED) or plain partition still takes produce, and PREPARING's LME
        cut would then remove records acknowledged after this answer. Created topics carry
        ``mirror.name`` from their first record and need no wait. A leader that has not
        caught up within a broker session (it is being fenced, or the partition has none)
        leaves its topic REQUEST_TIMED_OUT, as CreateTopics answers a creation still under
        way: the add stands and completes once a leader takes the partition."""
        if not topics:
            return {}
        pending = dict(topics)
        deadline = asyncio.get_running_loop().time() + (
            int(self._broker.config("broker.session.timeout.ms")) / 1000
        )

        async def read_only(name: str, topic: TopicRecord) -> bool:
            try:
                states = await self._coordinator.states.read(
                    mirror, name, [p.partition for p in topic.partitions]
                )
            except KafkaError:
                return False
            return all(s.state not in ADDABLE_STATES for s in states.values())

        while True:
            # all topics at once: a failback of a thousand topics is one round of reads
            closed = await asyncio.gather(*(read_only(n, t) for n, t in pending.items()))
            for name, done in zip(list(pending), closed, strict=True):
                if done:
                    del pending[name]
            if not pending or asyncio.get_running_loop().time() >= deadline:
                break
            await asyncio.sleep(GATE_POLL_S)
        return {name: None for name in topics if name not in pending} | {
            name: KafkaError(
                ErrorCode.REQUEST_TIMED_OUT,
                f"Topic {name} is added to mirror {mirror}, but a leader of its partitions "
                "still takes produce: it closes them once it sees the add",
            )
            for name in pending
        }

    async def _source_of(self, mirror: str) -> ClusterClient:
        """The mirror's source client; UNKNOWN_MIRROR when the mirror was deleted while
        the add ran (its configs, or its source cluster id record, are gone)."""
        try:
            return await self._coordinator.sources.client(mirror)
        except LookupError as exc:
            raise KafkaError(ErrorCode.UNKNOWN_MIRROR, f"Mirror {mirror} does not exist") from exc

    async def _mirrored_back(self, mirror: str, names: list[str]) -> Mapping[str, str]:
        """Of ``names``, those the source mirrors from this cluster (see
        ``mirror_cycles``), asked through a short-lived Admin on the mirror's own
        connection settings."""
        if not names:
            return {}
        settings = connection_settings(self._coordinator.sources.configs(mirror))
        async with Admin(
            settings[BOOTSTRAP_SERVERS],
            config=settings,
            client_id=f"{source_client_id(self._broker.broker_id, mirror)}-cycle-check",
        ) as source:
            return await mirrored_from_here(source, self._broker.cluster_id, names)

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

    async def _require_addable(self, mirror: str, existing: TopicRecord | None) -> None:
        if existing is None:
            return
        current = parse_mirror_name(existing.configs.get(MIRROR_NAME))
        if current.mirror not in (None, mirror) and current.intent is not MirrorNameIntent.REMOVE:
            raise KafkaError(
                ErrorCode.TOPIC_ALREADY_IN_MIRROR,
                f"Topic {existing.name} is already in mirror {current.mirror}",
            )
        if current.mirror is not None:
            await self._require_partitions_addable(current, existing)

    async def _require_partitions_addable(
        self, current: MirrorNameConfig, topic: TopicRecord
    ) -> None:
        """A topic this mirror still copies (or pauses) is already in it, as the spec's
        controller check says; one it is still removing is not yet addable again."""
        assert current.mirror is not None
        states = await self._coordinator.states.read(
            current.mirror, topic.name, [p.partition for p in topic.partitions]
        )
        busy = sorted(p for p, s in states.items() if s.state not in ADDABLE_STATES)
        if not busy:
            return
        if current.intent is not MirrorNameIntent.REMOVE:
            raise KafkaError(
                ErrorCode.TOPIC_ALREADY_IN_MIRROR,
                f"Topic {topic.name} is already in mirror {current.mirror}",
            )
        raise KafkaError(
            ErrorCode.INVALID_REQUEST,
            f"Partitions {busy} of {topic.name} are still being removed from mirror "
            f"{current.mirror} (neither UNKNOWN nor STOPPED)",
        )

    async def _source_topic_configs(
        self, source: Any, names: list[str], excluded: PatternList
    ) -> dict[str, dict[str, str]]:
        """Per topic, the source's topic-level overrides that a mirror topic copies."""
        if not names:
            return {}
        spec = RequestSpec(
            DESCRIBE_CONFIGS_KEY,
            {
                "resources": [
                    {
                        "resource_type": TOPIC_RESOURCE_TYPE,
                        "resource_name": name,
                        "configuration_keys": None,
                    }
                    for name in names
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
        )
        response = await source.retrying(lambda: source.send_to_any(spec))
        copied: dict[str, dict[str, str]] = {}
        for result in response.results:
            if result.error_code != ErrorCode.NONE:
                continue
            copied[result.resource_name] = {
                entry.name: entry.value
                for entry in result.configs
                if int(getattr(entry, "config_source", 0)) == TOPIC_CONFIG_SOURCE
                and entry.value is not None
                and entry.name in TOPIC_CONFIGS
                and not excluded.matches(entry.name)
            }
        return copied

    async def remove_topics(
        self, mirror: str, topics: Iterable[str]
    ) -> dict[str, KafkaError | None]:
        return await self._retag(mirror, topics, self._removal, MirrorPartitionState.STOPPED)

    async def pause_topics(
        self, mirror: str, topics: Iterable[str]
    ) -> dict[str, KafkaError | None]:
        return await self._retag(mirror, topics, self._pausing, MirrorPartitionState.PAUSED)

    async def resume_topics(
        self, mirror: str, topics: Iterable[str]
    ) -> dict[str, KafkaError | None]:
        return await self._retag(mirror, topics, self._resuming)

    def mirror_coordinator(self, mirror: str) -> int:
        """The broker leading ``mirror``'s ``__mirror_state`` partition: the one that syncs
        its metadata, so FindCoordinator and the sync jobs always name the same broker."""
        return int(self._broker.mirror_metadata.coordinator_of(mirror))

    async def _require_partitions_settle(
        self, mirror: str, topic: TopicRecord, value: str, target: MirrorPartitionState
    ) -> None:
        """INVALID_REQUEST unless every partition can reach ``target`` under ``value``."""
        states = await self._coordinator.states.read(
            mirror, topic.name, [p.partition for p in topic.partitions]
        )
        stuck = {
            p: s.state.name
            for p, s in sorted(states.items())
            if not settles_into(s.state, value, target)
        }
        if stuck:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                f"Partitions of {topic.name} cannot become {target.name}: "
                + ", ".join(f"{p} is {state}" for p, state in stuck.items()),
            )

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
        self,
        mirror: str,
        topics: Iterable[str],
        new_value: Any,
        target: MirrorPartitionState | None = None,
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
                if target is not None:
                    await self._require_partitions_settle(mirror, topic, value, target)
                await self._broker.controller.update_topic_configs(
                    name, functools.partial(_retagged, mirror=mirror, new_value=new_value)
                )
            except KafkaError as exc:
                results[name] = exc
            else:
                results[name] = None
        return results


def _untagged(configs: dict[str, str], mirror: str) -> dict[str, str]:
    """A deleted mirror's topic as a plain topic: without ``mirror.name`` and the stop
    reason, and every other override kept as stored (unless the topic went to another
    mirror meanwhile)."""
    if parse_mirror_name(configs.get(MIRROR_NAME)).mirror != mirror:
        return configs
    return {k: v for k, v in configs.items() if k not in (MIRROR_NAME, MIRROR_STOP_REASON)}


def _tagged(configs: dict[str, str], *, copied: Mapping[str, str], mirror: str) -> dict[str, str]:
    """An added topic: its stored overrides, the source's copied over them, and the tag;
    a stop reason from an earlier mirroring goes."""
    kept = {k: v for k, v in configs.items() if k != MIRROR_STOP_REASON}
    return {**kept, **copied, MIRROR_NAME: mirror}


def _retagged(
    configs: dict[str, str], *, mirror: str, new_value: Callable[[str, MirrorNameIntent], str]
) -> dict[str, str]:
    """``mirror.name`` moved on from the stored intent (remove, pause, resume); refused as
    the snapshot's check refuses if the topic left the mirror since."""
    current = parse_mirror_name(configs.get(MIRROR_NAME))
    if current.mirror is None:
        raise KafkaError(ErrorCode.UNKNOWN_MIRROR)
    if current.mirror != mirror:
        raise KafkaError(ErrorCode.TOPIC_NOT_IN_MIRROR)
    return {**configs, MIRROR_NAME: new_value(mirror, current.intent)}
