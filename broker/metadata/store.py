"""The cluster metadata store: the one state the brokers of a cluster share.

Every method is synchronous and short (one transaction). The broker runs them through
``asyncio.to_thread`` so the event loop never waits on the database; a thread per call
is cheap next to a SQLite fsync or a PostgreSQL round trip, and it keeps this module free
of an async driver. SQLite runs in WAL mode with a busy timeout and takes the write lock
at ``BEGIN`` (``BEGIN IMMEDIATE``), so several broker processes can share one file
without the lock-upgrade deadlocks that deferred transactions get.

PostgreSQL gets the same one-at-a-time transactions: each begins by taking one advisory
lock. Its default READ COMMITTED isolation alone would let a commit land between two
statements of one transaction, so a snapshot (partitions read, then topics and configs)
could pair one moment's leaders with another's configs, and a compare-and-set of a topic's
configs could overwrite the change it was meant to detect. SQLite never allows either.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    and_,
    bindparam,
    create_engine,
    delete,
    event,
    select,
    update,
)
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError

from mirrorsim.broker.metadata import change_counter, schema
from mirrorsim.broker.metadata.features import FinalizedFeatures
from mirrorsim.broker.metadata.ids import new_cluster_id
from mirrorsim.broker.metadata.migrations import migrate
from mirrorsim.broker.metadata.models import (
    BrokerRegistration,
    MirrorRecord,
    PartitionAssignment,
    TopicConfigsChangedError,
    TopicExistsError,
    TopicRecord,
    UnknownTopicError,
)
from mirrorsim.broker.metadata.view import ClusterSnapshot
from mirrorsim.protocol.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

SQLITE_BUSY_TIMEOUT_MS = 30_000
WAL_SWITCH_RETRY_S = 0.01
TRANSACTION_LOCK_KEY = 0x6D6972726F72
"""The advisory lock every PostgreSQL transaction takes (the bytes of "mirror")."""
CLUSTER_DEFAULT = ""
_NAMES_PER_QUERY = 500
"""Topic names per ``IN (...)`` of a partial re-read: within every backend's limit on
bound parameters."""
"""The ``broker`` key of cluster-wide dynamic broker configs (Kafka's default entity)."""


DRIVER_INSTALL_HINTS = {"psycopg": "pip install 'mirrorsim[postgres]'"}
"""Database drivers that are optional extras, and the command that installs each."""


class MetadataStoreUnavailable(ConnectionError):
    """The metadata database cannot be opened: no driver for its URL, or it is unreachable
    (a connection refused, or a process out of descriptors). A ``ConnectionError``: callers
    treat it as the I/O failure it is, retried by the next cycle and reported in one line."""


@contextmanager
def transaction(engine: Engine) -> Iterator[Connection]:
    """One transaction on ``engine``; a database that cannot be connected to or begun on
    (out of descriptors, gone) raises ``MetadataStoreUnavailable`` (statement errors
    inside stay as they are), which the broker reports in one line."""
    with contextlib.ExitStack() as stack:
        try:
            conn = stack.enter_context(engine.begin())
        except DBAPIError as exc:
            raise _unavailable(engine.url, exc) from exc
        yield conn


def _unavailable(url: URL, exc: DBAPIError) -> MetadataStoreUnavailable:
    shown = url.render_as_string(hide_password=True)
    reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
    return MetadataStoreUnavailable(f"metadata store {shown}: {reason}")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _sqlite_engine(url: str) -> Engine:
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # let SQLAlchemy's "begin" event decide
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        _enable_wal(cursor)
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _enable_wal(cursor: sqlite3.Cursor) -> None:
    """Switch the database file to WAL (persistent: later openers find it set).

    Switching needs an exclusive lock, and SQLite answers "database is locked" at once,
    without its busy handler, when another connection opens the new file at that moment
    (several brokers of one cluster starting together). The switch is retried until the
    busy timeout, as a busy handler would.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(WAL_SWITCH_RETRY_S)


def _postgresql_engine(url: str) -> Engine:
    engine = create_engine(url, pool_pre_ping=True)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({TRANSACTION_LOCK_KEY})")

    return engine


def create_store_engine(url: str) -> Engine:
    backend = make_url(url).get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(url)
    if backend == "postgresql":
        return _postgresql_engine(url)
    return create_engine(url, pool_pre_ping=True)


def _next_broker_epoch(conn: Connection) -> int:
    counter = schema.broker_epoch_counter
    last = conn.execute(select(counter.c.last_epoch).where(counter.c.id == 1)).scalar()
    if last is None:
        conn.execute(counter.insert().values(id=1, last_epoch=1))
        return 1
    conn.execute(update(counter).where(counter.c.id == 1).values(last_epoch=last + 1))
    return int(last) + 1


def _incarnation(broker_id: int, broker_epoch: int | None) -> ColumnElement[bool]:
    row = schema.brokers.c.broker_id == broker_id
    return row if broker_epoch is None else row & (schema.brokers.c.broker_epoch == broker_epoch)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in json.loads(text))


class MetadataStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str) -> MetadataStore:
        """Connect and bring the schema up to date.

        A missing driver or an unreachable database raises ``MetadataStoreUnavailable``
        with one line naming the URL (password hidden), so callers can report it as is.
        """
        try:
            store = cls(create_store_engine(url))
            with store._tx() as conn:
                migrate(conn)
        except ModuleNotFoundError as exc:
            hint = DRIVER_INSTALL_HINTS.get(exc.name or "", f"pip install {exc.name}")
            shown = make_url(url).render_as_string(hide_password=True)
            message = f"metadata store {shown} needs the {exc.name} driver: {hint}"
            raise MetadataStoreUnavailable(message) from exc
        except DBAPIError as exc:
            raise _unavailable(make_url(url), exc) from exc
        return store

    def close(self) -> None:
        self.engine.dispose()

    def _tx(self) -> contextlib.AbstractContextManager[Connection]:
        return transaction(self.engine)

    # cluster and brokers

    def ensure_cluster_id(self, proposed: str | None = None) -> str:
        """The cluster id, created from ``proposed`` (or at random) by the first caller."""
        with self._tx() as conn:
            row = conn.execute(select(schema.cluster.c.cluster_id)).first()
            if row is not None:
                return str(row[0])
            cluster_id = proposed or new_cluster_id()
            conn.execute(
                schema.cluster.insert().values(cluster_id=cluster_id, created_at=_now_ms())
            )
            return cluster_id

    def register_broker(self, broker_id: int, host: str, port: int, rack: str | None) -> int:
        """Register a new incarnation of ``broker_id``, fenced; returns its broker epoch.

        The epoch comes from one cluster-wide counter, so it grows with every registration
        of any broker and is never reused (Kafka's broker epoch is the offset of the
        registration record in the metadata log). The incarnation starts fenced: until the
        controller has taken it out of the ISRs and moved its leaderships (its log may have
        lost an unflushed tail), it must neither lead nor count as in sync.
        """
        now = _now_ms()
        with self._tx() as conn:
            values = {
                "host": host,
                "port": port,
                "rack": rack,
                "registered_at": now,
                "heartbeat_at": now,
                "broker_epoch": _next_broker_epoch(conn),
                "fenced": True,
            }
            updated = conn.execute(
                update(schema.brokers)
                .where(schema.brokers.c.broker_id == broker_id)
                .values(**values)
            ).rowcount
            if not updated:
                conn.execute(schema.brokers.insert().values(broker_id=broker_id, **values))
            return int(values["broker_epoch"])

    def heartbeat(self, broker_id: int, broker_epoch: int | None = None) -> bool:
        """Renew the session of ``broker_id`` (of that incarnation only, when given); False
        when the row is gone or belongs to a newer incarnation."""
        with self._tx() as conn:
            return bool(
                conn.execute(
                    update(schema.brokers)
                    .where(_incarnation(broker_id, broker_epoch))
                    .values(heartbeat_at=_now_ms())
                ).rowcount
            )

    def unregister_broker(self, broker_id: int, broker_epoch: int | None = None) -> None:
        """Remove the registration (of that incarnation only, when given)."""
        with self._tx() as conn:
            conn.execute(delete(schema.brokers).where(_incarnation(broker_id, broker_epoch)))

    def brokers(self) -> list[BrokerRegistration]:
        with self._tx() as conn:
            rows = conn.execute(select(schema.brokers).order_by(schema.brokers.c.broker_id))
            return [BrokerRegistration(**row._mapping) for row in rows]

    # topics and partitions

    def create_topic(self, topic: TopicRecord) -> None:
        with self._tx() as conn:
            taken = conn.execute(
                select(schema.topics.c.name).where(
                    (schema.topics.c.name == topic.name)
                    | (schema.topics.c.topic_id == str(topic.topic_id))
                )
            ).first()
            if taken is not None:
                raise TopicExistsError(f"Topic '{topic.name}' already exists.")
            conn.execute(
                schema.topics.insert().values(
                    name=topic.name,
                    topic_id=str(topic.topic_id),
                    configs=json.dumps(topic.configs, sort_keys=True),
                    created_at=_now_ms(),
                )
            )
            self._insert_partitions(conn, topic.name, topic.partitions)
            change_counter.bump(conn, topics=[topic.name])

    def delete_topic(self, name: str) -> TopicRecord:
        with self._tx() as conn:
            record = self._load_topics(conn, [name]).get(name)
            if record is None:
                raise UnknownTopicError(name)
            conn.execute(delete(schema.partitions).where(schema.partitions.c.topic == name))
            conn.execute(delete(schema.topics).where(schema.topics.c.name == name))
            change_counter.bump(conn, topics=())
            return record

    def add_partitions(self, name: str, assignments: Iterable[PartitionAssignment]) -> None:
        with self._tx() as conn:
            if name not in self._load_topics(conn, [name]):
                raise UnknownTopicError(name)
            self._insert_partitions(conn, name, tuple(assignments))
            change_counter.bump(conn, topics=[name])

    def update_partition(self, topic: str, assignment: PartitionAssignment) -> None:
        with self._tx() as conn:
            conn.execute(
                update(schema.partitions)
                .where(
                    and_(
                        schema.partitions.c.topic == topic,
                        schema.partitions.c.partition == assignment.partition,
                    )
                )
                .values(
                    replicas=json.dumps(assignment.replicas),
                    leader=assignment.leader,
                    leader_epoch=assignment.leader_epoch,
                    isr=json.dumps(assignment.isr),
                )
            )
            change_counter.bump(conn, topics=[topic])

    def raise_leader_epochs(self, topic: str, minimums: Mapping[int, int]) -> list[int]:
        """Leader epoch of each partition ≥ its minimum, in one transaction; the partitions
        whose epoch moved.

        Each row is raised with a conditional update, so a concurrent election that
        already went higher is kept and nothing else in the row is touched: a failover
        of many partitions is one write, not one compare-and-set per partition.
        """
        with self._tx() as conn:
            rows = conn.execute(
                select(schema.partitions.c.partition, schema.partitions.c.leader_epoch).where(
                    and_(
                        schema.partitions.c.topic == topic,
                        schema.partitions.c.partition.in_(list(minimums)),
                    )
                )
            ).all()
            current = {row.partition: row.leader_epoch for row in rows}
            missing = sorted(set(minimums) - set(current))
            if missing:
                raise UnknownTopicError(f"{topic} partitions {missing}")
            raised = sorted(p for p, minimum in minimums.items() if current[p] < minimum)
            if raised:
                conn.execute(
                    update(schema.partitions)
                    .where(
                        and_(
                            schema.partitions.c.topic == topic,
                            schema.partitions.c.partition == bindparam("p"),
                            schema.partitions.c.leader_epoch < bindparam("minimum"),
                        )
                    )
                    .values(leader_epoch=bindparam("minimum")),
                    [{"p": p, "minimum": minimums[p]} for p in raised],
                )
                change_counter.bump(conn, topics=[topic])
            return raised

    def set_topic_configs(
        self,
        name: str,
        configs: Mapping[str, str],
        *,
        expected: Mapping[str, str] | None = None,
    ) -> None:
        """Replace a topic's overrides wholesale (callers compute the new map).

        With ``expected``, only if the topic's overrides still equal it (else
        ``TopicConfigsChangedError``): a writer that computed ``configs`` from an older
        read must not undo a change made since, such as a RemoveTopicsFromMirror that set
        ``mirror.name`` to its ``.removed`` form.
        """
        with self._tx() as conn:
            if expected is not None:
                current = conn.execute(
                    select(schema.topics.c.configs).where(schema.topics.c.name == name)
                ).scalar_one_or_none()
                if current is None:
                    raise UnknownTopicError(name)
                if json.loads(current) != dict(expected):
                    raise TopicConfigsChangedError(name)
            updated = conn.execute(
                update(schema.topics)
                .where(schema.topics.c.name == name)
                .values(configs=json.dumps(dict(configs), sort_keys=True))
            ).rowcount
            if not updated:
                raise UnknownTopicError(name)
            change_counter.bump(conn, topics=[name])

    def update_topic_configs(
        self, name: str, change: Callable[[dict[str, str]], Mapping[str, str]]
    ) -> None:
        """Read a topic's overrides, apply ``change`` and write the result, in one
        transaction.

        Transactions run one at a time (module docstring), so a change made in between
        cannot be lost, as it is when a writer computes the new map from its metadata
        snapshot: a broker whose snapshot predates a ``retention.ms`` set through another
        broker would write the old value back with its own change. ``change`` may raise
        to leave the overrides as they are.
        """
        with self._tx() as conn:
            stored = conn.execute(
                select(schema.topics.c.configs).where(schema.topics.c.name == name)
            ).scalar_one_or_none()
            if stored is None:
                raise UnknownTopicError(name)
            current = json.loads(stored)
            updated = dict(change(dict(current)))
            if updated == current:
                return
            conn.execute(
                update(schema.topics)
                .where(schema.topics.c.name == name)
                .values(configs=json.dumps(updated, sort_keys=True))
            )
            change_counter.bump(conn, topics=[name])

    def topics(self, names: Iterable[str] | None = None) -> dict[str, TopicRecord]:
        """Topics by name; all of them when ``names`` is None. Unknown names are absent."""
        with self._tx() as conn:
            return self._load_topics(conn, None if names is None else list(names))

    def topic_configs(self, name: str) -> dict[str, str] | None:
        """One topic's config overrides, None when it does not exist: its partition rows
        are not read (a failback asks this of each of 100,000 preparing partitions)."""
        with self._tx() as conn:
            found = conn.execute(
                select(schema.topics.c.configs).where(schema.topics.c.name == name)
            ).scalar_one_or_none()
        return None if found is None else dict(json.loads(found))

    def _load_topics(self, conn: Connection, names: list[str] | None) -> dict[str, TopicRecord]:
        topic_query = select(schema.topics)
        part_query = select(schema.partitions).order_by(
            schema.partitions.c.topic, schema.partitions.c.partition
        )
        if names is not None:
            topic_query = topic_query.where(schema.topics.c.name.in_(names))
            part_query = part_query.where(schema.partitions.c.topic.in_(names))
        assignments: dict[str, list[PartitionAssignment]] = {}
        for row in conn.execute(part_query):
            assignments.setdefault(row.topic, []).append(
                PartitionAssignment(
                    partition=row.partition,
                    replicas=_ints(row.replicas),
                    leader=row.leader,
                    leader_epoch=row.leader_epoch,
                    isr=_ints(row.isr),
                )
            )
        return {
            row.name: TopicRecord(
                name=row.name,
                topic_id=uuid.UUID(row.topic_id),
                configs=json.loads(row.configs),
                partitions=tuple(assignments.get(row.name, ())),
            )
            for row in conn.execute(topic_query)
        }

    @staticmethod
    def _insert_partitions(
        conn: Connection, topic: str, assignments: tuple[PartitionAssignment, ...]
    ) -> None:
        if not assignments:
            return
        conn.execute(
            schema.partitions.insert(),
            [
                {
                    "topic": topic,
                    "partition": a.partition,
                    "replicas": json.dumps(a.replicas),
                    "leader": a.leader,
                    "leader_epoch": a.leader_epoch,
                    "isr": json.dumps(a.isr),
                }
                for a in assignments
            ],
        )

    # dynamic broker configs

    def broker_configs(self, broker: str) -> dict[str, str]:
        """Dynamic configs of one broker (its id as text) or of ``CLUSTER_DEFAULT``."""
        with self._tx() as conn:
            rows = conn.execute(
                select(schema.broker_configs.c.name, schema.broker_configs.c.value).where(
                    schema.broker_configs.c.broker == broker
                )
            )
            return {row.name: row.value for row in rows}

    def version(self) -> int:
        """The change counter alone: whether a snapshot of this version is still current."""
        with self._tx() as conn:
            return change_counter.current(conn)

    def snapshot(self, since: ClusterSnapshot | None = None) -> ClusterSnapshot:
        """Brokers, topics, dynamic broker configs and features, read in one transaction.

        ``since`` is an earlier snapshot of this store: when the change counter still
        holds its version, only the broker rows (heartbeats move every few hundred
        milliseconds) are read again and the rest of ``since`` is reused, which spares a
        large cluster's periodic refresh re-reading every partition row to find nothing.
        """
        with self._tx() as conn:
            version = change_counter.current(conn)
            brokers = {
                row.broker_id: BrokerRegistration(**row._mapping)
                for row in conn.execute(select(schema.brokers))
            }
            if since is not None and since.version == version:
                return replace(since, brokers=brokers)
            versions = change_counter.topic_versions(conn)
            topics = self._changed_topics(conn, versions, since)
            dynamic: dict[str, dict[str, str]] = {}
            for row in conn.execute(select(schema.broker_configs)):
                dynamic.setdefault(row.broker, {})[row.name] = row.value
            features = self._load_finalized_features(conn)
        return ClusterSnapshot(
            brokers=brokers,
            topics=topics,
            dynamic_default_configs=dynamic.pop(CLUSTER_DEFAULT, {}),
            dynamic_broker_configs={int(k): v for k, v in dynamic.items()},
            finalized_features=features,
            version=version,
            topic_versions=versions,
        )

    def _changed_topics(
        self,
        conn: Connection,
        versions: Mapping[str, tuple[str, int]],
        since: ClusterSnapshot | None,
    ) -> dict[str, TopicRecord]:
        """Every topic, re-reading only those whose (topic id, version) moved since
        ``since``; a topic written while this runs is read again by the next refresh,
        because its version was read first."""
        known = {} if since is None else since.topic_versions
        changed = [name for name, seen in versions.items() if known.get(name) != seen]
        if not changed:
            loaded: dict[str, TopicRecord] = {}
        elif len(changed) * 2 > len(versions):
            loaded = self._load_topics(conn, None)
        else:
            loaded = {}
            for start in range(0, len(changed), _NAMES_PER_QUERY):
                loaded.update(self._load_topics(conn, changed[start : start + _NAMES_PER_QUERY]))
        reread = set(changed)
        topics: dict[str, TopicRecord] = {}
        for name in versions:
            if name in reread:
                found = loaded.get(name)
            else:
                found = None if since is None else since.topics.get(name)
            if found is not None:
                topics[name] = found
        return topics

    def set_broker_configs(self, broker: str, configs: Mapping[str, str]) -> None:
        with self._tx() as conn:
            conn.execute(
                delete(schema.broker_configs).where(schema.broker_configs.c.broker == broker)
            )
            if configs:
                conn.execute(
                    schema.broker_configs.insert(),
                    [{"broker": broker, "name": k, "value": v} for k, v in configs.items()],
                )
            change_counter.bump(conn, topics=())

    # finalized features

    def finalized_features(self) -> FinalizedFeatures:
        with self._tx() as conn:
            return self._load_finalized_features(conn)

    def alter_feature_levels(
        self, change: Callable[[FinalizedFeatures], Mapping[str, int]]
    ) -> FinalizedFeatures:
        """Store the levels ``change(current)`` returns under the next epoch, in one
        transaction: two concurrent updates cannot both validate against the same levels.
        An exception from ``change`` leaves the store untouched."""
        table = schema.finalized_features
        with self._tx() as conn:
            current = self._load_finalized_features(conn)
            levels = change(current)
            if not levels:
                return current
            epoch = current.epoch + 1
            conn.execute(delete(table).where(table.c.name.in_(list(levels))))
            conn.execute(
                table.insert(),
                [{"name": name, "level": level, "epoch": epoch} for name, level in levels.items()],
            )
            change_counter.bump(conn, topics=())
            return self._load_finalized_features(conn)

    @staticmethod
    def _load_finalized_features(conn: Connection) -> FinalizedFeatures:
        rows = conn.execute(select(schema.finalized_features)).all()
        return FinalizedFeatures(
            stored={row.name: int(row.level) for row in rows},
            epoch=max((int(row.epoch) for row in rows), default=0),
        )

    # ACLs

    def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        """Add bindings; one that already exists is not duplicated (Kafka is idempotent)."""
        with self._tx() as conn:
            known = set(self._load_acls(conn))
            fresh = [b for b in dict.fromkeys(bindings) if b not in known]
            if fresh:
                conn.execute(schema.acls.insert(), [self._acl_row(b) for b in fresh])

    def acls(self, acl_filter: AclFilter | None = None) -> list[AclBinding]:
        with self._tx() as conn:
            bindings = self._load_acls(conn)
        return [b for b in bindings if acl_filter is None or acl_filter.matches(b)]

    def delete_acls(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """Delete what each filter matches; per filter, the bindings it removed."""
        with self._tx() as conn:
            rows = conn.execute(select(schema.acls)).all()
            matched: list[list[AclBinding]] = [[] for _ in filters]
            doomed: set[int] = set()
            for row in rows:
                binding = self._acl_binding(row._mapping)
                for i, acl_filter in enumerate(filters):
                    if acl_filter.matches(binding):
                        matched[i].append(binding)
                        doomed.add(row.id)
            if doomed:
                conn.execute(delete(schema.acls).where(schema.acls.c.id.in_(doomed)))
            return matched

    @staticmethod
    def _acl_row(binding: AclBinding) -> dict[str, Any]:
        return {
            "resource_type": int(binding.resource_type),
            "resource_name": binding.resource_name,
            "pattern_type": int(binding.pattern_type),
            "principal": binding.principal,
            "host": binding.host,
            "operation": int(binding.operation),
            "permission_type": int(binding.permission_type),
        }

    @staticmethod
    def _acl_binding(row: Mapping[str, Any]) -> AclBinding:
        return AclBinding(
            resource_type=ResourceType(row["resource_type"]),
            resource_name=row["resource_name"],
            pattern_type=PatternType(row["pattern_type"]),
            principal=row["principal"],
            host=row["host"],
            operation=AclOperation(row["operation"]),
            permission_type=AclPermissionType(row["permission_type"]),
        )

    def _load_acls(self, conn: Connection) -> list[AclBinding]:
        rows = conn.execute(select(schema.acls).order_by(schema.acls.c.id))
        return [self._acl_binding(row._mapping) for row in rows]

    # mirrors

    def create_mirror(self, name: str, configs: Mapping[str, str]) -> None:
        with self._tx() as conn:
            if conn.execute(
                select(schema.mirrors.c.name).where(schema.mirrors.c.name == name)
            ).first():
                raise KeyError(f"mirror {name} already exists")
            conn.execute(
                schema.mirrors.insert().values(
                    name=name,
                    configs=json.dumps(dict(configs), sort_keys=True),
                    created_at=_now_ms(),
                )
            )

    def set_mirror_configs(self, name: str, configs: Mapping[str, str]) -> None:
        with self._tx() as conn:
            updated = conn.execute(
                update(schema.mirrors)
                .where(schema.mirrors.c.name == name)
                .values(configs=json.dumps(dict(configs), sort_keys=True))
            ).rowcount
            if not updated:
                raise KeyError(f"unknown mirror {name}")

    def alter_mirror_configs(
        self, name: str, change: Callable[[dict[str, str]], dict[str, str]]
    ) -> dict[str, str]:
        """Replace a mirror's configs by ``change(current)`` in one transaction, so two
        concurrent alters cannot lose each other's keys; returns the new configs."""
        with self._tx() as conn:
            row = conn.execute(
                select(schema.mirrors.c.configs).where(schema.mirrors.c.name == name)
            ).first()
            if row is None:
                raise KeyError(f"unknown mirror {name}")
            configs = change(json.loads(row.configs))
            conn.execute(
                update(schema.mirrors)
                .where(schema.mirrors.c.name == name)
                .values(configs=json.dumps(configs, sort_keys=True))
            )
            return configs

    def delete_mirror(self, name: str) -> bool:
        with self._tx() as conn:
            return bool(
                conn.execute(delete(schema.mirrors).where(schema.mirrors.c.name == name)).rowcount
            )

    def mirrors(self) -> dict[str, MirrorRecord]:
        with self._tx() as conn:
            rows = conn.execute(select(schema.mirrors).order_by(schema.mirrors.c.name))
            return {
                row.name: MirrorRecord(row.name, json.loads(row.configs), row.created_at)
                for row in rows
            }
