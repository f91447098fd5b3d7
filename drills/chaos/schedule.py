"""Seeded schedules: a random walk over a model of one mirrored topic's lifecycle.

Two clusters of two brokers, ``a`` and ``b``. Every schedule starts with ``chaos_setup`` (a topic on
``a`` mirrored to ``b``), takes ``steps`` further steps and ends with ``chaos_check``.
Each next step is drawn, with the weights of ``WEIGHTS``, from the steps the model says
make sense now (an operator removes only a mirrored topic, restores only a cluster that
is down), so most of a schedule exercises the lifecycle rather than refusals. The same
seed and index give the same schedule; the names carry a tag so that schedules can run
one after another on the same two clusters.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mirrorsim.drills.scenario import Step

CLUSTERS = ("a", "b")
BROKERS = (1, 2)
"""Every cluster has two brokers: one can be down while the other answers."""
PRINCIPALS = ("User:new-producer", "User:app", "User:ops")

WEIGHTS: dict[str, int] = {
    "chaos_produce": 4,
    "chaos_remove": 4,
    "chaos_add": 3,
    "chaos_failback": 3,
    "chaos_pause": 1,
    "chaos_resume": 2,
    "chaos_delete_mirror": 1,
    "chaos_grant_acl": 2,
    "chaos_alter_config": 1,
    "chaos_transaction": 1,
    "chaos_outage": 3,
    "chaos_restore": 3,
    "chaos_restart": 1,
    "chaos_broker_down": 3,
    "chaos_state_leader_down": 3,
    "chaos_freeze": 1,
}
FAULTS = frozenset(
    {
        "chaos_outage",
        "chaos_restart",
        "chaos_freeze",
        "chaos_broker_down",
        "chaos_state_leader_down",
    }
)


@dataclass(frozen=True, slots=True)
class Schedule:
    seed: int
    index: int
    tag: str
    steps: tuple[Step, ...]

    @property
    def topic(self) -> str:
        return f"chaos-{self.tag}"

    @property
    def mirror(self) -> str:
        return f"mirror-{self.tag}"

    def renamed(self, tag: str) -> Schedule:
        """The same steps on fresh names (re-runs on clusters the original used)."""
        names = {self.topic: f"chaos-{tag}", self.mirror: f"mirror-{tag}"}
        steps = tuple(
            Step(s.kind, {k: _renamed(v, names) for k, v in s.params.items()}) for s in self.steps
        )
        return replace(self, tag=tag, steps=steps)

    def with_steps(self, steps: tuple[Step, ...]) -> Schedule:
        return replace(self, steps=steps)


def _renamed(value: Any, names: dict[str, str]) -> Any:
    return names.get(value, value) if isinstance(value, str) else value


@dataclass
class _Model:
    """What the generator believes: which clusters are up (``partial``: one broker
    down), and per cluster whether a mirror of the topic exists there and the topic's
    state in it."""

    up: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(CLUSTERS, True))
    partial: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(CLUSTERS, False))
    mirror_on: dict[str, bool] = field(default_factory=lambda: {"a": False, "b": True})
    state: dict[str, str | None] = field(default_factory=lambda: {"a": None, "b": "mirroring"})

    def source_of(self, cluster: str) -> str:
        return "b" if cluster == "a" else "a"

    def writable(self, cluster: str) -> bool:
        return self.state[cluster] in (None, "stopped")


def schedule_tag(seed: int, index: int) -> str:
    return f"{seed}-{index}"


def generate(seed: int, index: int, steps: int, *, processes: bool = False) -> Schedule:
    """Schedule ``index`` of the exploration seeded with ``seed``; ``processes`` adds the
    faults only broker processes can take (SIGSTOP/SIGCONT)."""
    rng = random.Random(f"{seed}/{index}")
    tag = schedule_tag(seed, index)
    topic, mirror = f"chaos-{tag}", f"mirror-{tag}"
    model = _Model()
    chosen = [
        Step(
            "chaos_setup",
            {"source": "a", "destination": "b", "topic": topic, "mirror": mirror},
        )
    ]
    for _ in range(steps):
        options = [
            option
            for option in _options(model, topic, mirror, rng)
            if processes or option[0] != "chaos_freeze"
        ]
        kinds = [kind for kind, _ in options]
        kind_index = rng.choices(range(len(options)), [WEIGHTS[k] for k in kinds])[0]
        step, apply = options[kind_index][1]()
        apply()
        chosen.append(step)
    return Schedule(seed, index, tag, tuple(chosen))


Option = tuple[str, Callable[[], tuple[Step, Callable[[], None]]]]

FREEZE_S = 2.0
"""A freeze past the explorer's broker session (1.5 s): the broker is fenced."""
STALL_S = 1.0
"""A freeze within the session but past ``replica.lag.time.max.ms`` with replicas
(``explorer.ISR_LAG_MS``): the broker stays registered, its followers leave the ISRs."""


