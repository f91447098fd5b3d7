"""One metadata sync cycle of one mirror: read both clusters, apply the pure diffs.

Theory of operation. The cycle first checks the source cluster id (a mismatch halts the
cycle: syncing another cluster's topics, offsets and ACLs would corrupt the destination),
then runs three stages, each reading its own views right before diffing them:

- topics: Metadata and DescribeConfigs on the source, for the mirror's topics only; the
  destination side is this broker's metadata snapshot. Only UNKNOWN_TOPIC_OR_PARTITION
  (or no answer at all) means deleted: a topic the source reports with any other error
  is left alone for the cycle rather than stopped. Operations are applied locally
  through the metadata controller (a created mirror topic keeps the source topic id);
- consumer group offsets: ListGroups and OffsetFetch on both clusters over the wire
  (OffsetFetch v8+ batches every group a coordinator owns into one request); commits go
  through the destination's group coordinator with OffsetCommit, as Kafka's Admin does.
  Share groups the same way with DescribeShareGroupOffsets (their share-partition start
  offsets) and AlterShareGroupOffsets; a cluster that does not serve
  DescribeShareGroupOffsets leaves its share groups unread, and they are not synced;
- ACLs: DescribeAcls on the source against the destination's ACL store.

The stages are independent (the group stage syncs the topics that were MIRRORING when
the cycle started, whatever the topic stage does to them), so once the group offsets of
both clusters are read, the group commits (destination work), the topic stage (whose
DescribeConfigs is the source's largest answer) and the ACL stage run concurrently: a
first cycle that commits hundreds of groups no longer waits for the source's topic view
before starting them. The group reads go first because a source connection answers one
request at a time, and they would otherwise queue behind that DescribeConfigs.

A failure inside a stage is logged and counted under that stage's metric and does not
stop the other stages; a failure of one operation (one topic, one group) does not stop
the others. Destination reads happen after the source reads, so a cycle never acts on a
destination view older than the source view it compares with.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from mirrorsim.broker.config import MIRROR_NAME, MIRROR_STOP_REASON, TOPIC_CONFIGS
from mirrorsim.broker.metadata.alter_ops import AlterConfigOp
from mirrorsim.broker.metadata.controller import MetadataController
from mirrorsim.broker.metadata.mirror_source_clusters import MirrorSourceClusters
from mirrorsim.broker.metadata.models import TopicExistsError
from mirrorsim.broker.metadata.store import MetadataStore
from mirrorsim.broker.metadata.view import ClusterSnapshot
from mirrorsim.broker.metrics.mirror import SyncError
from mirrorsim.client.admin import Admin
from mirrorsim.client.admin_types import ConfigResource, ConfigResourceType, ConsumerGroupListing
from mirrorsim.client.cluster import ClusterClient, RequestSpec, versions_we_have
from mirrorsim.client.errors import raise_for_error
from mirrorsim.coordinator.state_machine import MirrorNameIntent, parse_mirror_name
from mirrorsim.coordinator.sync import (
    AclScope,
    AclSyncOperation,
    AlterTopicConfigs,
    ClusterIdCheck,
    CommitGroupOffsets,
    CreateAcls,
    CreateMirrorTopic,
    CreatePartitions,
    DeleteAcls,
    GroupConflict,
    GroupSyncPlan,
    GroupType,
    GroupView,
    MirrorSyncFilters,
    MirrorTopic,
    MirrorTopicStatus,
    PatternList,
    StopMirrorPartitions,
    StopReason,
    TopicOperation,
    TopicPartition,
    TopicView,
    check_source_cluster_id,
    diff_acls,
    diff_groups,
    diff_topics,
    topic_overrides,
)
from mirrorsim.protocol.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    AlterConfigOpType,
    PatternType,
    ResourceType,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.uuids import ZERO_UUID

log = logging.getLogger(__name__)

StageResult = TypeVar("StageResult")

OFFSET_COMMIT_KEY = 8
OFFSET_FETCH_KEY = 9
FIND_COORDINATOR_KEY = 10
DESCRIBE_SHARE_GROUP_OFFSETS_KEY = 90
ALTER_SHARE_GROUP_OFFSETS_KEY = 91
FIRST_DESCRIBE_OF_ALL_SHARE_OFFSETS = 1
GROUP_KEY_TYPE = 0
FIRST_BATCHED_OFFSET_FETCH = 8
GROUPS_PER_OFFSET_FETCH = 200
INACTIVE_GROUP_STATES = frozenset({"", "empty", "dead"})
_STATUS_FOR_INTENT = {
    MirrorNameIntent.MIRROR: MirrorTopicStatus.MIRRORING,
    MirrorNameIntent.PAUSE: MirrorTopicStatus.PAUSED,
    MirrorNameIntent.REMOVE: MirrorTopicStatus.STOPPED,
}
_COORDINATOR_MOVED = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)


@runtime_checkable
class SyncDestination(Protocol):
    """What a sync cycle needs of the destination broker it runs in: the metadata it
    reads, the store and controller it writes through, and a refresh to see its writes."""

    @property
    def snapshot(self) -> ClusterSnapshot: ...

    @property
    def store(self) -> MetadataStore: ...

    @property
    def controller(self) -> MetadataController: ...

    async def refresh_metadata(self) -> None: ...


class MirrorTopicStopper(Protocol):
    """Moves a mirror topic's partitions to STOPPED after its source topic went away."""

    async def stop_mirror_topic(self, mirror: str, topic: str, reason: StopReason) -> None: ...


