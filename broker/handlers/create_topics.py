"""CreateTopics: validate each topic independently; ``validate_only`` writes nothing.

v8 (KIP-1279) adds ``MirrorInfo``: when set, the topic is created with the source
cluster's topic id (after the controller's checks for that case) instead of a random one.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from mirrorsim.broker.auth.enforcement import authorize_topic_creation
from mirrorsim.broker.config import resolve_topic_config
from mirrorsim.broker.group.offsets_topic import OFFSETS_TOPIC
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.broker_port import HandlerBroker
from mirrorsim.broker.handlers.response import NO_THROTTLE, error_fields, respond
from mirrorsim.broker.metadata.controller import NewTopicRequest
from mirrorsim.broker.metadata.models import TopicRecord
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.uuids import ZERO_UUID

CREATE_TOPICS_KEY = 19


@handles(CREATE_TOPICS_KEY, min_version=2, max_version=8)
async def handle(ctx: RequestContext, body: Any) -> Any:
    """The topics that pass the request-level checks go to the controller together, so a
    request of many topics costs one metadata refresh, not one per topic."""
    broker = ctx.broker
    counts = Counter(topic.name for topic in body.topics)
    outcomes: dict[int, TopicRecord | KafkaError] = {}
    accepted: dict[int, NewTopicRequest] = {}
    for index, topic in enumerate(body.topics):
        if counts[topic.name] > 1:
            outcomes[index] = KafkaError(
                ErrorCode.INVALID_REQUEST,
                "Create topics request from client contains multiple entries for the "
                f"following topics: {topic.name}",
            )
            continue
        try:
            await authorize_topic_creation(ctx, topic.name)
        except KafkaError as exc:
            outcomes[index] = exc
            continue
        if topic.name == OFFSETS_TOPIC:
            outcomes[index] = KafkaError(
                ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{OFFSETS_TOPIC}' already exists."
            )
            continue
        accepted[index] = NewTopicRequest(
            topic.name,
            num_partitions=topic.num_partitions,
            replication_factor=topic.replication_factor,
            assignments={a.partition_index: list(a.broker_ids) for a in topic.assignments},
            configs={c.name: c.value for c in topic.configs},
            topic_id=_mirror_topic_id(topic),
        )
    created = await broker.controller.create_topics(
        list(accepted.values()), validate_only=body.validate_only
    )
    outcomes.update(zip(accepted, created, strict=True))
    results = [
        _result(topic.name, outcomes[index], broker) for index, topic in enumerate(body.topics)
    ]
    return respond(body, {"throttle_time": NO_THROTTLE, "topics": results})


def _mirror_topic_id(topic: Any) -> uuid.UUID | None:
    """The source topic id; the codec reads the zero UUID as None, which the controller
    must still see (and refuse) as the zero UUID rather than "no MirrorInfo"."""
    mirror_info = getattr(topic, "mirror_info", None)
    if mirror_info is None:
        return None
    return mirror_info.topic_id or ZERO_UUID


def _result(name: str, outcome: TopicRecord | KafkaError, broker: HandlerBroker) -> dict[str, Any]:
    if isinstance(outcome, KafkaError):
        return {
            "name": name,
            "topic_id": None,
            **error_fields(outcome),
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": None,
        }
    record = outcome
    configs = resolve_topic_config(record.configs, broker.config_layers())
    return {
        "name": name,
        "topic_id": record.topic_id,
        **error_fields(None),
        "num_partitions": len(record.partitions),
        "replication_factor": len(record.partitions[0].replicas) if record.partitions else -1,
        "configs": [
            {
                "name": c.name,
                "value": c.value,
                "read_only": False,
                "config_source": int(c.source),
                "is_sensitive": False,
            }
            for c in configs
        ],
    }
