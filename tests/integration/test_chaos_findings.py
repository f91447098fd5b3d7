"""Schedules the explorer found, replayed step by step on two in-process clusters: each
once ended in an error or a false verdict, and must now end in a clean one."""

from __future__ import annotations

import asyncio
from typing import Any

from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.drills.chaos.explorer import Explorer
from mirrorsim.drills.chaos.observe import OFFLINE
from mirrorsim.drills.chaos.schedule import Schedule
from mirrorsim.drills.chaos.steps import _state_once_led, _state_or_none
from mirrorsim.drills.clusters import DrillCluster
from mirrorsim.drills.scenario import Step

SETUP = ("chaos_setup", {"source": "a", "destination": "b"})


def _schedule(tag: str, *lines: tuple[str, dict]) -> Schedule:
    names = {"topic": f"chaos-{tag}", "mirror": f"mirror-{tag}"}
    steps = []
    for kind, params in (SETUP, *lines):
        wanted = {k: v for k, v in names.items() if k in _NAMED.get(kind, ())}
        steps.append(Step(kind, {**params, **wanted}))
    return Schedule(0, 0, tag, tuple(steps))


_NAMED = {
    "chaos_setup": ("topic", "mirror"),
    "chaos_remove": ("topic", "mirror"),
    "chaos_add": ("topic", "mirror"),
    "chaos_failback": ("topic", "mirror"),
    "chaos_grant_acl": ("topic",),
    "chaos_produce": ("topic",),
    "chaos_alter_config": ("topic",),
    "chaos_state_leader_down": ("topic", "mirror"),
}


async def test_a_broker_restarted_twice_while_it_leads_mirror_state_starts_cleanly() -> None:
    """The second restart used to fail: the fenced broker saw itself named leader of a
    ``__mirror_state`` partition in the snapshot and replayed a partition its replica
    manager did not host yet (UNKNOWN_TOPIC_OR_PARTITION out of ``start``)."""
    schedule = _schedule(
        "restart-twice",
        ("chaos_broker_down", {"cluster": "b", "broker": 2}),
        ("chaos_restore", {"cluster": "b"}),
        ("chaos_grant_acl", {"cluster": "a", "principal": "User:app"}),
        ("chaos_broker_down", {"cluster": "b", "broker": 2}),
        ("chaos_restore", {"cluster": "b"}),
        ("chaos_outage", {"cluster": "b"}),
        ("chaos_grant_acl", {"cluster": "a", "principal": "User:app"}),
        ("chaos_produce", {"cluster": "a", "records": 3}),
    )
    async with Explorer() as explorer:
        outcome = await explorer.run(schedule)
    assert outcome.error is None
    assert outcome.violations == []


async def test_grants_after_a_refused_remove_are_not_counted_as_the_operators() -> None:
    """With the topic's only replica down, the remove is refused and the topic stays
    mirrored; the sync may then undo grants made on it. The check used to take the
    unanswerable mirror state for "not mirrored" and report acls-survive and
    configs-survive."""
    schedule = _schedule(
        "refused-remove",
        ("chaos_grant_acl", {"cluster": "a", "principal": "User:ops"}),
        ("chaos_broker_down", {"cluster": "b", "broker": 1}),
        ("chaos_remove", {"cluster": "b"}),
        ("chaos_outage", {"cluster": "a"}),
        ("chaos_grant_acl", {"cluster": "b", "principal": "User:app"}),
        ("chaos_produce", {"cluster": "b", "records": 3}),
        ("chaos_alter_config", {"cluster": "b", "retention_ms": 3_600_000}),
    )
    async with Explorer() as explorer:
        outcome = await explorer.run(schedule)
    assert outcome.error is None
    assert outcome.violations == []


