"""Soak of the chaos explorer: many schedules on two clusters, in-process or, with
``--processes``, brokers as OS processes (SIGKILL and SIGSTOP/SIGCONT faults).

Run: ``.venv/bin/python -m mirrorsim.bench.bench_chaos --schedules 1000 [--seed S]
[--steps K] [--no-shrink] [--workers W] [--broker-log FILE] [--processes]
[--replication-factor 2]``

Measures schedules per minute (time running schedules and their checks; shrinking is
timed apart) and counts the violations per invariant. ``--workers`` runs that many
explorers, each a process with its own two clusters, over interleaved slices of the same
seeded schedules: an in-process schedule is CPU-bound in one event loop, so a second
core doubles the soak's rate; the schedules and their verdicts are the same as with one.
Results go to bench/results/chaos.json and chaos.md (chaos-processes.json and .md with
``--processes``; ``-replicated`` added to the name with ``--replication-factor 2``, every
topic, mirror topic and ``__mirror_state`` partition then on both brokers of a cluster),
with the full exploration report (replayable drill YAML per violation)
under bench/results/chaos-report/ when ``--report`` names no other directory.
``--broker-log`` keeps the brokers' warnings (silenced otherwise), one file per worker,
each verdict written between them: a violation seen once in a long soak is explained
from its schedule's lines instead of a replay that may not reproduce it. With
``--processes`` each broker process logs to ``broker-<id>.log`` in its cluster's data directory.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from mirrorsim.drills.chaos.explorer import Exploration, Explorer, ScheduleOutcome, explore
from mirrorsim.drills.chaos.report import summary, write_report
from mirrorsim.drills.chaos.schedule import generate

RESULTS_DIR = Path(__file__).resolve().parent / "results"


async def soak(
    indices: list[int],
    steps: int,
    seed: int,
    shrink: bool,
    processes: bool = False,
    replication_factor: int = 1,
) -> Exploration:
    plan = [generate(seed, index, steps, processes=processes) for index in indices]
    async with Explorer(processes=processes, replication_factor=replication_factor) as explorer:
        return await explore(explorer, plan, shrink=shrink, on_done=_progress)


def _progress(outcome: ScheduleOutcome) -> None:
    """One line per verdict, with what was seen: a long soak is read while it runs."""
    verdict = "error" if outcome.error else ",".join(outcome.invariants) or "ok"
    seen = [f"{v.invariant}: {v.detail}" for v in outcome.violations]
    if outcome.error:
        seen.append(outcome.error.splitlines()[0])
    details = "".join(f"\n    {line[:300]}" for line in seen)
    line = f"schedule {outcome.schedule.index}: {verdict} ({outcome.seconds:.1f}s){details}"
    print(line, file=sys.stderr, flush=True)
    _VERDICTS.warning("%s", line)


_VERDICTS = logging.getLogger("mirrorsim.bench.chaos")


def _soak_slice(
    indices: list[int],
    steps: int,
    seed: int,
    shrink: bool,
    broker_log: Path | None = None,
    processes: bool = False,
    replication_factor: int = 1,
) -> Exploration:
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    ours = logging.getLogger("mirrorsim")
    ours.propagate = False
    if broker_log is None:
        ours.setLevel(logging.CRITICAL)
    else:
        handler = logging.FileHandler(broker_log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        ours.addHandler(handler)
        ours.setLevel(logging.WARNING)
    return asyncio.run(soak(indices, steps, seed, shrink, processes, replication_factor))


def _worker_log(broker_log: Path | None, worker: int, workers: int) -> Path | None:
    if broker_log is None or workers == 1:
        return broker_log
    return broker_log.with_name(f"{broker_log.name}.{worker}")


def run(
    schedules: int,
    steps: int,
    seed: int,
    shrink: bool,
    workers: int,
    broker_log: Path | None = None,
    processes: bool = False,
    replication_factor: int = 1,
) -> Exploration:
    """The schedules ``0..schedules-1`` of ``seed``, dealt round-robin to ``workers``
    processes; one exploration with the outcomes in schedule order."""
    started = time.monotonic()
    slices = [list(range(w, schedules, workers)) for w in range(workers)]
    if workers == 1:
        parts = [
            _soak_slice(slices[0], steps, seed, shrink, broker_log, processes, replication_factor)
        ]
    else:
        with ProcessPoolExecutor(workers) as pool:
            futures = [
                pool.submit(
                    _soak_slice,
                    s,
                    steps,
                    seed,
                    shrink,
                    _worker_log(broker_log, w, workers),
                    processes,
                    replication_factor,
                )
                for w, s in enumerate(slices)
            ]
            parts = [f.result() for f in futures]
    merged = Exploration(seed=seed, mode=parts[0].mode, configs=parts[0].configs)
    merged.outcomes = sorted(
        (o for part in parts for o in part.outcomes), key=lambda o: o.schedule.index
    )
    merged.findings = sorted(
        (f for part in parts for f in part.findings), key=lambda f: f.outcome.schedule.index
    )
    merged.seconds = time.monotonic() - started
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--report", type=Path, default=RESULTS_DIR / "chaos-report")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--broker-log", type=Path, default=None)
    parser.add_argument("--processes", action="store_true")
    parser.add_argument("--replication-factor", type=int, choices=(1, 2), default=1)
    args = parser.parse_args()
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    result = run(
        args.schedules,
        args.steps,
        args.seed,
        not args.no_shrink,
        args.workers,
        args.broker_log,
        args.processes,
        args.replication_factor,
    )
    results_name = "chaos-processes" if args.processes else "chaos"
    if args.replication_factor > 1:
        results_name += "-replicated"
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
        "workers": args.workers,
        "wall_seconds": round(result.seconds, 1),
        "schedules_per_minute_wall": round(60 * len(result.outcomes) / result.seconds, 1),
        "violating_schedules_per_invariant": dict(sorted(per_invariant.items())),
        "first_violating_schedule": dict(sorted(first.items())),
        "shrunk_steps": dict(sorted(shrunk.items())),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / f"{results_name}.json").write_text(json.dumps(document, indent=2) + "\n")
    lines = [
        f"# {results_name} soak: {document['schedules']} schedules of {args.steps} steps, "
        f"seed {args.seed}",
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
    (RESULTS_DIR / f"{results_name}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