def _freeze(cluster: str, broker: int, rng: random.Random) -> Option:
    """SIGSTOP one broker, for a fence or a stall: drawn only once the step is chosen, so
    the schedules without a freeze stay as they were."""

    def build() -> tuple[Step, Callable[[], None]]:
        seconds = rng.choice((FREEZE_S, STALL_S))
        return Step(
            "chaos_freeze", {"cluster": cluster, "broker": broker, "seconds": seconds}
        ), lambda: None

    return "chaos_freeze", build


def _options(model: _Model, topic: str, mirror: str, rng: random.Random) -> Iterator[Option]:
    """Every step that makes sense in ``model``, each with how it changes the model."""

    def make(kind: str, params: dict[str, Any], effect: Callable[[], None]) -> Option:
        return kind, lambda: (Step(kind, params), effect)

    def nothing() -> None:
        return None

    def set_state(cluster: str, state: str | None, exists: bool = True) -> Callable[[], None]:
        def effect() -> None:
            model.state[cluster] = state
            model.mirror_on[cluster] = exists

        return effect

    for cluster in CLUSTERS:
        if not model.up[cluster] or model.partial[cluster]:
            restored = _both(_set(model.up, cluster, True), _set(model.partial, cluster, False))
            yield make("chaos_restore", {"cluster": cluster}, restored)
        if not model.up[cluster]:
            continue
        other = model.source_of(cluster)
        named = {"cluster": cluster, "mirror": mirror, "topic": topic}
        yield make("chaos_produce", {"cluster": cluster, "topic": topic, "records": 3}, nothing)
        state = model.state[cluster]
        if state in ("mirroring", "paused"):
            yield make("chaos_remove", named, set_state(cluster, "stopped"))
        if state == "mirroring":
            yield make("chaos_pause", named, set_state(cluster, "paused"))
        if state == "paused":
            yield make("chaos_resume", named, set_state(cluster, "mirroring"))
        if state == "stopped" and model.mirror_on[cluster]:
            yield make("chaos_add", {**named, "source": other}, set_state(cluster, "mirroring"))
            yield make(
                "chaos_delete_mirror",
                {"cluster": cluster, "mirror": mirror},
                set_state(cluster, "stopped", exists=False),
            )
        if not model.mirror_on[cluster] and model.writable(other):
            yield make(
                "chaos_failback", {**named, "source": other}, set_state(cluster, "mirroring")
            )
        if model.writable(cluster):
            principal = rng.choice(PRINCIPALS)
            yield make(
                "chaos_grant_acl",
                {"cluster": cluster, "topic": topic, "principal": principal},
                nothing,
            )
            retention = rng.choice((3_600_000, 7_200_000, 86_400_000))
            yield make(
                "chaos_alter_config",
                {"cluster": cluster, "topic": topic, "retention_ms": retention},
                nothing,
            )
            yield make(
                "chaos_transaction",
                {"cluster": cluster, "topic": topic, "commit": rng.random() < 0.5},
                nothing,
            )
        if model.up[other]:
            yield make("chaos_outage", {"cluster": cluster}, _set(model.up, cluster, False))
            broker = rng.choice(BROKERS)
            yield make("chaos_restart", {"cluster": cluster, "broker": broker}, nothing)
            yield _freeze(cluster, broker, rng)
            if not model.partial[cluster]:
                yield make(
                    "chaos_broker_down",
                    {"cluster": cluster, "broker": broker},
                    _set(model.partial, cluster, True),
                )
                if model.writable(other):
                    yield make(
                        "chaos_state_leader_down",
                        {"cluster": cluster, "mirror": mirror, "topic": topic},
                        _set(model.partial, cluster, True),
                    )


def _both(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    def effect() -> None:
        first()
        second()

    return effect


def _set(table: dict[str, bool], key: str, value: bool) -> Callable[[], None]:
    def effect() -> None:
        table[key] = value

    return effect


def scenario_document(
    schedule: Schedule, cluster_configs: Mapping[str, Any], note: str, mode: str = "in-process"
) -> dict:
    """The schedule as a drill scenario (``mirrorsim drill run`` replays it)."""
    return {
        "name": f"chaos-{schedule.tag}",
        "description": f"Chaos schedule {schedule.index} of seed {schedule.seed}. {note}",
        "notes": note,
        "clusters": [
            {"name": name, "brokers": len(BROKERS), "configs": dict(cluster_configs), "mode": mode}
            for name in CLUSTERS
        ],
        "steps": [{"start_clusters": {}}]
        + [{s.kind: dict(s.params)} for s in schedule.steps]
        + [{"chaos_check": {}}],
        "assert": ["chaos_violations == []"],
    }
