"""BumpLeaderEpochs (105) sent over SASL as a peer broker's mirror coordinator would send it.

Without CLUSTER_ACTION every partition is refused and no epoch moves; once granted, each
partition's leader epoch becomes at least the asked minimum (a lower minimum leaves it
alone), and every broker's Metadata reports the new epoch. A topic id the cluster does not
hold is answered UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

import uuid
from typing import Any

from helpers.sasl import SECURED, sasl, sasl_address, sasl_bootstrap

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import AclBinding, AclOperation, NewTopic, ResourceType
from mirrorsim.client.cluster import RequestSpec
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.messages.constants import MirrorApiKey

TOPIC = "orders"
RAISED_BY = 5


def bump(topic_id: uuid.UUID, minimums: dict[int, int]) -> RequestSpec:
    partitions = [{"partition_index": p, "min_leader_epoch": e} for p, e in minimums.items()]
    return RequestSpec(
        MirrorApiKey.BUMP_LEADER_EPOCHS,
        {"topics": [{"topic_id": topic_id, "partitions": partitions}]},
    )


async def leader_epochs(bootstrap: str) -> dict[int, int] | None:
    """The topic's leader epochs as one broker of ``bootstrap`` reports them.

    ``None`` while that broker's metadata does not hold the topic yet: a created topic
    reaches each broker's metadata a moment after CreateTopics answers, as in Kafka.
    """
    async with Admin(bootstrap=bootstrap, config=sasl("admin")) as admin:
        await admin.cluster.refresh_metadata([TOPIC])
        info = admin.cluster.metadata.topics.get(TOPIC)
    if info is None or len(info.partitions) < 2:
        return None
    return {p: info.partitions[p].leader_epoch for p in info.partitions}


def codes(response: Any) -> dict[int, int]:
    (topic,) = response.topics
    return {int(p.partition_index): int(p.error_code) for p in topic.partitions}


async def test_bump_leader_epochs_needs_cluster_action_and_raises_epochs(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster("backup", brokers=2, configs=SECURED)
    bootstrap = sasl_bootstrap(cluster)
    async with Admin(bootstrap=bootstrap, config=sasl("admin")) as admin:
        (await admin.create_topics([NewTopic(TOPIC, 2, 2)])).all()
        await admin.cluster.refresh_metadata([TOPIC])
        topic_id = admin.cluster.topic_id(TOPIC)
    assert topic_id is not None
    before = await wait_for(
        lambda: agreed_epochs(cluster), timeout=10, message="the topic in every broker's metadata"
    )
    request = bump(topic_id, {0: before[0] + RAISED_BY, 1: before[1]})

    async with Admin(bootstrap=bootstrap, config=sasl("alice")) as alice:
        refused = await alice.cluster.send_to_any(request)
        assert codes(refused) == dict.fromkeys((0, 1), ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        unchanged = await wait_for(
            lambda: agreed_epochs(cluster), timeout=10, message="the brokers agreeing again"
        )
        assert unchanged == before
        async with Admin(bootstrap=bootstrap, config=sasl("admin")) as admin:
            grant = AclBinding(
                ResourceType.CLUSTER, "kafka-cluster", "User:alice", AclOperation.CLUSTER_ACTION
            )
            (await admin.create_acls([grant])).all()

        async def granted() -> Any:
            response = await alice.cluster.send_to_any(request)
            return response if set(codes(response).values()) == {ErrorCode.NONE} else None

        allowed = await wait_for(granted, timeout=10, message="the grant reaching the broker")
        assert allowed.topics[0].topic_name == TOPIC
        unknown = await alice.cluster.send_to_any(bump(uuid.uuid4(), {0: 99}))
        assert codes(unknown) == {0: ErrorCode.UNKNOWN_TOPIC_ID}

    expected = {0: before[0] + RAISED_BY, 1: before[1]}
    await wait_for(
        lambda: _epochs_are(cluster, expected),
        timeout=10,
        message="every broker reporting the raised epochs",
    )


async def agreed_epochs(cluster: Any) -> dict[int, int] | None:
    """The leader epochs every broker of ``cluster`` reports, ``None`` until they agree.

    Asking the whole bootstrap list reaches whichever broker answers first, and one that
    has not applied the topic yet would answer without it.
    """
    seen = [await leader_epochs(sasl_address(broker)) for broker in cluster.brokers]
    return seen[0] if all(s is not None and s == seen[0] for s in seen) else None


async def _epochs_are(cluster: Any, expected: dict[int, int]) -> bool:
    return await agreed_epochs(cluster) == expected
