"""FindCoordinator with KIP-1279's MIRROR key type (3), sent over the wire to every broker of a
three-broker destination: each names the broker leading the mirror's ``__mirror_state``
partition, which is also the broker running the mirror's metadata sync."""

from __future__ import annotations

from typing import Any

from helpers.metadata_sync import DESTINATION_CONFIGS
from helpers.mirrors import MIRROR

from mirrorsim.client import Admin
from mirrorsim.client.cluster import RequestSpec
from mirrorsim.coordinator.mirror_state_store import metadata_coordinator_partition
from mirrorsim.protocol.errors import ErrorCode
from mirrorsim.protocol.messages.constants import COORDINATOR_TYPE_MIRROR
from mirrorsim.protocol.messages.mirror_state_records import MIRROR_STATE_TOPIC

FIND_COORDINATOR = 10


def find_mirror_coordinator(version: int, keys: list[str]) -> RequestSpec:
    if version >= 4:
        fields: dict[str, Any] = {"key_type": COORDINATOR_TYPE_MIRROR, "coordinator_keys": keys}
    else:
        fields = {"key_type": COORDINATOR_TYPE_MIRROR, "key": keys[0]}
    return RequestSpec(FIND_COORDINATOR, fields, versions=(version,))


def state_partition_leader(broker: Any, mirror: str) -> int:
    partitions = broker.snapshot.topics[MIRROR_STATE_TOPIC].partitions
    return int(partitions[metadata_coordinator_partition(mirror, len(partitions))].leader)


async def test_every_broker_names_the_leader_of_the_mirrors_state_partition(
    start_cluster: Any, wait_for: Any
) -> None:
    source = await start_cluster("source")
    destination = await start_cluster("backup", brokers=3, configs=DESTINATION_CONFIGS)
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        await admin.create_mirror("second", {"bootstrap.servers": source.bootstrap})
    await wait_for(
        lambda: all(MIRROR_STATE_TOPIC in b.snapshot.topics for b in destination.brokers),
        message="__mirror_state on every broker",
    )
    expected = {m: state_partition_leader(destination.brokers[0], m) for m in (MIRROR, "second")}
    ports = {b.broker_id: int(b.bootstrap.rsplit(":", 1)[1]) for b in destination.brokers}
    for broker in destination.brokers:
        async with Admin(bootstrap=broker.bootstrap) as admin:
            many = await admin.cluster.send_to_any(find_mirror_coordinator(4, [MIRROR, "second"]))
            one = await admin.cluster.send_to_any(find_mirror_coordinator(3, [MIRROR]))
        found = {c.key: (int(c.error_code), c.node_id, c.port) for c in many.coordinators}
        assert found == {m: (0, n, ports[n]) for m, n in expected.items()}
        assert (int(one.error_code), one.node_id, one.port) == (
            0,
            expected[MIRROR],
            ports[expected[MIRROR]],
        )
    syncing = next(b for b in destination.brokers if b.broker_id == expected[MIRROR])
    await wait_for(
        lambda: MIRROR in syncing.mirror_metadata.coordinated_mirrors(),
        message="the named broker runs the mirror's metadata sync",
    )


async def test_an_unknown_key_type_is_still_an_invalid_request(start_cluster: Any) -> None:
    cluster = await start_cluster()
    spec = RequestSpec(FIND_COORDINATOR, {"key_type": 7, "coordinator_keys": ["x"]}, versions=(4,))
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        response = await admin.cluster.send_to_any(spec)
    assert int(response.coordinators[0].error_code) == ErrorCode.INVALID_REQUEST
