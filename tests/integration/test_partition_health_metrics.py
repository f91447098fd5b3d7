"""Kafka's partition health gauges over a broker's metrics endpoint: each broker's
ReplicaManager gauges, and the KafkaController gauges only the active controller reports."""

from __future__ import annotations

from typing import Any

from helpers.metrics import scrape
from helpers.replication import FAST, create_topic, partition_row, restart, stop

from mirrorsim.broker.cluster import ClusterRunner

CONFIGS = {**FAST, "auto.leader.rebalance.enable": "false", "min.insync.replicas": 2}


async def gauges(cluster: ClusterRunner) -> dict[int, dict[str, float]]:
    """Every broker's partition health gauges, by broker id."""
    out = {}
    for member in cluster.brokers:
        samples = await scrape(member.metrics.port)
        out[member.broker_id] = {
            name: value
            for (name, _), value in samples.items()
            if name.startswith(("kafka_controller_", "kafka_server_replica_manager_"))
        }
    return out


def controller_view(by_broker: dict[int, dict[str, float]]) -> dict[str, float]:
    (active,) = [g for g in by_broker.values() if g["kafka_controller_active_controller"] == 1]
    return active


async def test_the_gauges_follow_a_leader_leaving_and_coming_back(
    start_cluster: Any, wait_for: Any
) -> None:
    cluster = await start_cluster(brokers=3, configs=CONFIGS)
    await create_topic(cluster)

    async def settled(predicate: Any) -> dict[int, dict[str, float]]:
        latest: dict[int, dict[str, float]] = {}

        async def check() -> bool:
            latest.clear()
            latest.update(await gauges(cluster))
            actives = [g for g in latest.values() if g["kafka_controller_active_controller"]]
            return len(actives) == 1 and bool(predicate(latest))

        await wait_for(check, message="partition health gauges")
        return latest

    healthy = await settled(
        lambda g: (
            controller_view(g)["kafka_controller_global_partitions"]
            and all(b["kafka_server_replica_manager_partitions"] for b in g.values())
            and g[1]["kafka_server_replica_manager_leaders"] >= 1
        )
    )
    assert sum(g["kafka_controller_active_controller"] for g in healthy.values()) == 1
    view = controller_view(healthy)
    assert view["kafka_controller_offline_partitions"] == 0
    assert view["kafka_controller_preferred_replica_imbalance"] == 0
    assert view["kafka_controller_active_brokers"] == 3
    assert view["kafka_controller_fenced_brokers"] == 0
    leader = healthy[1]
    assert leader["kafka_server_replica_manager_leaders"] >= 1
    assert leader["kafka_server_replica_manager_under_replicated_partitions"] == 0
    others = [g for g in healthy.values() if not g["kafka_controller_active_controller"]]
    assert all(g["kafka_controller_global_partitions"] == 0 for g in others)

    await stop(cluster, 1)
    await wait_for(
        lambda: partition_row(cluster).leader == 2 and len(partition_row(cluster).isr) == 2
    )
    moved = await settled(
        lambda g: (
            controller_view(g)["kafka_controller_preferred_replica_imbalance"] == 1
            and g[2]["kafka_server_replica_manager_under_replicated_partitions"] == 1
        )
    )
    assert moved[2]["kafka_server_replica_manager_at_min_isr_partitions"] >= 1
    assert moved[2]["kafka_server_replica_manager_under_min_isr_partitions"] == 0
    assert controller_view(moved)["kafka_controller_active_brokers"] == 2

    await restart(cluster, 1)
    await wait_for(lambda: set(partition_row(cluster).isr) == {1, 2, 3})
    back = await settled(
        lambda g: (
            1 in g
            and g[2]["kafka_server_replica_manager_under_replicated_partitions"] == 0
            and controller_view(g)["kafka_controller_fenced_brokers"] == 0
        )
    )
    assert controller_view(back)["kafka_controller_preferred_replica_imbalance"] == 1

    (controller,) = [b for b in cluster.brokers if b.cluster_controller.is_active()]
    controller.static_configs = {
        **controller.static_configs,
        "auto.leader.rebalance.enable": "true",
    }
    assert await controller.cluster_controller.balance_leaders() == 1
    # the controller's view moves first; broker 1 leads once it has read the change
    await settled(
        lambda g: (
            controller_view(g)["kafka_controller_preferred_replica_imbalance"] == 0
            and g[1]["kafka_server_replica_manager_leaders"] >= 1
            and g[2]["kafka_server_replica_manager_leaders"] == 0
        )
    )
