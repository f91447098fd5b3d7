"""The metadata store suite: migrations, concurrent openers, CRUD, committed offsets.

It needs a ``url`` fixture naming a fresh database; test_metadata_store.py collects it on
SQLite files, test_postgres.py on a private PostgreSQL server.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, text

from mirrorsim.broker.controller.alter_partition import BrokerSession, PartitionWriter
from mirrorsim.broker.group.offset_store import CommittedOffset, TopicPartition
from mirrorsim.broker.metadata import (
    CLUSTER_DEFAULT,
    MetadataStore,
    PartitionAssignment,
    TopicExistsError,
    TopicRecord,
    UnknownTopicError,
    schema,
)
from mirrorsim.broker.metadata.ids import from_base64, to_base64
from mirrorsim.broker.metadata.migrations import MIGRATIONS, current_version, migrate
from mirrorsim.broker.metadata.models import TopicConfigsChangedError
from mirrorsim.broker.metadata.offset_store import SqlOffsetStore
from mirrorsim.broker.metadata.store import create_store_engine
from mirrorsim.broker.metadata.view import ClusterSnapshot
from mirrorsim.protocol.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)


@pytest.fixture
def store(url: str) -> MetadataStore:
    opened = MetadataStore.open(url)
    yield opened
    opened.close()


def _topic(name: str, partitions: int = 2) -> TopicRecord:
    return TopicRecord(
        name=name,
        topic_id=uuid.uuid4(),
        configs={"retention.ms": "1000"},
        partitions=tuple(
            PartitionAssignment(p, (1,), leader=1, leader_epoch=0, isr=(1,))
            for p in range(partitions)
        ),
    )


def test_migrations_are_applied_once_and_reopening_is_idempotent(url: str) -> None:
    for _ in range(3):
        store = MetadataStore.open(url)
        with store.engine.begin() as conn:
            assert current_version(conn) == len(MIGRATIONS)
            rows = conn.execute(select(schema.schema_version.c.version)).scalars().all()
            assert rows == list(range(1, len(MIGRATIONS) + 1))
            assert migrate(conn) == len(MIGRATIONS)
        store.close()


def test_a_new_migration_runs_on_an_existing_database(url: str) -> None:
    MetadataStore.open(url).close()
    applied: list[int] = []
    store = MetadataStore.open(url)
    with store.engine.begin() as conn:
        assert migrate(conn, [*MIGRATIONS, lambda c: applied.append(1)]) == len(MIGRATIONS) + 1
        assert migrate(conn, [*MIGRATIONS, lambda c: applied.append(2)]) == len(MIGRATIONS) + 1
    store.close()
    assert applied == [1]


def test_concurrent_openers_agree_on_one_cluster_id(url: str) -> None:
    ids: list[str] = []
    errors: list[BaseException] = []

    def open_and_read() -> None:
        try:
            store = MetadataStore.open(url)
            ids.append(store.ensure_cluster_id())
            store.close()
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=open_and_read) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(ids)) == 1
    assert len(ids[0]) == 22
    assert to_base64(from_base64(ids[0])) == ids[0]


def test_topic_lifecycle(store: MetadataStore) -> None:
    record = _topic("orders")
    store.create_topic(record)
    with pytest.raises(TopicExistsError):
        store.create_topic(_topic("orders"))
    assert store.topics(["orders"]) == {"orders": record}

    store.add_partitions("orders", [PartitionAssignment(2, (1,), 1, 0, (1,))])
    store.update_partition("orders", PartitionAssignment(0, (1,), 1, 5, (1,)))
    store.set_topic_configs("orders", {"mirror.name": "m1"})
    loaded = store.topics()["orders"]
    assert [p.partition for p in loaded.partitions] == [0, 1, 2]
    assert loaded.partitions[0].leader_epoch == 5
    assert loaded.configs == {"mirror.name": "m1"}

    assert store.delete_topic("orders").topic_id == record.topic_id
    assert store.topics() == {}
    with pytest.raises(UnknownTopicError):
        store.delete_topic("orders")


def test_a_conditional_config_write_refuses_configs_changed_since_read(
    store: MetadataStore,
) -> None:
    """A writer that realigned configs it read earlier must not undo a change made since
    (a RemoveTopicsFromMirror's ``.removed`` suffix, an operator's alter)."""
    store.create_topic(_topic("orders"))
    read = {"retention.ms": "1000"}
    store.set_topic_configs("orders", {"retention.ms": "1000", "mirror.name": "m1.removed"})
    with pytest.raises(TopicConfigsChangedError):
        store.set_topic_configs("orders", {"retention.ms": "7", "mirror.name": "m1"}, expected=read)
    assert store.topics()["orders"].configs == {"retention.ms": "1000", "mirror.name": "m1.removed"}
    store.set_topic_configs(
        "orders",
        {"retention.ms": "7"},
        expected={"mirror.name": "m1.removed", "retention.ms": "1000"},
    )
    assert store.topics()["orders"].configs == {"retention.ms": "7"}
    with pytest.raises(UnknownTopicError):
        store.set_topic_configs("other", {}, expected={})


def test_a_config_update_applies_to_the_stored_overrides(store: MetadataStore) -> None:
    """``update_topic_configs`` reads and writes in one transaction: it changes what is
    stored, whoever stored it, and a change that raises stores nothing."""
    store.create_topic(_topic("orders"))
    store.set_topic_configs("orders", {"retention.ms": "1000"})
    store.update_topic_configs("orders", lambda current: {**current, "segment.ms": "5"})
    assert store.topics()["orders"].configs == {"retention.ms": "1000", "segment.ms": "5"}

    def refuse(current: dict[str, str]) -> dict[str, str]:
        raise ValueError("refused")

    with pytest.raises(ValueError):
        store.update_topic_configs("orders", refuse)
    assert store.topics()["orders"].configs == {"retention.ms": "1000", "segment.ms": "5"}
    with pytest.raises(UnknownTopicError):
        store.update_topic_configs("other", dict)


def test_brokers_and_dynamic_configs_in_snapshot(store: MetadataStore) -> None:
    store.register_broker(1, "127.0.0.1", 9092, None)
    store.register_broker(2, "127.0.0.1", 9093, "rack-b")
    store.set_broker_configs(CLUSTER_DEFAULT, {"log.retention.ms": "5"})
    store.set_broker_configs("2", {"num.partitions": "3"})
    snapshot = store.snapshot()
    assert sorted(snapshot.brokers) == [1, 2]
    assert snapshot.brokers[2].rack == "rack-b"
    assert snapshot.dynamic_default_configs == {"log.retention.ms": "5"}
    assert snapshot.dynamic_broker_configs == {2: {"num.partitions": "3"}}
    store.unregister_broker(2)
    assert [b.broker_id for b in store.brokers()] == [1]


def test_acls_create_is_idempotent_and_delete_reports_matches(store: MetadataStore) -> None:
    read = AclBinding(
        ResourceType.TOPIC,
        "orders",
        PatternType.LITERAL,
        "User:a",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    write = AclBinding(
        ResourceType.TOPIC,
        "ord",
        PatternType.PREFIXED,
        "User:b",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    store.create_acls([read, write, read])
    store.create_acls([read])
    assert store.acls() == [read, write]
    by_match = AclFilter(resource_name="orders", pattern_type=PatternType.MATCH)
    assert store.acls(by_match) == [read, write]
    removed = store.delete_acls([AclFilter(principal="User:b"), AclFilter(principal="User:zz")])
    assert removed == [[write], []]
    assert store.acls() == [read]


def test_mirrors_crud(store: MetadataStore) -> None:
    store.create_mirror("m1", {"bootstrap.servers": "a:9092"})
    with pytest.raises(KeyError):
        store.create_mirror("m1", {})
    store.set_mirror_configs("m1", {"bootstrap.servers": "b:9092"})
    assert store.mirrors()["m1"].configs == {"bootstrap.servers": "b:9092"}
    assert store.delete_mirror("m1")
    assert not store.delete_mirror("m1")


async def test_offset_store_round_trip(store: MetadataStore) -> None:
    offsets = SqlOffsetStore(store)
    tp0, tp1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
    await offsets.commit("g", {tp0: CommittedOffset(10, 3, "m", 111), tp1: CommittedOffset(4)})
    await offsets.commit("g", {tp0: CommittedOffset(12, 4, None, 222)})
    await offsets.commit("h", {tp0: CommittedOffset(1)})
    loaded = await offsets.load_all()
    assert loaded["g"] == {tp0: CommittedOffset(12, 4, None, 222), tp1: CommittedOffset(4)}
    await offsets.delete("g", [tp1])
    await offsets.delete_group("h")
    assert await offsets.load_all() == {"g": {tp0: CommittedOffset(12, 4, None, 222)}}


async def test_offset_store_loads_several_groups_in_one_call(store: MetadataStore) -> None:
    offsets = SqlOffsetStore(store)
    tp = TopicPartition("orders", 0)
    for group in ("g", "h", "i"):
        await offsets.commit(group, {tp: CommittedOffset(len(group), 1, group, 5)})
    loaded = await offsets.load_groups(["g", "i", "unknown"])
    assert loaded == {
        "g": {tp: CommittedOffset(1, 1, "g", 5)},
        "i": {tp: CommittedOffset(1, 1, "i", 5)},
    }
    many = [f"group-{n}" for n in range(700)]
    await offsets.commit_many([(g, {tp: CommittedOffset(7)}) for g in many])
    assert await offsets.load_groups(many) == {g: {tp: CommittedOffset(7)} for g in many}


# the change counter: a refresh re-reads topics, configs and features only when it moved

REPLICATED = PartitionAssignment(0, (1, 2), leader=1, leader_epoch=0, isr=(1, 2))


def _seed(store: MetadataStore) -> None:
    store.register_broker(1, "127.0.0.1", 9092, None)
    store.register_broker(2, "127.0.0.1", 9093, None)
    store.create_topic(
        TopicRecord("orders", uuid.uuid4(), {"retention.ms": "1000"}, partitions=(REPLICATED,))
    )


CHANGES = {
    "create topic": lambda s: s.create_topic(_topic("payments")),
    "delete topic": lambda s: s.delete_topic("orders"),
    "add partitions": lambda s: s.add_partitions(
        "orders", [PartitionAssignment(1, (2, 1), 2, 0, (2, 1))]
    ),
    "reassign partition": lambda s: s.update_partition(
        "orders", PartitionAssignment(0, (2, 1), 2, 1, (2, 1))
    ),
    "raise leader epochs": lambda s: s.raise_leader_epochs("orders", {0: 7}),
    "topic configs": lambda s: s.set_topic_configs("orders", {"retention.ms": "5"}),
    "cluster default configs": lambda s: s.set_broker_configs(
        CLUSTER_DEFAULT, {"log.retention.ms": "5"}
    ),
    "broker configs": lambda s: s.set_broker_configs("2", {"num.partitions": "3"}),
    "feature levels": lambda s: s.alter_feature_levels(lambda _: {"mirror.version": 0}),
    "election": lambda s: PartitionWriter(s.engine).compare_and_set(
        "orders", REPLICATED, PartitionAssignment(0, (1, 2), 2, 1, (2,))
    ),
    "isr change": lambda s: PartitionWriter(s.engine).alter_isr(
        "orders",
        0,
        leader=1,
        leader_epoch=0,
        expected_isr=(1, 2),
        new_isr=(1,),
        session=BrokerSession(now_ms=0, session_timeout_ms=1),
    ),
}


def _non_broker_rows(snapshot: ClusterSnapshot) -> tuple[object, ...]:
    return (
        snapshot.topics,
        snapshot.dynamic_default_configs,
        snapshot.dynamic_broker_configs,
        snapshot.finalized_features,
    )


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_another_brokers_change_is_seen_by_a_snapshot_since_an_earlier_one(
    url: str, store: MetadataStore, change: str
) -> None:
    _seed(store)
    other_broker = MetadataStore.open(url)
    try:
        before = other_broker.snapshot()
        CHANGES[change](store)
        after = other_broker.snapshot(before)
        assert after.version > before.version
        assert _non_broker_rows(after) != _non_broker_rows(before)
        assert after == other_broker.snapshot()
    finally:
        other_broker.close()


def test_an_unchanged_store_is_not_re_read_but_its_broker_rows_are(
    url: str, store: MetadataStore
) -> None:
    _seed(store)
    other_broker = MetadataStore.open(url)
    try:
        before = other_broker.snapshot()
        store.heartbeat(1)
        store.unregister_broker(2)
        store.register_broker(3, "127.0.0.1", 9094, "rack-c")
        # rows no snapshot holds: committed offsets have their own table and readers
        store.create_acls(
            [
                AclBinding(
                    ResourceType.TOPIC,
                    "orders",
                    PatternType.LITERAL,
                    "User:a",
                    "*",
                    AclOperation.READ,
                    AclPermissionType.ALLOW,
                )
            ]
        )
        store.create_mirror("m1", {"bootstrap.servers": "a:9092"})
        after = other_broker.snapshot(before)
        assert after.version == before.version
        assert after.topics is before.topics
        assert after.brokers == {b.broker_id: b for b in other_broker.brokers()}
        assert sorted(after.brokers) == [1, 3]
        assert after == other_broker.snapshot()
    finally:
        other_broker.close()


def test_a_store_from_before_the_change_counter_gets_one(url: str) -> None:
    engine = create_store_engine(url)
    with engine.begin() as conn:
        migrate(conn, MIGRATIONS[:5])  # the versions before the change counter
    engine.dispose()
    store = MetadataStore.open(url)
    try:
        assert store.snapshot().version == 0
        store.create_topic(_topic("orders"))
        assert store.snapshot().version == 1
    finally:
        store.close()


def test_a_store_from_before_broker_epochs_gets_them(url: str) -> None:
    """A brokers table of the old shape (no broker_epoch, no fenced) is extended in place;
    its rows read as unfenced, and every registration gets a new, never reused epoch."""
    engine = create_store_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TABLE brokers (broker_id INTEGER PRIMARY KEY, host VARCHAR(255) NOT "
                "NULL, port INTEGER NOT NULL, rack VARCHAR(255), registered_at BIGINT NOT "
                "NULL, heartbeat_at BIGINT NOT NULL)"
            )
        )
        conn.execute(text("INSERT INTO brokers VALUES (7, 'h', 1, NULL, 0, 0)"))
        migrate(conn, MIGRATIONS[:6])
    engine.dispose()
    store = MetadataStore.open(url)
    try:
        (old,) = store.brokers()
        assert (old.broker_id, old.broker_epoch, old.fenced) == (7, 0, False)
        first = store.register_broker(1, "127.0.0.1", 9092, None)
        store.unregister_broker(1, first)
        second = store.register_broker(1, "127.0.0.1", 9092, None)
        assert 0 < first < second
        row = next(b for b in store.brokers() if b.broker_id == 1)
        assert (row.broker_epoch, row.fenced) == (second, True)
        assert not store.heartbeat(1, first)
        assert store.heartbeat(1, second)
    finally:
        store.close()


def _create(store: MetadataStore, n: int) -> None:
    if f"t{n}" not in store.topics([f"t{n}"]):
        store.create_topic(_topic(f"t{n}"))


def _if_topic_exists(write: Callable[[MetadataStore, str], object]) -> Callable[..., None]:
    def step(store: MetadataStore, n: int) -> None:
        if f"t{n}" in store.topics([f"t{n}"]):
            write(store, f"t{n}")

    return step


STEPS: dict[str, Callable[[MetadataStore, int], object]] = {
    "create": _create,
    "delete": _if_topic_exists(lambda s, name: s.delete_topic(name)),
    "configs": _if_topic_exists(lambda s, name: s.set_topic_configs(name, {"a": name})),
    "epochs": _if_topic_exists(lambda s, name: s.raise_leader_epochs(name, {1: 3})),
    "partition": _if_topic_exists(
        lambda s, name: s.update_partition(name, PartitionAssignment(0, (2,), 2, 4, (2,)))
    ),
    "recreate": _if_topic_exists(
        lambda s, name: (s.delete_topic(name), s.create_topic(_topic(name)))
    ),
    "config update": _if_topic_exists(
        lambda s, name: s.update_topic_configs(name, lambda configs: {**configs, "b": name})
    ),
    "add partitions": _if_topic_exists(
        lambda s, name: s.add_partitions(
            name,
            [PartitionAssignment(len(s.topics([name])[name].partitions), (1,), 1, 0, (1,))],
        )
    ),
    "broker configs": lambda s, n: s.set_broker_configs(str(n % 3 or ""), {"x": str(n)}),
    "register": lambda s, n: s.register_broker(n, "127.0.0.1", 9000 + n, None),
    "heartbeat": lambda s, n: s.heartbeat(n),
    "unregister": lambda s, n: s.unregister_broker(n),
}


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(st.tuples(st.sampled_from(sorted(STEPS)), st.integers(0, 3)), max_size=8))
def test_a_chain_of_snapshots_since_the_last_always_equals_a_full_read(
    store: MetadataStore, steps: list[tuple[str, int]]
) -> None:
    seen = store.snapshot()
    for name, n in steps:
        STEPS[name](store, n)
        seen = store.snapshot(seen)
        assert seen == store.snapshot()