@dataclass
class SyncCycleReport:
    """What one cycle of one mirror saw and did (returned by ``refresh_now``)."""

    mirror: str
    source_cluster_id: str | None = None
    cluster_id_check: ClusterIdCheck | None = None
    topic_operations: list[TopicOperation] = field(default_factory=list)
    group_commits: list[CommitGroupOffsets] = field(default_factory=list)
    group_conflicts: list[GroupConflict] = field(default_factory=list)
    skipped_active_groups: list[str] = field(default_factory=list)
    unread_groups: list[str] = field(default_factory=list)
    acl_operations: list[AclSyncOperation] = field(default_factory=list)
    errors: collections.Counter[SyncError] = field(default_factory=collections.Counter)

    @property
    def halted(self) -> bool:
        return self.cluster_id_check is not None and self.cluster_id_check.halts_sync


def mirror_topics_of(mirror: str, topics: Mapping[str, Any]) -> list[MirrorTopic]:
    """The destination topics whose ``mirror.name`` names ``mirror``, with their status;
    a topic the mirror stopped itself (``mirror.stop.reason``) is STOPPED."""
    found = []
    for name, record in topics.items():
        parsed = parse_mirror_name(record.configs.get(MIRROR_NAME))
        if parsed.mirror == mirror:
            status = _STATUS_FOR_INTENT[parsed.intent]
            if record.configs.get(MIRROR_STOP_REASON):
                status = MirrorTopicStatus.STOPPED
            found.append(MirrorTopic(name, status))
    return found


def still_mirroring(
    at_start: Iterable[MirrorTopic], now: Iterable[MirrorTopic]
) -> list[MirrorTopic]:
    """The cycle's topics with their status now: MIRRORING only if they were when the
    cycle started (the source was read for those) and still are (a remove or pause that
    landed while the source answered is honoured at once). A topic gone from the
    destination meanwhile counts as STOPPED, so it is neither synced nor recreated."""
    current = {t.name: t.status for t in now}
    return [
        MirrorTopic(t.name, current.get(t.name, MirrorTopicStatus.STOPPED))
        if t.status is MirrorTopicStatus.MIRRORING
        else t
        for t in at_start
    ]


def to_broker_binding(binding: Any) -> AclBinding:
    """The client's AclBinding (Admin's field order) as the broker's."""
    return AclBinding(
        ResourceType(int(binding.resource_type)),
        binding.resource_name,
        PatternType(int(binding.pattern_type)),
        binding.principal,
        binding.host,
        AclOperation(int(binding.operation)),
        AclPermissionType(int(binding.permission_type)),
    )


def exact_filter(binding: AclBinding) -> AclFilter:
    return AclFilter(
        binding.resource_type,
        binding.resource_name,
        binding.pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )


