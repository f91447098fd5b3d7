"""What an add of existing topics costs now that it is answered only once they are
read-only: the re-add of a failover's topics (a failback or a restart of mirroring)
against the first add of the same topics (which creates them and waits for nothing).

Run: ``.venv/bin/python -m mirrorsim.bench.bench_readd [--topics N]``

Two in-process clusters, a one-broker source and a two-broker destination (so most
partitions are led by a broker other than the one answering). Between the steps the
benchmark waits on the partition states, not on a clock. Results go to
bench/results/readd.json and readd.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import tempfile
import time
from pathlib import Path

from mirrorsim.bench.waiting import until
from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic

RESULTS_DIR = Path(__file__).resolve().parent / "results"
CONFIGS = {"mirror.topic.num.partitions": 3, "mirror.fetch.max.wait.ms": 50}
ADMIN = {"default.api.timeout.ms": "300000", "request.timeout.ms": "300000"}
MIRROR = "readd"
SETTLE_S = 300.0


def states(cluster: ClusterRunner, names: list[str]) -> set[str]:
    """The state of every topic's partition 0 at its leader ("none" while unknown)."""
    seen = set()
    for name in names:
        found = "none"
        for broker in cluster.brokers:
            status = broker.mirrors.partitions.get((name, 0))
            if status is not None:
                found = status.state.name
        seen.add(found)
    return seen


async def measure(topics: int) -> dict[str, float]:
    names = [f"readd-{i}" for i in range(topics)]
    with tempfile.TemporaryDirectory() as root:
        source = ClusterRunner(ClusterSpec("a", Path(root) / "a", port=0, configs=CONFIGS))
        destination = ClusterRunner(
            ClusterSpec("b", Path(root) / "b", brokers=2, port=0, configs=CONFIGS)
        )
        await source.start()
        await destination.start()
        try:
            async with Admin(bootstrap=source.bootstrap) as admin:
                (await admin.create_topics([NewTopic(n, 1, 1) for n in names])).all()
            async with Admin(bootstrap=destination.bootstrap, config=ADMIN) as admin:
                await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
                started = time.monotonic()
                (await admin.add_topics_to_mirror(MIRROR, names)).all()
                first = time.monotonic() - started
                await until(
                    lambda: states(destination, names) == {"MIRRORING"}, SETTLE_S, "MIRRORING", 0.05
                )
                (await admin.remove_topics_from_mirror(MIRROR, names)).all()
                await until(
                    lambda: states(destination, names) == {"STOPPED"}, SETTLE_S, "STOPPED", 0.05
                )
                started = time.monotonic()
                (await admin.add_topics_to_mirror(MIRROR, names)).all()
                again = time.monotonic() - started
                assert "STOPPED" not in states(destination, names)
        finally:
            await destination.stop()
            await source.stop()
    return {"topics": topics, "first_add_s": round(first, 2), "re_add_s": round(again, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=200)
    args = parser.parse_args()
    logging.getLogger("mirrorsim").setLevel(logging.ERROR)
    result = asyncio.run(measure(args.topics))
    result["re_add_over_first_add"] = round(result["re_add_s"] / result["first_add_s"], 2)
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "readd.json").write_text(json.dumps(result, indent=2) + "\n")
    markdown = "\n".join(
        [
            f"# re-add of {args.topics} failed-over topics",
            "",
            "| measure | value |",
            "|---|---|",
            *(f"| {k.replace('_', ' ')} | {v} |" for k, v in result.items()),
            "",
        ]
    )
    (RESULTS_DIR / "readd.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()
