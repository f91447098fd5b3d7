"""Operator views of transactions: ListTransactions (66, v0..v2), DescribeTransactions
(65, v0) and DescribeProducers (61, v0).

ListTransactions is sent to every broker by admin clients; each answers for the
transactional ids it coordinates. DescribeProducers reads the partition leader's
producer state (Kafka's ``kafka-transactions.sh describe-producers``).
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.broker.replica import ReplicaManager
from mirrorsim.broker.replica.manager import wall_clock_ms
from mirrorsim.broker.txn.coordinator import TransactionCoordinator
from mirrorsim.broker.txn.state import TxnMetadata, TxnState
from mirrorsim.protocol.errors import ErrorCode, KafkaError

DESCRIBE_PRODUCERS_KEY = 61
DESCRIBE_TRANSACTIONS_KEY = 65
LIST_TRANSACTIONS_KEY = 66
_STATE_NAMES = {s.value for s in TxnState}


@handles(LIST_TRANSACTIONS_KEY, min_version=0, max_version=2)
async def handle_list(ctx: RequestContext, body: Any) -> Any:
    coordinator: TransactionCoordinator = ctx.broker.transactions.coordinator
    states = set(body.state_filters)
    producer_ids = set(body.producer_id_filters)
    min_duration = int(getattr(body, "duration_filter", -1))
    pattern = getattr(body, "transactional_id_pattern", None)
    matcher = re.compile(pattern) if pattern else None
    now = wall_clock_ms()
    listed = [
        {
            "transactional_id": meta.transactional_id,
            "producer_id": meta.producer_id,
            "transaction_state": meta.state.value,
        }
        for meta in await coordinator.list_transactions()
        if (not states or meta.state.value in states)
        and (not producer_ids or meta.producer_id in producer_ids)
        and (
            min_duration < 0 or (meta.txn_start_ms >= 0 and now - meta.txn_start_ms >= min_duration)
        )
        and (matcher is None or matcher.fullmatch(meta.transactional_id))
    ]
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": ErrorCode.NONE,
            "unknown_state_filters": sorted(states - _STATE_NAMES),
            "transaction_states": listed,
        },
    )


@handles(DESCRIBE_TRANSACTIONS_KEY, min_version=0, max_version=0)
async def handle_describe(ctx: RequestContext, body: Any) -> Any:
    coordinator: TransactionCoordinator = ctx.broker.transactions.coordinator
    states = []
    for transactional_id in body.transactional_ids:
        try:
            states.append(_described(await coordinator.describe(transactional_id)))
        except KafkaError as exc:
            states.append(_undescribed(transactional_id, exc.code))
    return respond(body, {"throttle_time": NO_THROTTLE, "transaction_states": states})


def _described(meta: TxnMetadata) -> dict[str, Any]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return {
        "error_code": ErrorCode.NONE,
        "transactional_id": meta.transactional_id,
        "transaction_state": meta.state.value,
        "transaction_timeout": datetime.timedelta(milliseconds=meta.timeout_ms),
        "transaction_start_time": _time(meta.txn_start_ms),
        "producer_id": meta.producer_id,
        "producer_epoch": meta.producer_epoch,
        "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
    }


def _undescribed(transactional_id: str, code: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": code,
        "transactional_id": transactional_id,
        "transaction_state": "",
        "transaction_timeout": datetime.timedelta(0),
        "transaction_start_time": _time(-1),
        "producer_id": -1,
        "producer_epoch": -1,
        "topics": [],
    }


def _time(ms: int) -> datetime.datetime:
    """Kafka sends -1 when no transaction has started; kio's reader (so this project's
    own admin client) refuses negative timestamps, so "never" goes out as 0."""
    return datetime.datetime.fromtimestamp(max(ms, 0) / 1000, tz=datetime.UTC)


@handles(DESCRIBE_PRODUCERS_KEY, min_version=0, max_version=0)
async def handle_describe_producers(ctx: RequestContext, body: Any) -> Any:
    manager: ReplicaManager = ctx.broker.replica_manager
    topics = []
    for topic in body.topics:
        partitions = [
            _producers(manager, topic.name, int(index)) for index in topic.partition_indexes
        ]
        topics.append({"name": topic.name, "partitions": partitions})
    return respond(body, {"throttle_time": NO_THROTTLE, "topics": topics})


def _producers(manager: ReplicaManager, topic: str, index: int) -> dict[str, Any]:
    try:
        partition = manager.partition(topic, index)
        partition.check_leader_epoch(-1, require_leader=True)
    except KafkaError as exc:
        return {"partition_index": index, **error_fields(exc), "active_producers": []}
    producers = [
        {
            "producer_id": entry.producer_id,
            "producer_epoch": entry.producer_epoch,
            "last_sequence": entry.last_seq,
            "last_timestamp": entry.last_timestamp,
            "coordinator_epoch": entry.coordinator_epoch,
            "current_txn_start_offset": -1
            if entry.current_txn_first_offset is None
            else entry.current_txn_first_offset,
        }
        for entry in partition.log.producer_state.producers.values()
    ]
    return {"partition_index": index, **error_fields(None), "active_producers": producers}