class MirrorSyncExecutor:
    """Runs cycles against one destination broker. What a mirror's sync must remember (its
    source cluster id, the topics it stopped) is in the metadata store, so any broker that
    becomes the mirror's coordinator carries on from it."""

    def __init__(
        self,
        broker: SyncDestination,
        *,
        destination_admin: Callable[[], Awaitable[Admin]],
        destination_committers: Callable[[], Awaitable[list[ClusterClient]]],
        stopper: MirrorTopicStopper,
        record_error: Callable[[SyncError], None],
    ) -> None:
        self._broker = broker
        self._destination_admin = destination_admin
        self._destination_committers = destination_committers
        self._stopper = stopper
        self._record_error = record_error
        self._source_clusters = MirrorSourceClusters(broker.store)

    async def run_cycle(
        self, mirror: str, mirror_config: Mapping[str, str], source: Admin
    ) -> SyncCycleReport:
        report = SyncCycleReport(mirror)
        filters = MirrorSyncFilters.from_mirror_config(mirror_config)
        mirror_topics = mirror_topics_of(mirror, self._broker.snapshot.topics)
        synced = [t.name for t in mirror_topics if t.status is MirrorTopicStatus.MIRRORING]
        metadata = await source.cluster.retrying(lambda: source.cluster.refresh_metadata(synced))
        if not await self._check_cluster_id(report, metadata.cluster_id):
            return report
        group_plan = await self._stage(
            report,
            SyncError.CONSUMER_GROUP_OFFSET,
            lambda: self._plan_groups(report, source, mirror_topics, filters.groups_include),
        )
        await asyncio.gather(
            self._stage(
                report,
                SyncError.CONSUMER_GROUP_OFFSET,
                lambda: self._commit_group_plan(report, group_plan),
            ),
            self._stage(
                report,
                SyncError.METADATA_REFRESH,
                lambda: self._sync_topics(report, source, metadata, mirror_topics, filters),
            ),
            self._stage(report, SyncError.ACL, lambda: self._sync_acls(report, source, filters)),
        )
        return report

    async def _check_cluster_id(self, report: SyncCycleReport, observed: str | None) -> bool:
        """Against the id stored for the mirror, so a restart or a coordinator move keeps
        the guard; the first id seen is stored (the first writer among brokers wins)."""
        mirror = report.mirror
        expected = (await asyncio.to_thread(self._source_clusters.cluster_ids)).get(mirror)
        check = check_source_cluster_id(expected, observed)
        if check is ClusterIdCheck.FIRST_SEEN and observed is not None:
            try:
                expected = await asyncio.to_thread(self._source_clusters.record, mirror, observed)
            except KeyError:
                log.info("mirror %s was deleted during its sync cycle; the cycle ends", mirror)
                return False
            if expected != observed:
                check = check_source_cluster_id(expected, observed)
            else:
                log.info("mirror %s: source cluster id %s", mirror, observed)
        report.source_cluster_id = observed
        report.cluster_id_check = check
        if check.halts_sync:
            log.error(
                "mirror %s: source cluster id is %s but the mirror was syncing from %s; "
                "metadata sync of this mirror is halted until the source is the same cluster "
                "again (check bootstrap.servers)",
                mirror,
                observed,
                expected,
            )
            self._fail(report, SyncError.METADATA_REFRESH)
            return False
        return True

    def _fail(self, report: SyncCycleReport, kind: SyncError) -> None:
        report.errors[kind] += 1
        self._record_error(kind)

    async def _stage(
        self, report: SyncCycleReport, kind: SyncError, work: Callable[[], Awaitable[StageResult]]
    ) -> StageResult | None:
        """The stage's result, or None once its failure is logged and counted. ``work``
        makes the stage's coroutine only when the stage runs: a cycle cancelled before a
        gathered stage starts (the mirror's job stopping) leaves no coroutine unawaited."""
        try:
            return await work()
        except Exception:
            log.exception("mirror %s: %s stage failed", report.mirror, kind.name.lower())
            self._fail(report, kind)
            return None

    # -- topics --------------------------------------------------------------------------

    async def _sync_topics(
        self,
        report: SyncCycleReport,
        source: Admin,
        metadata: Any,
        mirror_topics: list[MirrorTopic],
        filters: MirrorSyncFilters,
    ) -> None:
        present = {
            name: info
            for name, info in metadata.topics.items()
            if info.error == ErrorCode.NONE and info.topic_id is not None
        }
        unsure = {
            name
            for name, info in metadata.topics.items()
            if name not in present and info.error != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        }
        if unsure:
            log.warning(
                "mirror %s: source metadata of %s is unavailable; not synced this cycle",
                report.mirror,
                sorted(unsure),
            )
            mirror_topics = [t for t in mirror_topics if t.name not in unsure]
        try:
            configs = await self._source_overrides(source, sorted(present))
        except KafkaError as exc:
            # Without the source's configs the diff would read "no overrides" and delete
            # the destination's, so the topic stage waits for the next cycle; the refusal
            # is a topic configuration sync error (the source's ACLs, say), not a refresh.
            log.warning(
                "mirror %s: source topic configs unavailable (%s); topics not synced this cycle",
                report.mirror,
                exc,
            )
            self._fail(report, SyncError.TOPIC_CONFIG)
            return
        source_views = [
            TopicView(name, info.topic_id, len(info.partitions), configs.get(name, {}))
            for name, info in present.items()
        ]
        snapshot = self._broker.snapshot.topics
        mirror_topics = still_mirroring(mirror_topics, mirror_topics_of(report.mirror, snapshot))
        destination_views = [
            TopicView(t.name, t.topic_id, len(t.partitions), t.configs)
            for t in (snapshot.get(m.name) for m in mirror_topics)
            if t is not None
        ]
        operations = diff_topics(
            source_views, destination_views, mirror_topics, filters.topic_config_exclude
        )
        read = {view.name: view.configs for view in destination_views}
        realigned: dict[str, tuple[AlterTopicConfigs, Mapping[str, str], dict[str, str]]] = {}
        for operation in operations:
            is_config = isinstance(operation, AlterTopicConfigs)
            try:
                if isinstance(operation, AlterTopicConfigs):
                    base = read[operation.name]
                    realigned[operation.name] = (
                        operation,
                        base,
                        await self._realigned_topic_configs(operation, base),
                    )
                    continue
                await self._apply_topic_operation(report.mirror, operation)
            except Exception:
                log.exception("mirror %s: %s failed", report.mirror, operation)
                self._fail(
                    report, SyncError.TOPIC_CONFIG if is_config else SyncError.METADATA_REFRESH
                )
            else:
                log.info("mirror %s: applied %s", report.mirror, operation)
                report.topic_operations.append(operation)
        if realigned:
            await self._write_topic_configs(report, realigned)

    async def _source_overrides(
        self, source: Admin, topics: list[str]
    ) -> dict[str, dict[str, str]]:
        """Topic-level overrides of names this broker knows; an unknown name (a newer
        source) could never be set here and would fail the topic's sync every cycle."""
        if not topics:
            return {}
        described = await source.describe_configs(
            ConfigResource(ConfigResourceType.TOPIC, name) for name in topics
        )
        return {
            resource.name: {
                name: value
                for name, value in topic_overrides(entries.values()).items()
                if name in TOPIC_CONFIGS
            }
            for resource, entries in described.items()
        }

    async def _apply_topic_operation(self, mirror: str, operation: TopicOperation) -> None:
        controller = self._broker.controller
        if isinstance(operation, CreateMirrorTopic):
            await self._create_mirror_topic(mirror, operation)
        elif isinstance(operation, CreatePartitions):
            await controller.create_partitions(operation.name, operation.new_total)
        elif isinstance(operation, StopMirrorPartitions):
            await self._stopper.stop_mirror_topic(mirror, operation.name, operation.reason)

    async def _realigned_topic_configs(
        self, operation: AlterTopicConfigs, base: Mapping[str, str]
    ) -> dict[str, str]:
        """The topic's overrides ``base`` (those the diff read) after ``operation``,
        validated by the controller with IncrementalAlterConfigs semantics (raises its
        KafkaError)."""
        ops = [AlterConfigOp(n, AlterConfigOpType.SET, v) for n, v in sorted(operation.set.items())]
        ops += [AlterConfigOp(n, AlterConfigOpType.DELETE, None) for n in sorted(operation.delete)]
        await self._broker.controller.alter_topic_configs(operation.name, ops, validate_only=True)
        updated = dict(base)
        updated.update(operation.set)
        for name in operation.delete:
            updated.pop(name, None)
        return updated

    async def _write_topic_configs(
        self,
        report: SyncCycleReport,
        realigned: Mapping[str, tuple[AlterTopicConfigs, Mapping[str, str], dict[str, str]]],
    ) -> None:
        """Every validated realignment of the cycle written together, then one metadata
        refresh (``set_configs_of_topics``): a cycle that realigns hundreds of topics costs
        one worker thread and one refresh, and moves the store's change counter in one
        burst, so the broker's periodic refreshes in between re-read the store once
        rather than after every topic.

        Each write is conditional on the overrides the diff read: a topic removed or
        paused (``mirror.name``) or altered while the source was answering has moved on,
        and writing the realignment computed before would undo that change (put back the
        plain ``mirror.name`` of a removed topic, or drop an operator's alter on a topic
        that is now the destination's). Such a topic is left for the next cycle, which
        syncs it only if it is still MIRRORING."""
        outcomes = await self._broker.controller.set_configs_of_topics(
            {name: configs for name, (_, _, configs) in realigned.items()},
            expected={name: base for name, (_, base, _) in realigned.items()},
        )
        for name, (operation, _, _) in realigned.items():
            error = outcomes[name]
            if error is not None and error.code == ErrorCode.INVALID_UPDATE_VERSION:
                log.info(
                    "mirror %s: topic %s changed during the cycle; not realigned",
                    report.mirror,
                    name,
                )
            elif error is not None:
                log.warning("mirror %s: %s failed: %s", report.mirror, operation, error)
                self._fail(report, SyncError.TOPIC_CONFIG)
            else:
                log.info("mirror %s: applied %s", report.mirror, operation)
                report.topic_operations.append(operation)

    async def _create_mirror_topic(self, mirror: str, operation: CreateMirrorTopic) -> None:
        """CreateTopics with the source topic id (the CreateTopics v8 MirrorInfo meaning)."""
        planned = await self._broker.controller.create_topic(
            operation.name,
            num_partitions=operation.partitions,
            configs=dict(operation.configs),
            validate_only=True,
        )
        if self._broker.snapshot.topic_by_id(operation.topic_id) is not None:
            raise KafkaError(
                ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic id {operation.topic_id} is taken"
            )
        record = dataclasses.replace(
            planned,
            topic_id=operation.topic_id,
            configs={**planned.configs, MIRROR_NAME: mirror},
        )
        try:
            await asyncio.to_thread(self._broker.store.create_topic, record)
        except TopicExistsError as exc:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, str(exc)) from None
        await self._broker.refresh_metadata()

    # -- consumer group offsets ----------------------------------------------------------

    async def _plan_groups(
        self,
        report: SyncCycleReport,
        source: Admin,
        mirror_topics: list[MirrorTopic],
        include: PatternList,
    ) -> GroupSyncPlan | None:
        """Both clusters' group offsets read and diffed; conflicts and skipped groups are
        reported here, the commits are left to ``_commit_group_plan``."""
        synced = {t.name for t in mirror_topics if t.status is MirrorTopicStatus.MIRRORING}
        if not synced:
            return None
        source_listings = [
            g for g in await source.list_consumer_groups() if include.matches(g.group_id)
        ]
        if not source_listings:
            return None
        source_topics = source.cluster.metadata.topics
        source_groups = await read_group_views(
            source.cluster,
            source_listings,
            {n: tuple(t.partitions) for n, t in source_topics.items() if n in synced},
            {info.topic_id: n for n, info in source_topics.items()},
        )
        destination = await self._destination_admin()
        wanted = {g.group_id for g in source_listings}
        destination_listings = [
            g for g in await destination.list_consumer_groups() if g.group_id in wanted
        ]
        listed = {g.group_id for g in destination_listings}
        destination_listings += [
            _stored_share_group(g.group_id)
            for g in source_listings
            if g.group_id not in listed and _group_type(g).is_share
        ]
        destination_topics = self._broker.snapshot.topics
        destination_groups = await read_group_views(
            destination.cluster,
            destination_listings,
            {
                n: tuple(p.partition for p in t.partitions)
                for n, t in destination_topics.items()
                if n in synced
            },
            {t.topic_id: n for n, t in destination_topics.items()},
        )
        plan = diff_groups(source_groups, destination_groups, mirror_topics, include)
        report.group_conflicts.extend(plan.conflicts)
        report.skipped_active_groups.extend(plan.skipped_active)
        report.unread_groups.extend(plan.unread)
        for conflict in plan.conflicts:
            log.warning("mirror %s: %s", report.mirror, conflict.message)
            self._fail(report, SyncError.CONSUMER_GROUP_OFFSET)
        for skipped in plan.skipped_active:
            log.info(
                "mirror %s: group %s has members on the destination; offsets not synced",
                report.mirror,
                skipped,
            )
        if plan.unread:
            log.warning(
                "mirror %s: offsets of %s could not be read (a cluster without "
                "DescribeShareGroupOffsets); not synced",
                report.mirror,
                ", ".join(plan.unread),
            )
        return plan

    async def _commit_group_plan(self, report: SyncCycleReport, plan: GroupSyncPlan | None) -> None:
        """The plan's commits on the partitions of topics still MIRRORING after a metadata
        refresh: once a topic is removed its consumers commit on the destination, and a
        source offset committed there would skip records produced after the failover."""
        if plan is None or not plan.commits:
            return
        await self._broker.refresh_metadata()
        synced = {
            t.name
            for t in mirror_topics_of(report.mirror, self._broker.snapshot.topics)
            if t.status is MirrorTopicStatus.MIRRORING
        }
        commits = [
            dataclasses.replace(
                commit,
                offsets={tp: o for tp, o in commit.offsets.items() if tp.topic in synced},
            )
            for commit in plan.commits
        ]
        commits = [commit for commit in commits if commit.offsets]
        if commits:
            await self._commit_all(report, await self._destination_committers(), commits)

    async def _commit_all(
        self,
        report: SyncCycleReport,
        committers: list[ClusterClient],
        commits: Iterable[CommitGroupOffsets],
    ) -> None:
        """OffsetCommit (AlterShareGroupOffsets for a share group) per group straight to its
        coordinator, found for all groups in one FindCoordinator; one commit in flight per
        committer client.

        A broker handles one request of a connection at a time, each OffsetCommit waiting
        for its offsets to be stored, so commits over one connection cost a store write
        each, one after the other. Over several connections they reach the coordinator
        together and it stores them in one transaction (``BatchedOffsetStore``).
        """
        wanted = list(commits)
        coordinators = await _find_coordinators(committers[0], [c.group_id for c in wanted])
        topic_ids = {name: t.topic_id for name, t in self._broker.snapshot.topics.items()}
        idle: asyncio.Queue[ClusterClient] = asyncio.Queue()
        for committer in committers:
            idle.put_nowait(committer)

        async def commit_one(commit: CommitGroupOffsets) -> None:
            cluster = await idle.get()
            try:
                if commit.group_type.is_share:
                    await _alter_share_offsets(cluster, coordinators[commit.group_id], commit)
                else:
                    await _commit_offsets(cluster, coordinators[commit.group_id], commit, topic_ids)
            except Exception:
                log.exception(
                    "mirror %s: committing offsets of group %s failed",
                    report.mirror,
                    commit.group_id,
                )
                self._fail(report, SyncError.CONSUMER_GROUP_OFFSET)
            else:
                report.group_commits.append(commit)
            finally:
                idle.put_nowait(cluster)

        await asyncio.gather(*(commit_one(commit) for commit in wanted))
        report.group_commits.sort(key=lambda commit: commit.group_id)

    # -- ACLs ----------------------------------------------------------------------------

    def _acl_scope(self, mirror: str) -> AclScope:
        topics = self._broker.snapshot.topics
        return AclScope.of(mirror_topics_of(mirror, topics), topics)

    async def _sync_acls(
        self, report: SyncCycleReport, source: Admin, filters: MirrorSyncFilters
    ) -> None:
        """Only the bindings of the mirror's MIRRORING topics (``AclScope``), with the
        scope taken after both ACL sets are read: a topic removed or paused while the
        source answered is already the destination's. When the diff finds work, the
        scope is taken again after a metadata refresh, so a remove that reached the store
        before this broker's periodic refresh is seen too."""
        source_acls = [to_broker_binding(b) for b in await source.describe_acls()]
        store = self._broker.store
        destination_acls = await asyncio.to_thread(store.acls)
        operations = diff_acls(
            source_acls, destination_acls, filters.acl_include, self._acl_scope(report.mirror)
        )
        if operations:
            await self._broker.refresh_metadata()
            operations = diff_acls(
                source_acls, destination_acls, filters.acl_include, self._acl_scope(report.mirror)
            )
        for operation in operations:
            try:
                if isinstance(operation, CreateAcls):
                    await asyncio.to_thread(store.create_acls, operation.bindings)
                elif isinstance(operation, DeleteAcls):
                    await asyncio.to_thread(
                        store.delete_acls, [exact_filter(b) for b in operation.bindings]
                    )
            except Exception:
                log.exception("mirror %s: %s failed", report.mirror, operation)
                self._fail(report, SyncError.ACL)
            else:
                log.info("mirror %s: applied %s", report.mirror, operation)
                report.acl_operations.append(operation)


