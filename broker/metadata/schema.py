"""The metadata database tables (SQLAlchemy Core).

Lists (replicas, ISR) and config maps are JSON text so that SQLite and PostgreSQL share
one schema. Timestamps are epoch milliseconds, as Kafka writes them.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    false,
)

metadata = MetaData()

schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, primary_key=True),
    Column("applied_at", BigInteger, nullable=False),
)

cluster = Table(
    "cluster",
    metadata,
    Column("cluster_id", String(64), primary_key=True),
    Column("created_at", BigInteger, nullable=False),
)

brokers = Table(
    "brokers",
    metadata,
    Column("broker_id", Integer, primary_key=True),
    Column("host", String(255), nullable=False),
    Column("port", Integer, nullable=False),
    Column("rack", String(255)),
    Column("registered_at", BigInteger, nullable=False),
    Column("heartbeat_at", BigInteger, nullable=False),
    # the incarnation: a new value at every registration (from ``broker_epoch_counter``,
    # so it never repeats, even after an unregistration deleted the row)
    Column("broker_epoch", BigInteger, nullable=False, server_default="0"),
    # a new incarnation may hold a cut log: no leader, no ISR member until the
    # controller has moved its leaderships and unfenced it
    Column("fenced", Boolean, nullable=False, server_default=false()),
)

topics = Table(
    "topics",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("topic_id", String(36), nullable=False, unique=True),
    Column("configs", Text, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("version", BigInteger, nullable=False, server_default="0"),
)
"""``version`` grows with every change to the topic's row or its partition rows
(``change_counter.bump``): a refresh re-reads only the topics whose version moved."""

partitions = Table(
    "partitions",
    metadata,
    Column("topic", String(255), ForeignKey("topics.name", ondelete="CASCADE"), primary_key=True),
    Column("partition", Integer, primary_key=True),
    Column("replicas", Text, nullable=False),
    Column("leader", Integer, nullable=False),
    Column("leader_epoch", Integer, nullable=False),
    Column("isr", Text, nullable=False),
)

group_offsets = Table(
    "group_offsets",
    metadata,
    Column("group_id", String(255), primary_key=True),
    Column("topic", String(255), primary_key=True),
    Column("partition", Integer, primary_key=True),
    Column("committed_offset", BigInteger, nullable=False),
    Column("leader_epoch", Integer, nullable=False),
    Column("metadata", Text),
    Column("commit_timestamp", BigInteger, nullable=False),
)

acls = Table(
    "acls",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("resource_type", Integer, nullable=False),
    Column("resource_name", String(255), nullable=False),
    Column("pattern_type", Integer, nullable=False),
    Column("principal", String(255), nullable=False),
    Column("host", String(255), nullable=False),
    Column("operation", Integer, nullable=False),
    Column("permission_type", Integer, nullable=False),
)

mirrors = Table(
    "mirrors",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("configs", Text, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("version", BigInteger, nullable=False, server_default="0"),
)
"""``version`` grows with every change to the topic's row or its partition rows
(``change_counter.bump``): a refresh re-reads only the topics whose version moved."""

broker_configs = Table(
    "broker_configs",
    metadata,
    Column("broker", String(16), primary_key=True),
    Column("name", String(255), primary_key=True),
    Column("value", Text, nullable=False),
)

transactions = Table(
    "transactions",
    metadata,
    Column("transactional_id", String(255), primary_key=True),
    Column("producer_id", BigInteger, nullable=False),
    Column("producer_epoch", Integer, nullable=False),
    Column("last_producer_id", BigInteger, nullable=False),
    Column("last_producer_epoch", Integer, nullable=False),
    Column("timeout_ms", Integer, nullable=False),
    Column("state", String(32), nullable=False),
    Column("partitions", Text, nullable=False),
    Column("txn_start_ms", BigInteger, nullable=False),
    Column("last_update_ms", BigInteger, nullable=False),
)

txn_pending_offsets = Table(
    "txn_pending_offsets",
    metadata,
    Column("producer_id", BigInteger, primary_key=True),
    Column("group_id", String(255), primary_key=True),
    Column("topic", String(255), primary_key=True),
    Column("partition", Integer, primary_key=True),
    Column("committed_offset", BigInteger, nullable=False),
    Column("leader_epoch", Integer, nullable=False),
    Column("metadata", Text),
)

txn_coordinator_epoch = Table(
    "txn_coordinator_epoch",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("epoch", Integer, nullable=False),
)

scram_credentials = Table(
    "scram_credentials",
    metadata,
    Column("username", String(255), primary_key=True),
    Column("mechanism", String(32), primary_key=True),
    Column("salt", Text, nullable=False),
    Column("stored_key", Text, nullable=False),
    Column("server_key", Text, nullable=False),
    Column("iterations", Integer, nullable=False),
)

client_quotas = Table(
    "client_quotas",
    metadata,
    # the entity as canonical JSON: [[type, name or null for the default], ...] sorted by type
    Column("entity", String(1024), primary_key=True),
    Column("key", String(64), primary_key=True),
    Column("value", Float(precision=53), nullable=False),
)

group_configs = Table(
    "group_configs",
    metadata,
    Column("group_id", String(255), primary_key=True),
    Column("name", String(255), primary_key=True),
    Column("value", Text, nullable=False),
)

broker_listeners = Table(
    "broker_listeners",
    metadata,
    Column("broker_id", Integer, primary_key=True),
    Column("listener", String(255), primary_key=True),
    Column("host", String(255), nullable=False),
    Column("port", Integer, nullable=False),
)

mirror_source_clusters = Table(
    "mirror_source_clusters",
    metadata,
    Column("mirror", String(255), ForeignKey("mirrors.name", ondelete="CASCADE"), primary_key=True),
    Column("cluster_id", String(64), nullable=False),
    Column("recorded_at", BigInteger, nullable=False),
)

finalized_features = Table(
    "finalized_features",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("level", Integer, nullable=False),
    Column("epoch", BigInteger, nullable=False),
)

metadata_version = Table(
    "metadata_version",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("version", BigInteger, nullable=False),
)

broker_epoch_counter = Table(
    "broker_epoch_counter",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("last_epoch", BigInteger, nullable=False),
)

share_group_states = Table(
    "share_group_states",
    metadata,
    Column("group_id", String(255), primary_key=True),
    # by id, not name: a topic deleted and created again must not inherit the old
    # topic's share state, and the cascade forgets it with the topic
    Column(
        "topic_id",
        String(36),
        ForeignKey("topics.topic_id", ondelete="CASCADE"),
        primary_key=True,
        index=True,
    ),
    Column("partition", Integer, primary_key=True),
    Column("start_offset", BigInteger, nullable=False),
    Column("state_epoch", Integer, nullable=False),
    Column("leader_epoch", Integer, nullable=False),
    # packed (share_state_store.py): rewritten at every acknowledgement
    Column("state_batches", LargeBinary, nullable=False),
)
