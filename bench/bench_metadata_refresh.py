"""Duration of one MirrorMetadataManager refresh cycle against real clusters.

Run: ``.venv/bin/python -m mirrorsim.bench.bench_metadata_refresh [--topics N] [--groups G]``
(default: 1,000 topics, 1,000 groups)

Two one-broker clusters: the destination in this process (the cycles run on its
``MirrorMetadataManager``), the source as its own OS process (each open partition log
holds a file descriptor, and 20,000 of them in one process reach a common limit on open
files). The source holds N topics of 10 partitions (one config override each) and G
consumer groups with 10 committed offsets each; every topic is in one mirror. Cycles run
through ``refresh_now`` (the periodic interval is set to an hour, so nothing else runs a
cycle), in three shapes:

- first: every group is behind on the destination (G OffsetCommits) — the first cycle;
- steady: both clusters already equal (the common cycle: reads only, no operation);
- drifted: a tenth of the topics got a config change on the source (median of
  ``DRIFT_ROUNDS`` rounds, each changing the value again).

Baseline, measured in the same run: reading the source's topic view alone (one Metadata
and one DescribeConfigs for the mirror's topics), the floor of any cycle. The ratio says
how many such reads a cycle costs. The target is a cycle under 3 s at 1,000 topics,
10,000 partitions and 1,000 groups (the default 30 s interval by a factor of 10), and
that is what the default run measures. Setting the clusters up at that scale (20,000
partition logs, 10,000 mirror partitions that each start mirroring) takes minutes on a
small shared machine; it is timed per phase and reported apart from the cycles. Results
go to bench/results/metadata_refresh.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import platform
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.broker.server import Broker
from mirrorsim.broker.supervisor import ProcessCluster
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import (
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
    TopicPartition,
)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
PARTITIONS_PER_TOPIC = 10
FULL_SCALE = 1000
TARGET_S = 3.0
MIRROR = "bench-mirror"
CHUNK = 100
SLOW_REQUEST_CONFIG = {"request.timeout.ms": "300000", "default.api.timeout.ms": "600000"}
"""Setup requests at full scale (CreateTopics or AddTopicsToMirror of 1,000 partitions on a
shared machine) may outlast the client's default 30 s."""
STEADY_REPEATS = 5
DRIFT_ROUNDS = 3
DRIFTED_RETENTIONS_MS = ("3600000", "7200000")
MIRRORING_TIMEOUT_S = 900.0
SOURCE_STOP_TIMEOUT_S = 300.0
"""A clean shutdown of 10,000 partitions writes their checkpoints; give it time before
the supervisor's SIGKILL."""
POLL_S = 0.5
CLUSTER_CONFIGS = {
    "mirror.topic.num.partitions": 3,
    "mirror.metadata.refresh.interval.ms": 3_600_000,
}


def _chunks(items: list[Any], size: int = CHUNK) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