async def read_group_views(
    cluster: ClusterClient,
    listings: Iterable[ConsumerGroupListing],
    topics: Mapping[str, Collection[int]],
    names_by_id: Mapping[uuid.UUID | None, str],
) -> list[GroupView]:
    """Each listed group with its offsets on ``topics`` (the mirror's topics with their
    partitions on this cluster): committed offsets, or start offsets for share groups.

    Groups are batched per coordinator into OffsetFetch v8+ requests (share groups into
    DescribeShareGroupOffsets requests), so a cycle over 1,000 groups costs a handful of
    round trips instead of two per group.
    """
    listed = {g.group_id: g for g in listings}
    offsets: dict[str, dict[TopicPartition, int] | None] = {group_id: {} for group_id in listed}
    if listed:
        coordinators = await _find_coordinators(cluster, list(listed))
        by_node: dict[tuple[int, bool], list[str]] = collections.defaultdict(list)
        for group_id, listing in listed.items():
            by_node[coordinators[group_id], _group_type(listing).is_share].append(group_id)
        fetched = await asyncio.gather(
            *(
                _describe_share_offsets(cluster, node, chunk, topics, names_by_id)
                if is_share
                else _fetch_offsets(cluster, node, chunk, topics, names_by_id)
                for (node, is_share), group_ids in by_node.items()
                for chunk in _chunks(group_ids, GROUPS_PER_OFFSET_FETCH)
            )
        )
        for found in fetched:
            offsets.update(found)
    return [
        GroupView(
            group_id,
            _group_type(listing),
            offsets[group_id] or {},
            has_active_members=listing.state.lower() not in INACTIVE_GROUP_STATES,
            readable=offsets[group_id] is not None,
        )
        for group_id, listing in listed.items()
    ]


