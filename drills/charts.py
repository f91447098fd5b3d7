"""The timeline chart: lag, throughput and partition states over the run, with the
failover and failback marked. Headless (Agg), so it renders on servers and in CI."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import itertools

import matplotlib.pyplot as plt

from mirrorsim.coordinator.state_machine import MirrorPartitionState
from mirrorsim.drills.context import Event
from mirrorsim.drills.sampler import Sample

MARKED = {"failover": "tab:red", "failback": "tab:green", "cluster killed": "black"}
STATE_COLORS: dict[MirrorPartitionState, str] = {
    MirrorPartitionState.PREPARING: "tab:olive",
    MirrorPartitionState.MIRRORING: "tab:blue",
    MirrorPartitionState.PAUSING: "tab:purple",
    MirrorPartitionState.PAUSED: "tab:pink",
    MirrorPartitionState.STOPPING: "tab:orange",
    MirrorPartitionState.STOPPED: "tab:gray",
    MirrorPartitionState.FAILED: "tab:red",
    MirrorPartitionState.UNKNOWN: "tab:brown",
}
"""One colour per partition state, the same in every drill's timeline."""


def throughput(samples: Sequence[Sample], attribute: str) -> list[float]:
    """Records per second between consecutive samples (0 for the first; none without
    samples, as when the drill failed before the sampler's first tick)."""
    rates = [0.0] if samples else []
    for previous, current in itertools.pairwise(samples):
        elapsed = current.time - previous.time
        delta = getattr(current, attribute) - getattr(previous, attribute)
        rates.append(delta / elapsed if elapsed > 0 else 0.0)
    return rates


def timeline_chart(
    samples: Sequence[Sample], events: Sequence[Event], path: Path, title: str
) -> Path:
    figure, (lag_ax, rate_ax, state_ax) = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    times = [s.time for s in samples]
    for label in sorted({k for s in samples for k in s.lag}):
        lag_ax.plot(times, [s.lag.get(label, float("nan")) for s in samples], label=label)
    lag_ax.set_ylabel("mirror lag (records)")
    rate_ax.plot(times, throughput(samples, "acked"), label="acknowledged/s")
    rate_ax.plot(times, throughput(samples, "consumed"), label="consumed/s")
    rate_ax.set_ylabel("records per second")
    states = [s for s in STATE_COLORS if any(s.name in x.states for x in samples)]
    if states:
        state_ax.stackplot(
            times,
            [[x.states.get(s.name, 0) for x in samples] for s in states],
            labels=[s.name for s in states],
            colors=[STATE_COLORS[s] for s in states],
        )
    state_ax.set_ylabel("mirror partitions")
    state_ax.set_xlabel("seconds since start")
    for ax in (lag_ax, rate_ax, state_ax):
        for event in events:
            color = MARKED.get(event.kind)
            if color is not None:
                ax.axvline(event.time, color=color, linestyle="--", linewidth=1)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper right", fontsize="small")
    for event in events:
        if event.kind in MARKED:
            lag_ax.annotate(
                event.kind,
                (event.time, 1.0),
                xycoords=("data", "axes fraction"),
                rotation=90,
                va="top",
                ha="right",
                fontsize="small",
                color=MARKED[event.kind],
            )
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
