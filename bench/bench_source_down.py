"""What a destination broker spends while its source is down, against its idle cost.

Run: .venv/bin/python -m mirrorsim.bench.bench_source_down [--sizes 20000]
     [--partitions 100] [--seconds 40]

For each size, two single-broker clusters run as OS processes; the destination mirrors
every (empty) partition of the source, as ``bench_scale --idle-only`` sets them up. The
destination's CPU is read from ``/proc/<pid>/stat`` over ``--seconds`` with the mirror
idle (the baseline, in the same run), then over as long again right after the source
broker is killed (SIGKILL: a disaster, not a clean stop), and the destination's clean
stop is timed after that. Every mirrored partition's fetcher then fails and its
coordinator step with it; the ratio says what riding out the outage costs over idling.
Results go to ``bench/results/source_down.json`` and ``source_down.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mirrorsim.bench.bench_scale import (
    TIMEOUT_S,
    _idle_cpu,
    _mirror_everything,
    _pid,
    create_topics,
    parse_sizes,
)
from mirrorsim.broker.cluster import ClusterSpec
from mirrorsim.broker.supervisor import ProcessCluster

RESULTS = Path(__file__).parent / "results"


async def run(total: int, partitions: int, seconds: float, root: Path) -> dict[str, Any]:
    topics = [f"down-{i:04d}" for i in range(total // partitions)]
    source, destination = (
        ProcessCluster(ClusterSpec(name, root / name), stop_timeout_s=TIMEOUT_S)
        for name in ("source", "destination")
    )
    for cluster in (source, destination):
        await cluster.start()
    try:
        print(f"creating and mirroring {total:,} partitions", file=sys.stderr, flush=True)
        await asyncio.to_thread(create_topics, source.bootstrap, topics, partitions)
        await _mirror_everything(source, destination, topics, total, with_records=False)
        (idle,) = await _idle_cpu([_pid(destination)], seconds)
        print("killing the source", file=sys.stderr, flush=True)
        os.kill(_pid(source), signal.SIGKILL)
        (down,) = await _idle_cpu([_pid(destination)], seconds)
        started = time.perf_counter()
        await destination.stop()
        stop_s = time.perf_counter() - started
    finally:
        for cluster in (destination, source):
            await cluster.stop()
    return {
        "partitions": total,
        "seconds": seconds,
        "idle_cpu_percent": idle,
        "source_down_cpu_percent": down,
        "destination_stop_s": round(stop_s, 1),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }


def render_markdown(results: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# A destination broker while its source is down",
        "",
        f"Command: `{command}`",
        "",
        "One single-broker cluster per side as processes; the destination mirrors every "
        "(empty) partition of the source. Destination CPU in percent of one core, over "
        f"{results[0]['seconds']:g} s idle with the source up (baseline, same run), then "
        "over as long right after the source broker is killed with SIGKILL; then the "
        f"destination's clean stop. {results[0]['cpus']} CPUs.",
        "",
        "| partitions | idle CPU % | source down CPU % | down / idle | destination stop s "
        "| load (1 min) |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        ratio = r["source_down_cpu_percent"] / max(r["idle_cpu_percent"], 0.1)
        lines.append(
            f"| {r['partitions']:,} | {r['idle_cpu_percent']} | {r['source_down_cpu_percent']} "
            f"| {ratio:.1f}x | {r['destination_stop_s']} | {r['load_average'][0]} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mirrorsim.bench.bench_source_down")
    parser.add_argument("--sizes", default="20000", help="partitions, comma separated")
    parser.add_argument("--partitions", type=int, default=100, help="partitions per topic")
    parser.add_argument("--seconds", type=float, default=40.0)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    sizes = parse_sizes(parser, args.sizes, args.partitions)
    command = (
        "python -m mirrorsim.bench.bench_source_down "
        f"--sizes {args.sizes} --partitions {args.partitions} --seconds {args.seconds:g}"
    )
    results = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-source-down-") as root:
            results.append(asyncio.run(run(size, args.partitions, args.seconds, Path(root))))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "source_down.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "source_down.md").write_text(render_markdown(results, command))
    print(render_markdown(results, command))


if __name__ == "__main__":
    main()