def _stored_share_group(group_id: str) -> ConsumerGroupListing:
    """A share group the destination does not list but may hold start offsets for: a
    share group's state outlives its membership (a restarted coordinator lists no group
    until a member joins), and "never backwards" needs the stored start offsets. Described
    like a listed one, it reads as no offsets when nothing is stored."""
    return ConsumerGroupListing(group_id, "", GroupType.SHARE.value, GroupType.SHARE.value)


def _group_type(listing: ConsumerGroupListing) -> GroupType:
    try:
        return GroupType.from_wire(listing.group_type)
    except ValueError:
        return GroupType.CLASSIC


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


async def _find_coordinators(cluster: ClusterClient, group_ids: list[str]) -> dict[str, int]:
    """Group id → coordinator node, with one FindCoordinator v4+ for all of them."""

    async def attempt() -> dict[str, int]:
        spec = RequestSpec(
            FIND_COORDINATOR_KEY,
            {"key": group_ids[0], "key_type": GROUP_KEY_TYPE, "coordinator_keys": group_ids},
        )
        response = await cluster.send_to_any(spec)
        if not hasattr(response, "coordinators"):
            return {g: (await cluster.find_coordinator(g)).node_id for g in group_ids}
        found = {}
        for entry in response.coordinators:
            raise_for_error(entry.error_code, getattr(entry, "error_message", None))
            found[entry.key] = int(entry.node_id)
        return found

    return await cluster.retrying(attempt)


