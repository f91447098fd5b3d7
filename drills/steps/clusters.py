"""Steps on clusters and brokers: start, kill, restart, leader elections."""

from __future__ import annotations

import asyncio
from typing import Any

from mirrorsim.client.admin_types import ElectionType, TopicPartition
from mirrorsim.drills.context import DrillContext
from mirrorsim.drills.polling import wait_until
from mirrorsim.protocol.errors import ErrorCode


async def start_clusters(ctx: DrillContext, names: list[str] | None = None) -> None:
    chosen = names or list(ctx.clusters)
    await asyncio.gather(*(ctx.cluster(name).start() for name in chosen))
    for name in chosen:
        ctx.mark("cluster started", f"{name} {ctx.cluster(name).bootstrap}")


async def kill_cluster(ctx: DrillContext, cluster: str) -> None:
    target = ctx.cluster(cluster)
    await target.kill()
    ctx.mark("cluster killed", f"{cluster} ({target.kill_kind})")


async def restart_cluster(ctx: DrillContext, cluster: str) -> None:
    await ctx.cluster(cluster).restart()
    ctx.mark("cluster restarted", f"{cluster} {ctx.cluster(cluster).bootstrap}")


async def kill_broker(ctx: DrillContext, cluster: str, broker: int) -> None:
    target = ctx.cluster(cluster)
    await target.kill_broker(broker)
    ctx.mark("broker killed", f"{cluster} broker {broker} ({target.kill_kind})")


async def stop_broker(ctx: DrillContext, cluster: str, broker: int) -> None:
    await ctx.cluster(cluster).stop_broker(broker)
    ctx.mark("broker stopped", f"{cluster} broker {broker}")


async def start_broker(ctx: DrillContext, cluster: str, broker: int) -> None:
    await ctx.cluster(cluster).start_broker(broker)
    ctx.mark("broker started", f"{cluster} broker {broker}")


async def elect_leaders(
    ctx: DrillContext,
    cluster: str,
    topic: str,
    partitions: list[int] | None = None,
    type: str = "unclean",
    leader: int | None = None,
    timeout: float = 30.0,
) -> None:
    """ElectLeaders (PREFERRED or UNCLEAN) at the active controller, then wait until
    ``leader`` (when given) leads every partition. The admin re-routes on NOT_CONTROLLER
    and on an unreachable controller; an attempt that finds no eligible replica yet (a
    restarted broker not yet live or not yet back in the ISR) is asked again until
    ``timeout``."""
    wanted = [TopicPartition(topic, p) for p in partitions or [0]]
    election = ElectionType[type.upper()]

    async def elect() -> bool:
        async with ctx.cluster(cluster).admin() as admin:
            results = await admin.elect_leaders(election, wanted)
        return all(
            error is None or error.code == ErrorCode.ELECTION_NOT_NEEDED
            for error in results.values()
        )

    indexes = [tp.partition for tp in wanted]
    await wait_until(elect, timeout, f"{type} election of {topic} {indexes} on {cluster}")
    if leader is not None:
        await wait_until(
            lambda: _leads(ctx, cluster, topic, indexes, leader),
            timeout,
            f"broker {leader} leading {topic} {indexes} on {cluster}",
        )
    ctx.mark("leader election", f"{type} {cluster} {topic} {indexes}")


async def wait_leader(
    ctx: DrillContext,
    cluster: str,
    topic: str,
    leader: int,
    partitions: list[int] | None = None,
    timeout: float = 30.0,
) -> None:
    await wait_until(
        lambda: _leads(ctx, cluster, topic, partitions or [0], leader),
        timeout,
        f"broker {leader} leading {topic} on {cluster}",
    )


async def _leads(
    ctx: DrillContext, cluster: str, topic: str, partitions: list[int], leader: int
) -> bool:
    async with ctx.cluster(cluster).admin() as admin:
        described: Any = (await admin.describe_topics([topic]))[topic]
    leaders = {p.partition: p.leader_id for p in described.partitions}
    return all(leaders.get(p) == leader for p in partitions)


STEPS = {
    "start_clusters": start_clusters,
    "kill_cluster": kill_cluster,
    "restart_cluster": restart_cluster,
    "kill_broker": kill_broker,
    "stop_broker": stop_broker,
    "start_broker": start_broker,
    "elect_leaders": elect_leaders,
    "wait_leader": wait_leader,
}
