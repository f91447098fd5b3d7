"""The cluster metadata store (SQLAlchemy 2: SQLite by default, PostgreSQL by URL)."""

from mirrorsim.broker.metadata.models import (
    BrokerRegistration,
    MirrorRecord,
    PartitionAssignment,
    TopicExistsError,
    TopicRecord,
    UnknownTopicError,
)
from mirrorsim.broker.metadata.store import CLUSTER_DEFAULT, MetadataStore

__all__ = [
    "CLUSTER_DEFAULT",
    "BrokerRegistration",
    "MetadataStore",
    "MirrorRecord",
    "PartitionAssignment",
    "TopicExistsError",
    "TopicRecord",
    "UnknownTopicError",
]