async def _fetch_offsets(
    cluster: ClusterClient,
    node_id: int,
    group_ids: list[str],
    topics: Mapping[str, Collection[int]],
    names_by_id: Mapping[uuid.UUID | None, str],
) -> dict[str, dict[TopicPartition, int]]:
    async def one_request(groups: list[str]) -> dict[str, dict[TopicPartition, int]]:
        spec = RequestSpec(
            OFFSET_FETCH_KEY,
            {
                "group_id": groups[0],
                "topics": None,
                "groups": [
                    {"group_id": g, "member_id": None, "member_epoch": -1, "topics": None}
                    for g in groups
                ],
                "require_stable": False,
            },
        )
        response = await cluster.send_to_node(node_id, spec)
        answers = response.groups if hasattr(response, "groups") else [response]
        found = {}
        for group_id, answer in zip(groups, answers, strict=True):
            code = ErrorCode(int(getattr(answer, "error_code", 0)))
            if code in _COORDINATOR_MOVED:
                raise KafkaError(code, f"group {group_id}")
            raise_for_error(code, f"group {group_id}")
            found[getattr(answer, "group_id", group_id)] = _committed(
                answer.topics, topics, names_by_id
            )
        return found

    async def attempt() -> dict[str, dict[TopicPartition, int]]:
        connection = await cluster.connection(node_id)
        version = connection.max_supported(OFFSET_FETCH_KEY, versions_we_have(OFFSET_FETCH_KEY))
        if version is not None and version >= FIRST_BATCHED_OFFSET_FETCH:
            return await one_request(group_ids)
        merged: dict[str, dict[TopicPartition, int]] = {}
        for found in await asyncio.gather(*(one_request([g]) for g in group_ids)):
            merged.update(found)
        return merged

    return await cluster.retrying(attempt)