async def _timed(action: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await action()
    return time.perf_counter() - started, result


async def _create_source_topics(admin: Admin, topics: list[str]) -> None:
    for chunk in _chunks(topics):
        new = [NewTopic(t, PARTITIONS_PER_TOPIC, 1, {"retention.ms": "86400000"}) for t in chunk]
        (await admin.create_topics(new)).all()


async def _commit_source_groups(admin: Admin, topics: list[str], groups: int) -> None:
    for start in range(0, groups, CHUNK):
        await asyncio.gather(
            *(
                admin.alter_consumer_group_offsets(
                    f"group-{g}",
                    {
                        TopicPartition(topics[g % len(topics)], p): 10 + g
                        for p in range(PARTITIONS_PER_TOPIC)
                    },
                )
                for g in range(start, min(start + CHUNK, groups))
            )
        )


async def _drift_configs(admin: Admin, topics: list[str], retention_ms: str) -> int:
    drifted = topics[::10]
    for chunk in _chunks(drifted):
        ops = {
            ConfigResource(ConfigResourceType.TOPIC, t): [
                AlterConfigOp("retention.ms", retention_ms)
            ]
            for t in chunk
        }
        (await admin.incremental_alter_configs(ops)).all()
    return len(drifted)


async def _source_topic_view(admin: Admin, topics: list[str]) -> None:
    await admin.cluster.refresh_metadata(topics)
    await admin.describe_configs(ConfigResource(ConfigResourceType.TOPIC, t) for t in topics)


async def run(topic_count: int, group_count: int, data_dir: Path) -> dict[str, Any]:
    topics = [f"topic-{i:04d}" for i in range(topic_count)]
    source = ProcessCluster(
        ClusterSpec("source", data_dir / "source", configs=CLUSTER_CONFIGS),
        stop_timeout_s=SOURCE_STOP_TIMEOUT_S,
    )
    destination = ClusterRunner(
        ClusterSpec("destination", data_dir / "destination", configs=CLUSTER_CONFIGS)
    )
    # Ctrl-C cancels this task: every cluster started so far is stopped on the way out.
    async with contextlib.AsyncExitStack() as clusters:
        await clusters.enter_async_context(source)
        await clusters.enter_async_context(destination)
        setup: dict[str, float] = {}
        async with Admin(bootstrap=source.bootstrap, config=SLOW_REQUEST_CONFIG) as source_admin:
            setup["source_topics_s"], _ = await _timed(
                lambda: _create_source_topics(source_admin, topics)
            )
            setup["source_groups_s"], _ = await _timed(
                lambda: _commit_source_groups(source_admin, topics, group_count)
            )
            async with Admin(
                bootstrap=destination.bootstrap, config=SLOW_REQUEST_CONFIG
            ) as destination_admin:
                setup["mirror_topics_s"], _ = await _timed(
                    lambda: _mirror_topics(destination_admin, source.bootstrap, topics)
                )
            destination_broker = destination.brokers[0]
            setup["mirroring_s"], mirroring = await _timed(
                lambda: _until_mirroring(destination_broker, len(topics) * PARTITIONS_PER_TOPIC)
            )
            manager = destination_broker.mirror_metadata

            first_s, first = await _timed(lambda: manager.refresh_now(MIRROR))
            steady = [
                (await _timed(lambda: manager.refresh_now(MIRROR)))[0]
                for _ in range(STEADY_REPEATS)
            ]
            baseline = [
                (await _timed(lambda: _source_topic_view(source_admin, topics)))[0]
                for _ in range(STEADY_REPEATS)
            ]
            drifted_rounds = []
            for round_index in range(DRIFT_ROUNDS):
                retention_ms = DRIFTED_RETENTIONS_MS[round_index % len(DRIFTED_RETENTIONS_MS)]
                drifted_count = await _drift_configs(source_admin, topics, retention_ms)
                drifted_rounds.append(await _timed(lambda: manager.refresh_now(MIRROR)))
    baseline_s = statistics.median(baseline)
    steady_s = statistics.median(steady)
    drifted_s = statistics.median(seconds for seconds, _ in drifted_rounds)
    return {
        "topics": topic_count,
        "partitions": topic_count * PARTITIONS_PER_TOPIC,
        "groups": group_count,
        "setup_s": {name: round(seconds, 2) for name, seconds in setup.items()},
        "mirroring_partitions_before_cycles": mirroring,
        "baseline_source_topic_view_s": round(baseline_s, 4),
        "scenarios": {
            "first": {
                "seconds": round(first_s, 4),
                "ratio": round(first_s / baseline_s, 2),
                "group_commits": len(first.group_commits),
                "errors": sum(first.errors.values()),
            },
            "steady": {
                "seconds": round(steady_s, 4),
                "ratio": round(steady_s / baseline_s, 2),
                "operations": 0,
            },
            "drifted": {
                "seconds": round(drifted_s, 4),
                "ratio": round(drifted_s / baseline_s, 2),
                "rounds": [round(seconds, 4) for seconds, _ in drifted_rounds],
                "config_changes_at_source": drifted_count,
                "topic_operations": [len(report.topic_operations) for _, report in drifted_rounds],
                "errors": sum(sum(report.errors.values()) for _, report in drifted_rounds),
            },
        },
    }


async def _until_mirroring(broker: Broker, expected: int) -> int:
    """Wait (at most ``MIRRORING_TIMEOUT_S``) until every mirror partition is MIRRORING, so
    that establishing the mirror does not run inside the measured cycles; the count
    reached."""
    deadline = time.monotonic() + MIRRORING_TIMEOUT_S
    while True:
        count = sum(1 for s in broker.mirrors.partitions.values() if s.state.name == "MIRRORING")
        if count >= expected or time.monotonic() > deadline:
            return count
        await asyncio.sleep(POLL_S)


async def _mirror_topics(admin: Admin, source_bootstrap: str, topics: list[str]) -> None:
    await admin.create_mirror(MIRROR, {"bootstrap.servers": source_bootstrap})
    for chunk in _chunks(topics):
        (await admin.add_topics_to_mirror(MIRROR, chunk)).all()


def _markdown(result: dict[str, Any], command: str) -> str:
    setup = ", ".join(f"{name.removesuffix('_s')} {s} s" for name, s in result["setup_s"].items())
    lines = [
        "# Metadata refresh cycle benchmark",
        "",
        f"Command: `{command}`",
        "",
        f"Python {platform.python_version()} on {platform.machine()}; two one-broker "
        "clusters (destination in the benchmark's process, source in its own); "
        f"{result['topics']} topics, {result['partitions']} partitions, "
        f"{result['groups']} consumer groups ({PARTITIONS_PER_TOPIC} offsets each).",
        f"Setup, not part of any cycle: {setup}. Mirror partitions MIRRORING before the "
        f"first cycle: {result['mirroring_partitions_before_cycles']} of "
        f"{result['partitions']}.",
        "Baseline: reading the source topic view alone (Metadata + DescribeConfigs of the "
        f"mirror's topics), same run: {result['baseline_source_topic_view_s'] * 1000:.1f} ms. "
        "ratio = cycle / baseline.",
        "",
        "| scenario | cycle ms | ratio | under target |",
        "|---|---:|---:|---|",
    ]
    for name, scenario in result["scenarios"].items():
        lines.append(
            f"| {name} | {scenario['seconds'] * 1000:.1f} | {scenario['ratio']} | "
            f"{'yes' if scenario['seconds'] < TARGET_S else 'no'} |"
        )
    lines += [
        "",
        f"Target: under {TARGET_S} s per cycle at 1,000 topics / 10,000 partitions / "
        "1,000 groups. "
        + (
            "Measured at that scale."
            if result["topics"] >= FULL_SCALE and result["groups"] >= FULL_SCALE
            else "This run is smaller than that scale."
        ),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=FULL_SCALE)
    parser.add_argument("--groups", type=int, default=FULL_SCALE)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    module = "mirrorsim.bench.bench_metadata_refresh"
    command = shlex.join([".venv/bin/python", "-m", module, *(argv or sys.argv[1:])])
    with tempfile.TemporaryDirectory(prefix="bench-metadata-refresh-") as tmp:
        result = asyncio.run(run(args.topics, args.groups, Path(tmp)))
    result["target_s"] = TARGET_S
    result["command"] = command
    result["python"] = platform.python_version()
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "metadata_refresh.json").write_text(json.dumps(result, indent=2) + "\n")
    markdown = _markdown(result, command)
    (RESULTS_DIR / "metadata_refresh.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()
