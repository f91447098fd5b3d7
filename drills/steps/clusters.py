"""Steps on clusters and brokers: start, kill, restart, leader elections."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from mirrorsim.client.cluster import ClusterClient, RequestSpec
from mirrorsim.drills.context import DrillContext
from mirrorsim.drills.polling import wait_until
from mirrorsim.protocol.errors import ErrorCode, KafkaError

ELECT_LEADERS_KEY = 43
ELECTION_TYPES = {"preferred": 0, "unclean": 1}
ELECTION_ATTEMPT_S = 5.0


async def start_clusters(ctx: DrillContext, names: list[str] | None = None) -> None:
    chosen = names or list(ctx.clusters)
    await asyncio.gather(*(ctx.cluster(name).start() for name in chosen))
    for name in chosen:
        ctx.mark("cluster started", f"{name} {ctx.cluster(name).bootstrap}")


async def kill_cluster(ctx: DrillContext, cluster: str) -> None:
    await ctx.cluster(cluster).kill()
    ctx.mark("cluster killed", cluster)


async def restart_cluster(ctx: DrillContext, cluster: str) -> None:
    await ctx.cluster(cluster).restart()
    ctx.mark("cluster restarted", f"{cluster} {ctx.cluster(cluster).bootstrap}")


async def kill_broker(ctx: DrillContext, cluster: str, broker: int) -> None:
    await ctx.cluster(cluster).kill_broker(broker)
    ctx.mark("broker killed", f"{cluster} broker {broker}")


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
    """ElectLeaders (PREFERRED or UNCLEAN) through the wire protocol, then wait until
    ``leader`` (when given) leads every partition. Each attempt asks the controller to
    answer within a few seconds, so an attempt made while a restarted replica is not yet
    registered is retried instead of holding the whole ``timeout``."""
    wanted = partitions or [0]
    target = ctx.cluster(cluster)
    spec = RequestSpec(
        ELECT_LEADERS_KEY,
        {
            "election_type": ELECTION_TYPES[type],
            "topic_partitions": [{"topic": topic, "partitions": wanted}],
            "timeout": datetime.timedelta(seconds=min(timeout, ELECTION_ATTEMPT_S)),
        },
    )

    async def elect() -> bool:
        async with ClusterClient(target.bootstrap, client_id="mirrorsim-drill") as client:
            await client.refresh_metadata([topic])
            response = await client.send_to_controller(spec)
        if response.error_code not in (ErrorCode.NONE,):
            raise KafkaError(ErrorCode(response.error_code), "ElectLeaders")
        codes = [
            p.error_code for t in response.replica_election_results for p in t.partition_result
        ]
        return all(c in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED) for c in codes)

    await wait_until(elect, timeout, f"{type} election of {topic} {wanted} on {cluster}")
    if leader is not None:
        await wait_until(
            lambda: _leads(ctx, cluster, topic, wanted, leader),
            timeout,
            f"broker {leader} leading {topic} {wanted} on {cluster}",
        )
    ctx.mark("leader election", f"{type} {cluster} {topic} {wanted}")


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
