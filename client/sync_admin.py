"""``SyncAdmin``: the blocking face of ``Admin`` for scripts and the CLI.

Each method mirrors an ``Admin`` coroutine by name, parameters and return type, written
out rather than forwarded so that editors and type checkers see them;
``tests/unit/test_sync_admin_signatures.py`` keeps the two in step. The coroutines run on
the facade's own event loop in a daemon thread, so blocking callers never need one.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from mirrorsim.client.admin import MATCH_ALL_ACLS, Admin
from mirrorsim.client.admin_types import IsolationLevel

if TYPE_CHECKING:
    from mirrorsim.client.admin_types import (
        AclBinding,
        AclBindingFilter,
        AlterConfigOp,
        ClusterDescription,
        ConfigEntry,
        ConfigResource,
        ConsumerGroupDescription,
        ConsumerGroupListing,
        ConsumerProtocolGroupDescription,
        ElectionType,
        FeatureMetadata,
        FeatureUpdate,
        ListOffsetsResultInfo,
        MirrorDescription,
        MirrorListing,
        NewTopic,
        OffsetAndMetadata,
        QuotaAlteration,
        QuotaEntity,
        QuotaFilterComponent,
        Results,
        ScramUpsertion,
        ShareGroupDescription,
        SharePartitionOffsetInfo,
        TopicDescription,
        TopicPartition,
        TransactionListing,
    )
    from mirrorsim.client.cluster import ClusterClient

T = TypeVar("T")


class SyncAdmin:
    """Blocking facade over ``Admin``: each call returns the coroutine's result or raises its
    exception in the caller's thread.

    Unlike ``Admin``, it bootstraps when created, so a script with an unreachable address
    fails at the line that names it (``KafkaConnectionError`` after
    ``default.api.timeout.ms``). Use ``with`` or call ``close()``.
    """

    def __init__(self, admin: Admin) -> None:
        self._admin = admin
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="admin-loop", daemon=True
        )
        self._thread.start()
        try:
            self._run(admin.start())
        except BaseException:
            self._stop_loop()
            raise

    def __enter__(self) -> SyncAdmin:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def cluster(self) -> ClusterClient:
        """The wrapped admin's cluster view (brokers, controller, topic ids)."""
        return self._admin.cluster

    def start(self) -> None:
        """Blocks on :meth:`Admin.start` (bootstrap again now)."""
        self._run(self._admin.start())

    def close(self) -> None:
        """Close the admin's connections and stop the loop thread; a second call does
        nothing."""
        if self._loop.is_closed():
            return
        try:
            self._run(self._admin.close())
        finally:
            self._stop_loop()

    def create_topics(
        self, new_topics: Iterable[NewTopic], *, validate_only: bool = False
    ) -> Results[str]:
        """Blocks on :meth:`Admin.create_topics`."""
        return self._run(self._admin.create_topics(new_topics, validate_only=validate_only))

    def delete_topics(self, topics: Iterable[str]) -> Results[str]:
        """Blocks on :meth:`Admin.delete_topics`."""
        return self._run(self._admin.delete_topics(topics))

    def list_topics(self, *, include_internal: bool = False) -> list[str]:
        """Blocks on :meth:`Admin.list_topics`."""
        return self._run(self._admin.list_topics(include_internal=include_internal))

    def describe_topics(self, topics: Iterable[str]) -> dict[str, TopicDescription]:
        """Blocks on :meth:`Admin.describe_topics`."""
        return self._run(self._admin.describe_topics(topics))

    def create_partitions(
        self, new_counts: Mapping[str, int], *, validate_only: bool = False
    ) -> Results[str]:
        """Blocks on :meth:`Admin.create_partitions`."""
        return self._run(self._admin.create_partitions(new_counts, validate_only=validate_only))

    def elect_leaders(
        self, election_type: ElectionType, partitions: Iterable[TopicPartition] | None = None
    ) -> Results[TopicPartition]:
        """Blocks on :meth:`Admin.elect_leaders`."""
        return self._run(self._admin.elect_leaders(election_type, partitions))

    def describe_configs(
        self, resources: Iterable[ConfigResource]
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Blocks on :meth:`Admin.describe_configs`."""
        return self._run(self._admin.describe_configs(resources))

    def incremental_alter_configs(
        self,
        configs: Mapping[ConfigResource, Iterable[AlterConfigOp]],
        *,
        validate_only: bool = False,
    ) -> Results[ConfigResource]:
        """Blocks on :meth:`Admin.incremental_alter_configs`."""
        return self._run(
            self._admin.incremental_alter_configs(configs, validate_only=validate_only)
        )

    def describe_cluster(self) -> ClusterDescription:
        """Blocks on :meth:`Admin.describe_cluster`."""
        return self._run(self._admin.describe_cluster())

    def describe_features(self) -> FeatureMetadata:
        """Blocks on :meth:`Admin.describe_features`."""
        return self._run(self._admin.describe_features())

    def update_features(
        self, updates: Mapping[str, FeatureUpdate], *, validate_only: bool = False
    ) -> Results[str]:
        """Blocks on :meth:`Admin.update_features`."""
        return self._run(self._admin.update_features(updates, validate_only=validate_only))

    def list_offsets(
        self,
        specs: Mapping[TopicPartition, int],
        *,
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> dict[TopicPartition, ListOffsetsResultInfo]:
        """Blocks on :meth:`Admin.list_offsets`."""
        return self._run(self._admin.list_offsets(specs, isolation_level=isolation_level))

    def delete_records(
        self, before_offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        """Blocks on :meth:`Admin.delete_records`."""
        return self._run(self._admin.delete_records(before_offsets))

    def list_consumer_groups(self) -> list[ConsumerGroupListing]:
        """Blocks on :meth:`Admin.list_consumer_groups`."""
        return self._run(self._admin.list_consumer_groups())

    def list_transactions(self, states: Iterable[str] = ()) -> list[TransactionListing]:
        """Blocks on :meth:`Admin.list_transactions`."""
        return self._run(self._admin.list_transactions(states))

    def describe_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, ConsumerGroupDescription]:
        """Blocks on :meth:`Admin.describe_consumer_groups`."""
        return self._run(self._admin.describe_consumer_groups(group_ids))

    def describe_consumer_protocol_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, ConsumerProtocolGroupDescription]:
        """Blocks on :meth:`Admin.describe_consumer_protocol_groups`."""
        return self._run(self._admin.describe_consumer_protocol_groups(group_ids))

    def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Blocks on :meth:`Admin.list_consumer_group_offsets`."""
        return self._run(self._admin.list_consumer_group_offsets(group_id, partitions))

    def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]
    ) -> Results[TopicPartition]:
        """Blocks on :meth:`Admin.alter_consumer_group_offsets`."""
        return self._run(self._admin.alter_consumer_group_offsets(group_id, offsets))

    def delete_consumer_groups(self, group_ids: Iterable[str]) -> Results[str]:
        """Blocks on :meth:`Admin.delete_consumer_groups`."""
        return self._run(self._admin.delete_consumer_groups(group_ids))

    def list_share_groups(self) -> list[ConsumerGroupListing]:
        """Blocks on :meth:`Admin.list_share_groups`."""
        return self._run(self._admin.list_share_groups())

    def describe_share_groups(self, group_ids: Iterable[str]) -> dict[str, ShareGroupDescription]:
        """Blocks on :meth:`Admin.describe_share_groups`."""
        return self._run(self._admin.describe_share_groups(group_ids))

    def list_share_group_offsets(
        self, group_id: str, topics: Iterable[str] | None = None
    ) -> dict[TopicPartition, SharePartitionOffsetInfo]:
        """Blocks on :meth:`Admin.list_share_group_offsets`."""
        return self._run(self._admin.list_share_group_offsets(group_id, topics))

    def alter_share_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> Results[TopicPartition]:
        """Blocks on :meth:`Admin.alter_share_group_offsets`."""
        return self._run(self._admin.alter_share_group_offsets(group_id, offsets))

    def delete_share_group_offsets(self, group_id: str, topics: Iterable[str]) -> Results[str]:
        """Blocks on :meth:`Admin.delete_share_group_offsets`."""
        return self._run(self._admin.delete_share_group_offsets(group_id, topics))

    def delete_share_groups(self, group_ids: Iterable[str]) -> Results[str]:
        """Blocks on :meth:`Admin.delete_share_groups`."""
        return self._run(self._admin.delete_share_groups(group_ids))

    def alter_user_scram_credentials(
        self,
        upsertions: Iterable[ScramUpsertion] = (),
        deletions: Iterable[tuple[str, str]] = (),
    ) -> Results[str]:
        """Blocks on :meth:`Admin.alter_user_scram_credentials`."""
        return self._run(self._admin.alter_user_scram_credentials(upsertions, deletions))

    def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None
    ) -> dict[str, list[tuple[str, int]]]:
        """Blocks on :meth:`Admin.describe_user_scram_credentials`."""
        return self._run(self._admin.describe_user_scram_credentials(users))

    def describe_client_quotas(
        self, components: Iterable[QuotaFilterComponent] = (), *, strict: bool = False
    ) -> dict[QuotaEntity, dict[str, float]]:
        """Blocks on :meth:`Admin.describe_client_quotas`."""
        return self._run(self._admin.describe_client_quotas(components, strict=strict))

    def alter_client_quotas(
        self, alterations: Iterable[QuotaAlteration], *, validate_only: bool = False
    ) -> Results[QuotaEntity]:
        """Blocks on :meth:`Admin.alter_client_quotas`."""
        return self._run(self._admin.alter_client_quotas(alterations, validate_only=validate_only))

    def create_acls(self, bindings: Iterable[AclBinding]) -> Results[AclBinding]:
        """Blocks on :meth:`Admin.create_acls`."""
        return self._run(self._admin.create_acls(bindings))

    def describe_acls(self, acl_filter: AclBindingFilter = MATCH_ALL_ACLS) -> list[AclBinding]:
        """Blocks on :meth:`Admin.describe_acls`."""
        return self._run(self._admin.describe_acls(acl_filter))

    def delete_acls(
        self, filters: Iterable[AclBindingFilter]
    ) -> dict[AclBindingFilter, list[AclBinding]]:
        """Blocks on :meth:`Admin.delete_acls`."""
        return self._run(self._admin.delete_acls(filters))

    def create_mirror(self, name: str, configs: Mapping[str, str]) -> None:
        """Blocks on :meth:`Admin.create_mirror`."""
        return self._run(self._admin.create_mirror(name, configs))

    def add_topics_to_mirror(
        self,
        name: str,
        topics: Iterable[str],
        *,
        topic_ids: Mapping[str, uuid.UUID] | None = None,
    ) -> Results[str]:
        """Blocks on :meth:`Admin.add_topics_to_mirror`."""
        return self._run(self._admin.add_topics_to_mirror(name, topics, topic_ids=topic_ids))

    def remove_topics_from_mirror(self, name: str, topics: Iterable[str]) -> Results[str]:
        """Blocks on :meth:`Admin.remove_topics_from_mirror`."""
        return self._run(self._admin.remove_topics_from_mirror(name, topics))

    def pause_mirror_topics(self, name: str, topics: Iterable[str]) -> Results[str]:
        """Blocks on :meth:`Admin.pause_mirror_topics`."""
        return self._run(self._admin.pause_mirror_topics(name, topics))

    def resume_mirror_topics(self, name: str, topics: Iterable[str]) -> Results[str]:
        """Blocks on :meth:`Admin.resume_mirror_topics`."""
        return self._run(self._admin.resume_mirror_topics(name, topics))

    def delete_mirror(self, name: str) -> None:
        """Blocks on :meth:`Admin.delete_mirror`."""
        return self._run(self._admin.delete_mirror(name))

    def list_mirrors(self) -> list[MirrorListing]:
        """Blocks on :meth:`Admin.list_mirrors`."""
        return self._run(self._admin.list_mirrors())

    def describe_mirrors(
        self, names: Iterable[str] | None = None, *, include_authorized_operations: bool = False
    ) -> dict[str, MirrorDescription]:
        """Blocks on :meth:`Admin.describe_mirrors`."""
        return self._run(
            self._admin.describe_mirrors(
                names, include_authorized_operations=include_authorized_operations
            )
        )

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
