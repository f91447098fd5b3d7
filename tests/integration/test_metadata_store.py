"""The metadata store on SQLite: migrations, concurrent openers, CRUD, committed offsets."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from mirrorsim.broker.auth.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
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
from mirrorsim.broker.metadata.offset_store import SqlOffsetStore


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A fresh database: here a SQLite file; test_postgres.py runs this suite again on a
    private PostgreSQL server by overriding this fixture."""
    return f"sqlite:///{tmp_path / 'metadata.db'}"


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
