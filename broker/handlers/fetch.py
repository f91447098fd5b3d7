"""Fetch (api key 1, v4..v19): sessions, long polling and per-partition reads.

The session cache (KIP-227) turns the request into the set of partitions to read and,
afterwards, into the set of partitions to answer; the replica manager does the reading and
the waiting. v13+ names topics by id; an id this broker does not know is answered with
UNKNOWN_TOPIC_ID for that partition. v19 adds the mirror leader epoch (KIP-1279): the
latest epoch in a mirror partition's log, -1 for other partitions. A follower's
``MirrorLeaderEpoch`` is fenced like its CurrentLeaderEpoch (``Partition.read``).
A follower whose v15+ ``ReplicaState`` names a broker epoch older than the one its broker
registered since is an incarnation the controller fenced: every partition answers
STALE_BROKER_EPOCH and its fetch counts for nothing.
A consumer's response bytes count against its ``consumer_byte_rate``; over the quota it
gets an empty response with the throttle time and its connection is muted for that time.
The answer is encoded straight from the reads (``FetchResponseBody``), each record set
going out as the buffer the log read.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from mirrorsim.broker.auth.enforcement import fetch_denials
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.quota_throttle import client_of, record_and_throttle
from mirrorsim.broker.quotas.entity import CONSUMER_BYTE_RATE
from mirrorsim.broker.replica import (
    FetchContext,
    FetchKey,
    FetchOutcome,
    FetchParams,
    FetchSession,
    IncrementalContext,
    PartitionFetch,
    PartitionOutcome,
    ReplicaManager,
)
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.messages.constants import FETCH_MIRROR_VERSION
from mirrorsim.protocol.messages.fetch_response import (
    NO_DIVERGENCE,
    NO_LEADER,
    FetchPartitionData,
    FetchResponseBody,
    FetchTopicData,
)
from mirrorsim.protocol.messages.fetch_versions import FETCH_KEY

TOPIC_IDS_VERSION = 13
SESSIONS_VERSION = 7
REPLICA_STATE_VERSION = 15


@handles(FETCH_KEY, min_version=4, max_version=FETCH_MIRROR_VERSION)
async def handle(ctx: RequestContext, body: Any) -> FetchResponseBody:
    manager: ReplicaManager = ctx.broker.replica_manager
    version = ctx.header.api_version
    params = _params(body, version)
    ctx.throttle.exempt = params.is_from_follower
    requested = dict(_requested_partitions(manager, body.topics, version))
    forgotten = list(_forgotten_partitions(manager, body, version))
    session_id = body.session_id if version >= SESSIONS_VERSION else 0
    epoch = body.session_epoch if version >= SESSIONS_VERSION else -1
    try:
        context = manager.fetch_sessions.new_context(
            session_id, epoch, requested, forgotten, privileged=params.is_from_follower
        )
    except KafkaError as exc:
        return FetchResponseBody(version, [], error_code=exc.code)
    quota_bytes = _consumer_quota_bytes(ctx, params)
    if quota_bytes is not None:
        params = dataclasses.replace(params, max_bytes=max(1, min(params.max_bytes, quota_bytes)))
    to_read = context.partitions()
    readable = {key: fetch for key, fetch in to_read.items() if key.topic}
    denied = await fetch_denials(ctx, list(readable), follower=params.is_from_follower)
    allowed = {key: fetch for key, fetch in readable.items() if key not in denied}
    stale = _stale_incarnation(ctx, params)
    read = (
        dict.fromkeys(allowed, stale)
        if stale is not None
        else await _read(ctx, manager, params, context, allowed, denied)
    )
    outcomes: dict[FetchKey, FetchOutcome] = {**denied, **read}
    for key in to_read:
        if not key.topic:
            outcomes[key] = KafkaError(ErrorCode.UNKNOWN_TOPIC_ID)
    throttle_ms = 0 if params.is_from_follower else _consumer_throttle_ms(ctx, outcomes)
    if throttle_ms > 0:
        return FetchResponseBody(
            version, [], session_id=context.throttled_session_id(), throttle_ms=throttle_ms
        )
    response_session, included = context.build_response(
        {key: _summary(outcome) for key, outcome in outcomes.items()}
    )
    return FetchResponseBody(
        version, _topic_responses(manager, included, outcomes), session_id=response_session
    )


async def _read(
    ctx: RequestContext,
    manager: ReplicaManager,
    params: FetchParams,
    context: FetchContext,
    allowed: dict[FetchKey, PartitionFetch],
    denied: dict[FetchKey, KafkaError],
) -> dict[FetchKey, FetchOutcome]:
    """Read ``allowed``, parking up to the request's wait. A session that reads only its
    changed partitions ends the wait when one of its settled partitions changes; that
    partition is then authorized and read in this same request, and the wait goes on for
    what is left of it while ``min_bytes`` are not there, as Kafka, which reads every
    partition of a session, waits for them across the whole session. (Answering at once
    with what the first read found, and leaving the changed partition to the next Fetch,
    made every record in a partition that had gone quiet cost a second round trip, and
    an empty answer: 45% of a live mirror's Fetches.) ``allowed`` and ``denied`` grow
    with the partitions read this way."""
    session = _reading_changed(context)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + params.max_wait_ms / 1000
    read = await manager.fetch(params, allowed, session)
    while session is not None and session.woken:
        more = {
            key: fetch
            for key, fetch in context.partitions().items()
            if key.topic and key not in allowed and key not in denied
        }
        if not more:
            break
        refused = await fetch_denials(ctx, list(more), follower=False)
        denied.update(refused)
        allowed.update((key, fetch) for key, fetch in more.items() if key not in refused)
        remaining_ms = max(0, int((deadline - loop.time()) * 1000))
        read = await manager.fetch(
            dataclasses.replace(params, max_wait_ms=remaining_ms), allowed, session
        )
    return dict(read)


def _reading_changed(context: FetchContext) -> FetchSession | None:
    """The session whose changed partitions alone this request reads, if it is one."""
    if isinstance(context, IncrementalContext) and context.session.reads_changed:
        return context.session
    return None


def _consumer_quota_bytes(ctx: RequestContext, params: FetchParams) -> int | None:
    """A consumer never gets more in one response than its quota allows in a quota window
    (Kafka's ``getMaxValueInQuotaWindow``), so one fetch cannot earn an endless throttle."""
    if params.is_from_follower:
        return None
    most = ctx.broker.client_quotas.max_value_in_window(CONSUMER_BYTE_RATE, client_of(ctx))
    return None if most is None else int(most)


def _consumer_throttle_ms(ctx: RequestContext, outcomes: Mapping[FetchKey, FetchOutcome]) -> int:
    """Record the response's record bytes against ``consumer_byte_rate``; over the quota the
    bytes are taken back and the response goes out empty with the throttle time, as Kafka
    answers a throttled fetch (the consumer fetches the same offsets again)."""
    size = sum(len(o.records) for o in outcomes.values() if not isinstance(o, KafkaError))
    throttle_ms = record_and_throttle(ctx, CONSUMER_BYTE_RATE, size)
    if throttle_ms > 0:
        ctx.broker.client_quotas.unrecord(CONSUMER_BYTE_RATE, client_of(ctx), size)
    return throttle_ms


def _stale_incarnation(ctx: RequestContext, params: FetchParams) -> KafkaError | None:
    """STALE_BROKER_EPOCH for a follower older than its broker's registration; a newer one
    is let through (this broker has not refreshed since it registered)."""
    if not params.is_from_follower or params.replica_epoch < 0:
        return None
    registered = ctx.broker.snapshot.brokers.get(params.replica_id)
    if registered is None or registered.broker_epoch <= params.replica_epoch:
        return None
    return KafkaError(
        ErrorCode.STALE_BROKER_EPOCH,
        f"Broker {params.replica_id} is at broker epoch {registered.broker_epoch}, "
        f"not {params.replica_epoch}",
    )


def _params(body: Any, version: int) -> FetchParams:
    replica_epoch = -1
    if version >= REPLICA_STATE_VERSION:
        replica_id = body.replica_state.replica_id
        replica_epoch = body.replica_state.replica_epoch
    else:
        replica_id = body.replica_id
    return FetchParams(
        replica_id=int(replica_id),
        replica_epoch=int(replica_epoch),
        max_wait_ms=int(body.max_wait.total_seconds() * 1000),
        min_bytes=int(body.min_bytes),
        max_bytes=int(body.max_bytes),
        isolation_level=int(body.isolation_level),
    )


def _key(manager: ReplicaManager, topic: Any, version: int, partition: int) -> FetchKey:
    if version >= TOPIC_IDS_VERSION:
        return FetchKey(manager.topic_name(topic.topic_id) or "", partition, topic.topic_id)
    return FetchKey(topic.topic, partition)


def _requested_partitions(
    manager: ReplicaManager, topics: Iterable[Any], version: int
) -> Iterable[tuple[FetchKey, PartitionFetch]]:
    for topic in topics:
        for p in topic.partitions:
            yield (
                _key(manager, topic, version, p.partition),
                PartitionFetch(
                    fetch_offset=int(p.fetch_offset),
                    partition_max_bytes=int(p.partition_max_bytes),
                    current_leader_epoch=int(getattr(p, "current_leader_epoch", -1)),
                    last_fetched_epoch=int(getattr(p, "last_fetched_epoch", -1)),
                    log_start_offset=int(getattr(p, "log_start_offset", -1)),
                    mirror_leader_epoch=int(getattr(p, "mirror_leader_epoch", -1)),
                ),
            )


def _forgotten_partitions(manager: ReplicaManager, body: Any, version: int) -> Iterable[FetchKey]:
    for topic in getattr(body, "forgotten_topics_data", ()):
        for index in topic.partitions:
            yield _key(manager, topic, version, int(index))


def _summary(outcome: FetchOutcome) -> PartitionOutcome:
    if isinstance(outcome, KafkaError):
        return PartitionOutcome(outcome.code, -1, -1, -1, 0)
    return PartitionOutcome(
        ErrorCode.NONE,
        outcome.high_watermark,
        outcome.last_stable_offset,
        outcome.log_start_offset,
        len(outcome.records),
        diverging=outcome.diverging_epoch is not None,
        at_end=outcome.at_end,
    )


def _topic_responses(
    manager: ReplicaManager, included: list[FetchKey], outcomes: Mapping[FetchKey, FetchOutcome]
) -> list[FetchTopicData]:
    grouped: dict[tuple[str, Any], list[FetchPartitionData]] = {}
    for key in included:
        grouped.setdefault((key.topic, key.topic_id), []).append(
            _partition_data(manager, key, outcomes[key])
        )
    return [
        FetchTopicData(topic, topic_id, partitions)
        for (topic, topic_id), partitions in grouped.items()
    ]


def _partition_data(
    manager: ReplicaManager, key: FetchKey, outcome: FetchOutcome
) -> FetchPartitionData:
    if isinstance(outcome, KafkaError):
        code = outcome.code
        return FetchPartitionData(
            key.partition,
            code,
            current_leader=_current_leader(manager, key)
            if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)
            else NO_LEADER,
            mirror_leader_epoch=_mirror_leader_epoch(manager, key)
            if code in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH)
            else -1,
        )
    return FetchPartitionData(
        key.partition,
        ErrorCode.NONE,
        outcome.high_watermark,
        outcome.last_stable_offset,
        outcome.log_start_offset,
        outcome.aborted_transactions,
        records=outcome.records,
        diverging_epoch=outcome.diverging_epoch or NO_DIVERGENCE,
        mirror_leader_epoch=_mirror_leader_epoch(manager, key),
    )


def _mirror_leader_epoch(manager: ReplicaManager, key: FetchKey) -> int:
    """Sent with data and with epoch fencing errors: a follower fenced on its mirror
    leader epoch learns the current one from the error and fetches again at once."""
    try:
        return manager.partition(key.topic, key.partition).mirror_leader_epoch
    except KafkaError:
        return -1


def _current_leader(manager: ReplicaManager, key: FetchKey) -> tuple[int, int]:
    try:
        partition = manager.partition(key.topic, key.partition)
    except KafkaError:
        return NO_LEADER
    return partition.state.leader, partition.leader_epoch
