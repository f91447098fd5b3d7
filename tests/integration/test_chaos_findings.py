"""Schedules the explorer found, replayed step by step on two in-process clusters: each
once ended in an error or a false verdict, and must now end in a clean one."""

from __future__ import annotations

from mirrorsim.drills.chaos.explorer import Explorer
from mirrorsim.drills.chaos.schedule import Schedule
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
