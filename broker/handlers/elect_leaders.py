"""ElectLeaders (api key 43, v0..v2): preferred and unclean elections on the controller.

Only the active controller (the holder of the controller lease) elects; any other broker
answers NOT_CONTROLLER so clients re-route after a metadata refresh. v0 has no election
type and means PREFERRED. A null topic list means every partition; a successful
preferred election of all partitions lists only the partitions that changed, as Kafka.
"""

from __future__ import annotations

from typing import Any

from mirrorsim.broker.controller import ElectionType
from mirrorsim.broker.handlers.base import RequestContext, handles
from mirrorsim.broker.handlers.response import NO_THROTTLE, respond
from mirrorsim.protocol.errors import ErrorCode, KafkaError

ELECT_LEADERS_KEY = 43


@handles(ELECT_LEADERS_KEY, min_version=0, max_version=2)
async def handle(ctx: RequestContext, body: Any) -> Any:
    election_type = ElectionType(int(getattr(body, "election_type", ElectionType.PREFERRED)))
    wanted = (
        None
        if body.topic_partitions is None
        else [(t.topic, int(p)) for t in body.topic_partitions for p in t.partitions]
    )
    try:
        results = await ctx.broker.cluster_controller.elect_leaders(election_type, wanted)
    except KafkaError as exc:
        return respond(
            body,
            {"throttle_time": NO_THROTTLE, "error_code": exc.code, "replica_election_results": []},
        )
    if wanted is None:
        results = {tp: error for tp, error in results.items() if error is None}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), error in results.items():
        by_topic.setdefault(topic, []).append(
            {
                "partition_id": partition,
                "error_code": ErrorCode.NONE if error is None else error.code,
                "error_message": None if error is None else error.message,
            }
        )
    return respond(
        body,
        {
            "throttle_time": NO_THROTTLE,
            "error_code": ErrorCode.NONE,
            "replica_election_results": [
                {"topic": topic, "partition_result": partitions}
                for topic, partitions in by_topic.items()
            ],
        },
    )
