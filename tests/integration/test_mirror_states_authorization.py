"""Read/WriteMirrorStates need CLUSTER_ACTION on the cluster when an authorizer is on.

The brokers' own calls pass as the inter-broker listener's principal listed in
``super.users`` (``User:ANONYMOUS`` on PLAINTEXT): a 3-broker destination whose
partition states live on other brokers' coordinators mirrors as usual.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from helpers.mirrors import MIRROR, produce
from helpers.sasl import SECURED, sasl, sasl_bootstrap

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import AclBinding, AclOperation, NewTopic, ResourceType
from mirrorsim.client.cluster import RequestSpec
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.messages.constants import MirrorApiKey

TOPIC = "orders"
PARTITIONS = 3


READ = RequestSpec(
    MirrorApiKey.READ_MIRROR_STATES,
    {"mirror_name": MIRROR, "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0}]}]},
)
WRITE = RequestSpec(
    MirrorApiKey.WRITE_MIRROR_STATES,
    {
        "mirror_name": MIRROR,
        "topics": [
            {
                "name": TOPIC,
                "partitions": [{"partition_index": 0, "state": 1, "last_mirror_epoch": -1}],
            }
        ],
        "removed_topics": [],
    },
)


@pytest.fixture
async def destination(start_cluster: Any) -> AsyncIterator[Any]:
    yield await start_cluster("backup", brokers=3, configs=SECURED)


async def answers(admin: Admin, request_spec: RequestSpec) -> list[Any]:
    """Every broker's answer: each authorizes on its own copy of the ACLs."""
    await admin.cluster.refresh_metadata([])
    return [
        await admin.cluster.send_to_node(n, request_spec) for n in sorted(admin.cluster.brokers)
    ]


@pytest.mark.parametrize("request_spec", [READ, WRITE], ids=["read", "write"])
async def test_mirror_states_need_cluster_action(
    destination: Any, request_spec: RequestSpec, wait_for: Any
) -> None:
    bootstrap = sasl_bootstrap(destination)
    async with Admin(bootstrap=bootstrap, config=sasl("alice")) as alice:
        refused = await answers(alice, request_spec)
        assert len(refused) == 3
        for response in refused:
            assert response.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            assert list(response.topics) == []
        async with Admin(bootstrap=bootstrap, config=sasl("admin")) as admin:
            grant = AclBinding(
                ResourceType.CLUSTER, "kafka-cluster", "User:alice", AclOperation.CLUSTER_ACTION
            )
            (await admin.create_acls([grant])).all()

        async def all_allowed() -> list[Any] | None:
            found = await answers(alice, request_spec)
            return found if all(r.error_code == ErrorCode.NONE for r in found) else None

        allowed = await wait_for(all_allowed, timeout=10, message="the grant on every broker")
        for response in allowed:
            assert [int(p.partition_index) for p in response.topics[0].partitions] == [0]


async def test_the_brokers_own_state_calls_pass_as_the_inter_broker_principal(
    start_cluster: Any, destination: Any, wait_for: Any
) -> None:
    source = await start_cluster("primary", configs={"mirror.fetch.max.wait.ms": 50})
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])).all()
    await produce(source.bootstrap, TOPIC, 9, partitions=PARTITIONS)
    async with Admin(bootstrap=sasl_bootstrap(destination), config=sasl("admin")) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()

        async def mirroring() -> bool:
            described = await admin.describe_mirrors([MIRROR])
            states = {p.partition: p.state for p in described[MIRROR].partitions}
            return states == dict.fromkeys(range(PARTITIONS), "MIRRORING")

        await wait_for(mirroring, timeout=30, message="every partition MIRRORING")
    leaders = {
        b.broker_id
        for b in destination.brokers
        for p in b.replica_manager.partitions()
        if p.topic == TOPIC and p.is_leader
    }
    coordinators = {
        b.broker_id
        for b in destination.brokers
        for p in b.replica_manager.partitions()
        if p.topic == "__mirror_state" and p.is_leader
    }
    assert len(leaders) > 1 and len(coordinators) > 1, "no state call crossed brokers"
