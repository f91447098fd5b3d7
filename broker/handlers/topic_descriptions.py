"""A topic and its partitions as Metadata and DescribeTopicPartitions both describe them.

Both answers carry the same partition rows (leader, epoch, replicas, ISR, offline
replicas); DescribeTopicPartitions adds the KIP-966 eligible leader replicas itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

from mirrorsim.broker.group.offsets_topic import (
    OFFSETS_TOPIC,
    offsets_topic_id,
    offsets_topic_leaders,
)
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.metadata.models import TopicRecord
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.messages.constants import UNSET_AUTHORIZED_OPERATIONS
from mirrorsim.protocol.uuids import ZERO_UUID


def undescribed_topic(
    name: str | None, topic_id: uuid.UUID | None, code: ErrorCode
) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name,
        "topic_id": topic_id or ZERO_UUID,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": UNSET_AUTHORIZED_OPERATIONS,
    }


def described_offsets_topic(broker: HandlerBroker) -> dict[str, Any]:
    """``__consumer_offsets`` as Kafka shows it (see ``broker/group/offsets_topic.py``)."""
    live = [b.broker_id for b in broker.live_brokers()]
    leaders = offsets_topic_leaders(int(broker.config("offsets.topic.num.partitions")), live)
    return {
        "error_code": ErrorCode.NONE,
        "name": OFFSETS_TOPIC,
        "topic_id": offsets_topic_id(broker.cluster_id),
        "is_internal": True,
        "partitions": [
            _partition(
                partition,
                leader,
                0,
                [leader] if leader >= 0 else [],
                [leader] if leader >= 0 else [],
                [],
            )
            for partition, leader in enumerate(leaders)
        ],
        "topic_authorized_operations": UNSET_AUTHORIZED_OPERATIONS,
    }


def described_topic(record: TopicRecord, live: Collection[int]) -> dict[str, Any]:
    """``record`` with the leaders and replicas that are not among the ``live`` broker
    ids shown as missing and offline."""
    partitions = [
        _partition(
            p.partition,
            p.leader if p.leader in live else -1,
            p.leader_epoch,
            list(p.replicas),
            list(p.isr),
            [r for r in p.replicas if r not in live],
        )
        for p in record.partitions
    ]
    return {
        "error_code": ErrorCode.NONE,
        "name": record.name,
        "topic_id": record.topic_id,
        "is_internal": False,
        "partitions": partitions,
        "topic_authorized_operations": UNSET_AUTHORIZED_OPERATIONS,
    }


def _partition(
    index: int,
    leader: int,
    epoch: int,
    replicas: list[int],
    isr: list[int],
    offline: list[int],
) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
        "partition_index": index,
        "leader_id": leader,
        "leader_epoch": epoch,
        "replica_nodes": replicas,
        "isr_nodes": isr,
        "offline_replicas": offline,
    }