async def test_a_grant_right_after_the_replicas_broker_is_back_is_not_the_operators() -> None:
    """Seed 26, schedule 56: the remove is refused while the topic's only replica is down,
    that broker comes back, and a produce (refused) and a grant follow. The restored leader did not
    serve the partition yet, so DescribeMirrors reported no mirror for it, and the check
    counted the grant as the operator's; the sync then rightly took it away
    (acls-survive). The schedule's own adds and removes now decide that case."""
    schedule = _schedule(
        "restored-leader",
        ("chaos_state_leader_down", {"cluster": "b"}),
        ("chaos_remove", {"cluster": "b"}),
        ("chaos_restore", {"cluster": "b"}),
        ("chaos_produce", {"cluster": "b", "records": 3}),
        ("chaos_grant_acl", {"cluster": "b", "principal": "User:new-producer"}),
        ("chaos_state_leader_down", {"cluster": "a"}),
        ("chaos_produce", {"cluster": "b", "records": 3}),
        ("chaos_broker_down", {"cluster": "b", "broker": 2}),
    )
    async with Explorer() as explorer:
        outcome = await explorer.run(schedule)
    assert outcome.error is None
    assert outcome.violations == []


async def test_mirroring_a_topic_back_during_its_failback_is_refused_and_nothing_diverges() -> None:
    """A failback mirror on ``a`` and then the topic added back on ``b`` mirrored it both
    ways at once: each side truncated to the other's epochs and the final logs differed
    from batch 0 (destination-equals-source). The add on ``b`` is now refused."""
    schedule = _schedule(
        "cycle",
        ("chaos_produce", {"cluster": "b", "records": 3}),
        ("chaos_remove", {"cluster": "b"}),
        ("chaos_produce", {"cluster": "b", "records": 3}),
        ("chaos_produce", {"cluster": "a", "records": 3}),
        ("chaos_failback", {"cluster": "a", "source": "b"}),
        ("chaos_add", {"cluster": "b", "source": "a"}),
        ("chaos_remove", {"cluster": "a"}),
        ("chaos_produce", {"cluster": "a", "records": 3}),
    )
    async with Explorer() as explorer:
        outcome = await explorer.run(schedule)
    assert outcome.error is None
    assert outcome.violations == []
    assert outcome.refused >= 1


async def test_restarting_the_broker_a_partial_outage_took_down_is_skipped() -> None:
    """The generator does not track which broker of a cluster is down, so a restart may
    name it; the step used to raise "has no running broker" and end the schedule in an
    error. It is skipped: only a restore brings that broker back."""
    schedule = _schedule(
        "restart-down",
        ("chaos_broker_down", {"cluster": "a", "broker": 1}),
        ("chaos_restart", {"cluster": "a", "broker": 1}),
        ("chaos_produce", {"cluster": "a", "records": 3}),
    )
    async with Explorer() as explorer:
        outcome = await explorer.run(schedule)
    assert outcome.error is None
    assert outcome.violations == []


async def _leader(cluster: DrillCluster, topic: str) -> int | None:
    async with Admin(bootstrap=cluster.bootstrap) as admin:
        metadata = await admin.cluster.refresh_metadata([topic])
    info = metadata.topics.get(topic)
    partition = None if info is None else info.partitions.get(0)
    return None if partition is None or partition.leader_id < 0 else partition.leader_id


async def test_a_write_whose_partition_lost_its_leader_is_judged_once_it_has_one_again(
    wait_for: Any,
) -> None:
    """Seed 5, schedule 112 reported "produce acknowledged at 8 in OFFLINE" on the
    source, where no mirror ever held the topic: right after the write, the partition's
    only replica was without leadership (its broker fenced for a missed heartbeat, say),
    and the check took "cannot tell" for "read-only". The state is now asked again until
    the partition has a leader."""
    async with Explorer() as explorer:
        cluster = explorer.clusters["a"]
        async with Admin(bootstrap=cluster.bootstrap) as admin:
            (await admin.create_topics([NewTopic("led-again", 1, 1)])).all()
        leader = await wait_for(lambda: _leader(cluster, "led-again"), 20, "a leader")
        await cluster.kill_broker(leader)

        async def offline() -> bool:
            return await _state_or_none(cluster, "led-again") == OFFLINE

        await wait_for(offline, 20, "the partition without a leader")
        judged = asyncio.create_task(_state_once_led(cluster, "led-again"))
        await cluster.start_broker(leader)
        assert await judged is None