def _committed(
    response_topics: Iterable[Any],
    topics: Mapping[str, Collection[int]],
    names_by_id: Mapping[uuid.UUID | None, str],
) -> dict[TopicPartition, int]:
    committed = {}
    for t in response_topics:
        name = getattr(t, "name", None) or names_by_id.get(getattr(t, "topic_id", None), "")
        if name not in topics:
            continue
        for p in t.partitions:
            if int(p.error_code) == ErrorCode.NONE and int(p.committed_offset) >= 0:
                committed[TopicPartition(name, int(p.partition_index))] = int(p.committed_offset)
    return committed


async def _commit_offsets(
    cluster: ClusterClient,
    node_id: int,
    commit: CommitGroupOffsets,
    topic_ids: Mapping[str, uuid.UUID],
) -> None:
    """Generation -1 and no member: the simple commit Kafka's Admin sends, which the
    coordinator accepts only while the group has no members."""
    by_topic: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for tp, offset in sorted(commit.offsets.items()):
        by_topic[tp.topic].append((tp.partition, offset))
    spec = RequestSpec(
        OFFSET_COMMIT_KEY,
        {
            "group_id": commit.group_id,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": topic,
                    "topic_id": topic_ids.get(topic, ZERO_UUID),
                    "partitions": [
                        {
                            "partition_index": partition,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                        for partition, offset in partitions
                    ],
                }
                for topic, partitions in by_topic.items()
            ],
        },
    )
    target = node_id

    async def attempt() -> None:
        nonlocal target
        response = await cluster.send_to_node(target, spec)
        for t in response.topics:
            for p in t.partitions:
                code = ErrorCode(int(p.error_code))
                if code in _COORDINATOR_MOVED:
                    target = (await cluster.find_coordinator(commit.group_id)).node_id
                    raise KafkaError(code, f"group {commit.group_id}")
                raise_for_error(code, f"group {commit.group_id}")

    await cluster.retrying(attempt)


