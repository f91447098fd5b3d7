"""Soak of the chaos explorer: many schedules on two in-process clusters.

Run: ``.venv/bin/python -m mirrorsim.bench.bench_chaos --schedules 1000 [--seed S]
[--steps K] [--no-shrink]``

Measures schedules per minute (time running schedules and their checks; shrinking is
timed apart) and counts the violations per invariant. Results go to
bench/results/chaos.json and chaos.md, with the full exploration report (replayable
drill YAML per violation) under bench/results/chaos-report/ when ``--report`` names no
other directory.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import platform
from pathlib import Path

from mirrorsim.drills.chaos.explorer import Exploration, Explorer, explore
from mirrorsim.drills.chaos.report import summary, write_report
from mirrorsim.drills.chaos.schedule import generate

RESULTS_DIR = Path(__file__).resolve().parent / "results"


async def soak(schedules: int, steps: int, seed: int, shrink: bool) -> Exploration:
    plan = [generate(seed, index, steps) for index in range(schedules)]
    async with Explorer() as explorer:
        return await explore(explorer, plan, shrink=shrink)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--report", type=Path, default=RESULTS_DIR / "chaos-report")
    args = parser.parse_args()
    for name in ("aiokafka", "mirrorsim"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    result = asyncio.run(soak(args.schedules, args.steps, args.seed, not args.no_shrink))
    write_report(result, args.report)
    first: dict[str, int] = {}
    per_invariant: collections.Counter[str] = collections.Counter()
    for outcome in result.outcomes:
        for name in outcome.invariants:
            per_invariant[name] += 1
            first.setdefault(name, outcome.schedule.index)
    shrunk = {f.outcome.invariants[0]: len(f.shrunk.steps) for f in result.findings if f.shrunk}
    document = {
        **summary(result),
        "steps_per_schedule": args.steps,
        "explore_seconds": round(result.explore_seconds, 1),
        "violating_schedules_per_invariant": dict(sorted(per_invariant.items())),
        "first_violating_schedule": dict(sorted(first.items())),
        "shrunk_steps": dict(sorted(shrunk.items())),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "chaos.json").write_text(json.dumps(document, indent=2) + "\n")
    lines = [
        f"# chaos soak: {document['schedules']} schedules of {args.steps} steps, seed {args.seed}",
        "",
        "| measure | value |",
        "|---|---|",
        *(
            f"| {k.replace('_', ' ')} | {v} |"
            for k, v in document.items()
            if not isinstance(v, dict)
        ),
        "",
        "| invariant | violating schedules | first at schedule | shrunk to steps |",
        "|---|---|---|---|",
        *(
            f"| {name} | {count} | {first[name]} | {shrunk.get(name, '-')} |"
            for name, count in sorted(per_invariant.items())
        ),
        "",
    ]
    (RESULTS_DIR / "chaos.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
