"""Cost of one metadata sync diff cycle at scale, without any I/O.

Run: ``.venv/bin/python -m mirrorsim.bench.bench_sync_diff [--quick]``

One mirror of 1,000 topics (10,000 partitions, 5 config overrides each) and 1,000
consumer groups (10 committed partitions each), plus 2,000 ACL bindings, in two shapes:
steady (both clusters already equal: the common cycle, which must produce no operation)
and drifted (a tenth of the topics missing, a tenth with more source partitions, a fifth
with a changed config, every group behind, a tenth of the ACLs missing). The baseline,
measured in the same run on the same views, is a scan that only reads every topic config,
group offset and ACL binding of both sides into dicts: a floor any diff has to pay. The
ratio says how many scans one diff costs. Results go to bench/results/sync_diff.json
and sync_diff.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from mirrorsim.bench.waiting import median_ms
from mirrorsim.coordinator.sync import (
    AclScope,
    GroupType,
    GroupView,
    MirrorSyncFilters,
    MirrorTopic,
    TopicPartition,
    TopicView,
    diff_acls,
    diff_groups,
    diff_topics,
)
from mirrorsim.protocol.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TOPICS = 1_000
PARTITIONS_PER_TOPIC = 10
GROUPS = 1_000
PARTITIONS_PER_GROUP = 10
ACLS = 2_000


@dataclass(frozen=True)
class Views:
    source_topics: list[TopicView]
    destination_topics: list[TopicView]
    mirror_topics: list[MirrorTopic]
    source_groups: list[GroupView]
    destination_groups: list[GroupView]
    source_acls: list[AclBinding]
    destination_acls: list[AclBinding]


def build_views(*, drifted: bool) -> Views:
    source_topics = [
        TopicView(
            f"topic-{i:04d}",
            uuid.UUID(int=i + 1),
            PARTITIONS_PER_TOPIC,
            {
                "retention.ms": str(86_400_000 + i),
                "cleanup.policy": "delete",
                "segment.bytes": "536870912",
                "max.message.bytes": "2097152",
                "min.insync.replicas": "2",
            },
        )
        for i in range(TOPICS)
    ]
    destination_topics = [
        topic
        if not drifted or i % 5
        else replace(topic, configs={**topic.configs, "retention.ms": "1"})
        for i, topic in enumerate(source_topics)
        if not drifted or i % 10 != 1
    ]
    if drifted:
        destination_topics = [
            replace(t, partition_count=PARTITIONS_PER_TOPIC - 2) if i % 10 == 3 else t
            for i, t in enumerate(destination_topics)
        ]
    source_groups = [
        GroupView(
            f"group-{g:04d}",
            GroupType.CONSUMER,
            {
                TopicPartition(f"topic-{(g + k) % TOPICS:04d}", k): 1_000 + g
                for k in range(PARTITIONS_PER_GROUP)
            },
        )
        for g in range(GROUPS)
    ]
    destination_groups = [
        GroupView(g.group_id, g.group_type, {tp: o - 10 for tp, o in g.offsets.items()})
        if drifted
        else g
        for g in source_groups
    ]
    source_acls = [
        AclBinding(
            ResourceType.TOPIC,
            f"topic-{i % TOPICS:04d}",
            PatternType.LITERAL,
            f"User:app-{i // TOPICS}",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
        for i in range(ACLS)
    ]
    destination_acls = [b for i, b in enumerate(source_acls) if not drifted or i % 10]
    return Views(
        source_topics,
        destination_topics,
        [MirrorTopic(t.name) for t in source_topics],
        source_groups,
        destination_groups,
        source_acls,
        destination_acls,
    )


FILTERS = MirrorSyncFilters.from_mirror_config({})


def diff_cycle(views: Views) -> int:
    topic_ops = diff_topics(
        views.source_topics,
        views.destination_topics,
        views.mirror_topics,
        FILTERS.topic_config_exclude,
    )
    group_plan = diff_groups(
        views.source_groups, views.destination_groups, views.mirror_topics, FILTERS.groups_include
    )
    scope = AclScope.of(views.mirror_topics, (t.name for t in views.destination_topics))
    acl_ops = diff_acls(views.source_acls, views.destination_acls, FILTERS.acl_include, scope)
    return len(topic_ops) + len(group_plan.commits) + sum(len(op.bindings) for op in acl_ops)


def scan(views: Views) -> int:
    """Read every config, offset and binding of both sides once, deciding nothing."""
    seen = 0
    for topics in (views.source_topics, views.destination_topics):
        seen += len({t.name: dict(t.configs) for t in topics})
    for groups in (views.source_groups, views.destination_groups):
        seen += len({g.group_id: dict(g.offsets) for g in groups})
    for acls in (views.source_acls, views.destination_acls):
        seen += len(set(acls))
    return seen


def render_markdown(result: dict[str, object]) -> str:
    rows = result["scenarios"]
    assert isinstance(rows, list)
    lines = [
        "# Metadata sync diff benchmark",
        "",
        f"Command: `{result['command']}`",
        "",
        f"Python {result['python']} on {result['machine']}; {TOPICS} topics, "
        f"{TOPICS * PARTITIONS_PER_TOPIC} partitions, {GROUPS} consumer groups "
        f"({GROUPS * PARTITIONS_PER_GROUP} committed offsets), {ACLS} ACL bindings per side.",
        "Baseline: a scan reading every config, offset and binding of both sides into dicts, "
        "same views, same run. ratio = diff time / scan time.",
        "",
        "| scenario | operations | diff ms | scan ms | ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['scenario']} | {r['operations']} | {r['diff_ms']:.2f} | {r['scan_ms']:.2f} "
        f"| {r['ratio']:.2f} |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 15
    command = "python -m mirrorsim.bench.bench_sync_diff" + (" --quick" if args.quick else "")
    scenarios = []
    for name, drifted in (("steady", False), ("drifted", True)):
        views = build_views(drifted=drifted)
        diff_ms = median_ms(lambda views=views: diff_cycle(views), repeat)
        scan_ms = median_ms(lambda views=views: scan(views), repeat)
        scenarios.append(
            {
                "scenario": name,
                "operations": diff_cycle(views),
                "diff_ms": diff_ms,
                "scan_ms": scan_ms,
                "ratio": diff_ms / scan_ms,
            }
        )
    result = {
        "command": command,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "topics": TOPICS,
        "partitions": TOPICS * PARTITIONS_PER_TOPIC,
        "groups": GROUPS,
        "acl_bindings": ACLS,
        "repeat": repeat,
        "scenarios": scenarios,
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "sync_diff.json").write_text(json.dumps(result, indent=2) + "\n")
    markdown = render_markdown(result)
    (RESULTS_DIR / "sync_diff.md").write_text(markdown)
    print(markdown, end="")


if __name__ == "__main__":
    main()