async def _describe_share_offsets(
    cluster: ClusterClient,
    node_id: int,
    group_ids: list[str],
    topics: Mapping[str, Collection[int]],
    names_by_id: Mapping[uuid.UUID | None, str],
) -> dict[str, dict[TopicPartition, int] | None]:
    """Share-partition start offsets of ``group_ids`` on ``topics``, with one
    DescribeShareGroupOffsets to their coordinator ``node_id``. From v1 the request asks
    for every partition the group has state for (null topics), as OffsetFetch does, so
    its size does not grow with the mirror's partitions times the groups; v0 names each
    of ``topics``' partitions. None for each group when the coordinator does not serve
    the API (the spec: "share group offsets won't be synchronized") or leaves the group
    out of its answer, and no offsets for a group that is gone."""

    def request(named: bool) -> RequestSpec:
        wanted = [
            {"topic_name": topic, "partitions": sorted(partitions)}
            for topic, partitions in sorted(topics.items())
        ]
        return RequestSpec(
            DESCRIBE_SHARE_GROUP_OFFSETS_KEY,
            {"groups": [{"group_id": g, "topics": wanted if named else None} for g in group_ids]},
        )

    async def attempt() -> dict[str, dict[TopicPartition, int] | None]:
        connection = await cluster.connection(node_id)
        version = connection.max_supported(
            DESCRIBE_SHARE_GROUP_OFFSETS_KEY, versions_we_have(DESCRIBE_SHARE_GROUP_OFFSETS_KEY)
        )
        if version is None:
            return dict.fromkeys(group_ids)
        response = await cluster.send_to_node(
            node_id, request(named=version < FIRST_DESCRIBE_OF_ALL_SHARE_OFFSETS)
        )
        found: dict[str, dict[TopicPartition, int] | None] = dict.fromkeys(group_ids)
        for answer in response.groups:
            code = ErrorCode(int(answer.error_code))
            if code in _COORDINATOR_MOVED:
                raise KafkaError(code, f"group {answer.group_id}")
            if code == ErrorCode.GROUP_ID_NOT_FOUND:
                found[answer.group_id] = {}
                continue
            raise_for_error(code, answer.error_message or f"group {answer.group_id}")
            found[answer.group_id] = _start_offsets(answer.topics, topics, names_by_id)
        return found

    return await cluster.retrying(attempt)


def _start_offsets(
    response_topics: Iterable[Any],
    topics: Mapping[str, Collection[int]],
    names_by_id: Mapping[uuid.UUID | None, str],
) -> dict[TopicPartition, int]:
    """The initialized share partitions' start offsets; a partition without state
    answers -1 (or an error) and has nothing to sync."""
    started = {}
    for t in response_topics:
        name = t.topic_name or names_by_id.get(t.topic_id, "")
        if name not in topics:
            continue
        for p in t.partitions:
            if int(p.error_code) == ErrorCode.NONE and int(p.start_offset) >= 0:
                started[TopicPartition(name, int(p.partition_index))] = int(p.start_offset)
    return started


async def _alter_share_offsets(
    cluster: ClusterClient, node_id: int, commit: CommitGroupOffsets
) -> None:
    """AlterShareGroupOffsets to the group's coordinator: it sets each share partition's
    start offset with nothing in flight, creating the share group if it does not exist
    (the spec: no pre-creation needed), and refuses while the group has members."""
    by_topic: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for tp, offset in sorted(commit.offsets.items()):
        by_topic[tp.topic].append((tp.partition, offset))
    spec = RequestSpec(
        ALTER_SHARE_GROUP_OFFSETS_KEY,
        {
            "group_id": commit.group_id,
            "topics": [
                {
                    "topic_name": topic,
                    "partitions": [
                        {"partition_index": partition, "start_offset": offset}
                        for partition, offset in partitions
                    ],
                }
                for topic, partitions in by_topic.items()
            ],
        },
    )
    target = node_id

    async def attempt() -> None:
        nonlocal target
        response = await cluster.send_to_node(target, spec)
        code = ErrorCode(int(response.error_code))
        if code in _COORDINATOR_MOVED:
            target = (await cluster.find_coordinator(commit.group_id)).node_id
            raise KafkaError(code, f"group {commit.group_id}")
        raise_for_error(code, response.error_message or f"group {commit.group_id}")
        for t in response.responses:
            for p in t.partitions:
                raise_for_error(
                    p.error_code,
                    p.error_message
                    or f"group {commit.group_id} {t.topic_name}-{p.partition_index}",
                )

    await cluster.retrying(attempt)
