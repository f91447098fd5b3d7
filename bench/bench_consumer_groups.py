"""Cost of the KIP-848 coordinator's hot paths, without any I/O.

Run: ``.venv/bin/python -m mirrorsim.bench.bench_consumer_groups [--quick]``

The assignors run on the broker's event loop whenever a group's epoch moves, and a
heartbeat that changes nothing is what a stable group sends every heartbeat interval, so
both must stay small as groups grow. Measured: `uniform` from scratch and after one more
member joins (sticky: it starts from the previous target), `range` from scratch, for
groups of 10 to 500 members subscribed alike to three topics; and the median stable
heartbeat of a 500-member group, through `ConsumerGroupCoordinator` on a manual clock.
Results go to bench/results/consumer_groups.json and consumer_groups.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import uuid
from pathlib import Path

from mirrorsim.bench.waiting import median_ms
from mirrorsim.broker.group import GroupConfig, ManualClock, TopicPartition
from mirrorsim.broker.group.assignors import range_assign, uniform_assign
from mirrorsim.broker.group.consumer_coordinator import ConsumerGroupCoordinator
from mirrorsim.broker.group.consumer_messages import ConsumerHeartbeat, TopicInfo

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TOPICS = ("a", "b", "c")
SHAPES = ((10, 100), (100, 1_000), (500, 3_000))
"""(members, partitions per topic)."""
HEARTBEAT_MEMBERS = 500
HEARTBEAT_PARTITIONS_PER_TOPIC = 900


def assignor_rows(repeat: int) -> list[dict[str, float | int]]:
    rows: list[dict[str, float | int]] = []
    for members, per_topic in SHAPES:
        subscriptions = {f"m{i:04d}": frozenset(TOPICS) for i in range(members)}
        counts = dict.fromkeys(TOPICS, per_topic)
        first = uniform_assign(subscriptions, counts, {})
        joined = {**subscriptions, "newcomer": frozenset(TOPICS)}
        rows.append(
            {
                "members": members,
                "partitions": per_topic * len(TOPICS),
                "uniform_ms": median_ms(
                    lambda s=subscriptions, c=counts: uniform_assign(s, c, {}), repeat
                ),
                "uniform_join_ms": median_ms(
                    lambda j=joined, c=counts, f=first: uniform_assign(j, c, f), repeat
                ),
                "range_ms": median_ms(
                    lambda s=subscriptions, c=counts: range_assign(s, c, {}), repeat
                ),
            }
        )
    return rows


def stable_heartbeat_us(repeat: int) -> float:
    """Median cost of one heartbeat that changes nothing, in a settled 500-member group."""
    topics = {t: TopicInfo(uuid.uuid4(), HEARTBEAT_PARTITIONS_PER_TOPIC) for t in TOPICS}
    coordinator = ConsumerGroupCoordinator(clock=ManualClock(), config=GroupConfig())
    state: dict[str, tuple[int, frozenset[TopicPartition]]] = {}
    for i in range(HEARTBEAT_MEMBERS):
        joined = coordinator.heartbeat(
            ConsumerHeartbeat(
                group_id="g",
                member_id=f"m{i}",
                member_epoch=0,
                rebalance_timeout_ms=60_000,
                subscribed_topic_names=TOPICS,
                owned=frozenset(),
            ),
            topics,
        )
        state[f"m{i}"] = (joined.member_epoch, joined.assignment or frozenset())
    for _ in range(3):  # revocations acknowledged, partitions handed over: settled
        for member_id, (epoch, owned) in list(state.items()):
            beat = coordinator.heartbeat(
                ConsumerHeartbeat(
                    group_id="g", member_id=member_id, member_epoch=epoch, owned=owned
                ),
                topics,
            )
            state[member_id] = (
                beat.member_epoch,
                owned if beat.assignment is None else beat.assignment,
            )
    requests = [
        ConsumerHeartbeat(group_id="g", member_id=m, member_epoch=e) for m, (e, _) in state.items()
    ]

    def one_round() -> None:
        for request in requests:
            coordinator.heartbeat(request, topics)

    return median_ms(one_round, repeat) * 1000 / len(requests)


def render_markdown(result: dict) -> str:
    lines = [
        "# KIP-848 coordinator hot paths",
        "",
        f"`{result['command']}` (Python {result['python']}, {result['machine']}; median of "
        f"{result['repeat']} runs)",
        "",
        "| members | partitions | uniform (ms) | uniform, one more member (ms) | range (ms) |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['members']} | {r['partitions']} | {r['uniform_ms']:.1f} | "
        f"{r['uniform_join_ms']:.1f} | {r['range_ms']:.1f} |"
        for r in result["assignors"]
    ]
    lines += [
        "",
        f"Stable heartbeat, {HEARTBEAT_MEMBERS} members on "
        f"{HEARTBEAT_PARTITIONS_PER_TOPIC * len(TOPICS)} partitions: "
        f"{result['stable_heartbeat_us']:.0f} µs each.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 11
    command = "python -m mirrorsim.bench.bench_consumer_groups" + (" --quick" if args.quick else "")
    started = time.perf_counter()
    result = {
        "command": command,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "repeat": repeat,
        "assignors": assignor_rows(repeat),
        "stable_heartbeat_us": stable_heartbeat_us(repeat),
    }
    result["wall_s"] = round(time.perf_counter() - started, 1)
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "consumer_groups.json").write_text(json.dumps(result, indent=2) + "\n")
    markdown = render_markdown(result)
    (RESULTS_DIR / "consumer_groups.md").write_text(markdown)
    print(markdown, end="")


if __name__ == "__main__":
    main()
