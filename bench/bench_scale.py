"""Partitions per broker: create, mirror, idle, fail over and fail back on two
single-broker clusters, at several sizes in one table.

Run: .venv/bin/python -m mirrorsim.bench.bench_scale [--sizes 10000,100000]
     [--partitions 100] [--idle-seconds 60] [--idle-only]

For each size, two fresh clusters of one broker each run as OS processes
(``ProcessCluster``). The source gets ``size / --partitions`` topics (CreateTopics, 10
topics per request) and one record per partition. The destination mirrors them all
(CreateMirror, AddTopicsToMirror), timed until every partition is MIRRORING with its
record; then both brokers sit idle with the mirror running and their CPU over
``--idle-seconds`` is read from ``/proc/<pid>/stat``; then the failover
(RemoveTopicsFromMirror of every topic) is timed until every partition is STOPPED, and
the failback (on the old source, a mirror of the same name from the destination and
every topic added to it) until every partition there is MIRRORING. Every broker's
resident memory (``VmRSS``), open descriptors and, among them, open segment files are
read from ``/proc`` while the mirror runs, before any topic exists too, so that the
memory per partition is the difference. The descriptor limit and the segment-file
budget are the ones the broker logs at start (``log.md``, "Open files"). Results go to
``bench/results/scale.json`` and ``scale.md``.

``--idle-only`` measures a running mirror's idle cost, memory and descriptors alone: no
records are produced (every partition is mirrored empty) and there is no failover or
failback; its table goes to ``scale-idle.json`` and ``scale-idle.md``. At 100,000
partitions that takes minutes instead of most of an hour, most of which goes to a
producer sending one record to each of 100,000 partitions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from mirrorsim.bench.bench_mirroring_peers import CpuMeter
from mirrorsim.broker.cluster import ClusterSpec
from mirrorsim.broker.log.file_handles import budget_for
from mirrorsim.broker.supervisor import ProcessCluster
from mirrorsim.client import Admin
from mirrorsim.drills.polling import wait_until

RESULTS = Path(__file__).parent / "results"
TOPICS_PER_REQUEST = 10
TIMEOUT_S = 1800
MIRROR = "scale"
STATE_POLL_S = 1.0
CLIENT_CONFIG = {
    "default.api.timeout.ms": str(TIMEOUT_S * 1000),
    "request.timeout.ms": str(TIMEOUT_S * 1000),
}
"""One attempt per request: an AddTopicsToMirror retried after a client-side timeout
finds its topics already being added and is refused."""


def _chunks(topics: list[str]) -> list[list[str]]:
    """``topics`` in requests of ``TOPICS_PER_REQUEST``."""
    return [topics[i : i + TOPICS_PER_REQUEST] for i in range(0, len(topics), TOPICS_PER_REQUEST)]


def create_topics(bootstrap: str, topics: list[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for names in _chunks(topics):
        chunk = [NewTopic(t, partitions, 1) for t in names]
        for future in admin.create_topics(chunk, request_timeout=TIMEOUT_S).values():
            future.result(TIMEOUT_S)


def produce_one_record_each(bootstrap: str, topics: list[str], partitions: int) -> None:
    failures: list[Any] = []
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 50, "message.timeout.ms": TIMEOUT_S * 1000}
    )
    for topic in topics:
        for partition in range(partitions):
            producer.produce(
                topic,
                value=b"x",
                partition=partition,
                on_delivery=lambda error, _: failures.append(error) if error else None,
            )
        producer.poll(0)
    if producer.flush(TIMEOUT_S) or failures:
        raise RuntimeError(f"{len(failures)} records not delivered: {failures[:1]}")


def process_view(pid: int, data_dir: str) -> dict[str, int]:
    """RSS and descriptors of one broker process, read from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kib = int(status.split("VmRSS:")[1].split()[0])
    targets = []
    for entry in os.listdir(f"/proc/{pid}/fd"):
        try:
            targets.append(os.readlink(f"/proc/{pid}/fd/{entry}"))
        except OSError:
            continue
    limit_line = next(
        line
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines()
        if line.startswith("Max open files")
    )
    soft_limit = int(limit_line.split()[3])
    return {
        "rss_mib": round(rss_kib / 1024),
        "open_fds": len(targets),
        "open_segment_files": sum(1 for t in targets if t.startswith(data_dir)),
        "fd_limit": soft_limit,
        "segment_file_budget": budget_for(soft_limit),
    }


def _poll_interval(total: int) -> float:
    """Seconds between two DescribeMirrors: one per second up to 10,000 partitions, and
    less often above, so that the polling stays a small part of what is measured."""
    return max(STATE_POLL_S, total / 10_000)


async def _states(admin: Admin) -> dict[str, int]:
    """How many of the mirror's partitions are in each state, and how many hold their
    record (a destination offset of 1)."""
    description = (await admin.describe_mirrors([MIRROR]))[MIRROR]
    counts: dict[str, int] = {}
    for p in description.partitions:
        counts[p.state] = counts.get(p.state, 0) + 1
    counts["copied"] = sum(1 for p in description.partitions if p.destination_offset >= 1)
    return counts


async def _until_states(admin: Admin, done: Any, what: str, total: int) -> None:
    """Poll the mirror's state counts until ``done(counts)``, printing them meanwhile."""

    async def reached() -> bool:
        counts = await _states(admin)
        finished = bool(done(counts))
        if not finished:
            print(f"  {what}: {counts}", file=sys.stderr, flush=True)
        return finished

    await wait_until(reached, TIMEOUT_S, what, retry_on=(), interval=_poll_interval(total))


async def _mirror_everything(
    source: ProcessCluster,
    destination: ProcessCluster,
    topics: list[str],
    total: int,
    *,
    with_records: bool = True,
) -> float:
    """Seconds from CreateMirror until every partition is MIRRORING (with its record)."""
    async with Admin(bootstrap=destination.bootstrap, config=CLIENT_CONFIG) as admin:
        started = time.perf_counter()
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        for chunk in _chunks(topics):
            (await admin.add_topics_to_mirror(MIRROR, chunk)).all()
        await _until_states(
            admin,
            lambda c: c.get("MIRRORING") == total and (c["copied"] == total or not with_records),
            "mirroring",
            total,
        )
        return time.perf_counter() - started


async def _fail_over(destination: ProcessCluster, topics: list[str], total: int) -> float:
    async with Admin(bootstrap=destination.bootstrap, config=CLIENT_CONFIG) as admin:
        started = time.perf_counter()
        for chunk in _chunks(topics):
            (await admin.remove_topics_from_mirror(MIRROR, chunk)).all()
        await _until_states(admin, lambda c: c.get("STOPPED") == total, "failover", total)
        return time.perf_counter() - started


async def _fail_back(
    source: ProcessCluster, destination: ProcessCluster, topics: list[str], total: int
) -> float:
    """Seconds from CreateMirror on the old source (from the destination) until every
    partition there is MIRRORING again: the source's logs cut to their last mirrored
    epoch and following the destination."""
    async with Admin(bootstrap=source.bootstrap, config=CLIENT_CONFIG) as admin:
        started = time.perf_counter()
        await admin.create_mirror(MIRROR, {"bootstrap.servers": destination.bootstrap})
        for chunk in _chunks(topics):
            (await admin.add_topics_to_mirror(MIRROR, chunk)).all()
        await _until_states(admin, lambda c: c.get("MIRRORING") == total, "failback", total)
        return time.perf_counter() - started


async def _idle_cpu(pids: list[int], seconds: float) -> list[float]:
    """Each process's CPU over ``seconds`` of wall time, in percent of one core."""
    meters = [CpuMeter((pid,)) for pid in pids]
    for meter in meters:
        meter.start()
    await asyncio.sleep(seconds)
    for meter in meters:
        meter.stop()
    return [round(100 * meter.seconds / seconds, 1) for meter in meters]


def _pid(cluster: ProcessCluster) -> int:
    pid = cluster.brokers[1].pid
    if pid is None:
        raise RuntimeError(f"cluster {cluster.name}: broker 1 is not running")
    return pid


async def run(
    topic_count: int, partitions: int, idle_seconds: float, root: Path, *, idle_only: bool = False
) -> dict[str, Any]:
    topics = [f"scale-{i:04d}" for i in range(topic_count)]
    total = topic_count * partitions
    source, destination = (
        ProcessCluster(ClusterSpec(name, root / name), stop_timeout_s=TIMEOUT_S)
        for name in ("source", "destination")
    )
    for cluster in (source, destination):
        await cluster.start()
    source_s: dict[str, float] = {}
    destination_s: dict[str, float] = {}
    try:
        empty = [_rss_mib(_pid(c)) for c in (source, destination)]
        print(f"creating {total:,} partitions", file=sys.stderr, flush=True)
        started = time.perf_counter()
        await asyncio.to_thread(create_topics, source.bootstrap, topics, partitions)
        source_s["create"] = time.perf_counter() - started
        if not idle_only:
            started = time.perf_counter()
            await asyncio.to_thread(produce_one_record_each, source.bootstrap, topics, partitions)
            source_s["produce"] = time.perf_counter() - started
        print(f"mirroring {total:,} partitions", file=sys.stderr, flush=True)
        destination_s["mirror"] = await _mirror_everything(
            source, destination, topics, total, with_records=not idle_only
        )
        pids = [_pid(c) for c in (source, destination)]
        views = [
            process_view(pid, c.data_dir(1))
            for pid, c in zip(pids, (source, destination), strict=True)
        ]
        print(f"idle for {idle_seconds:.0f} s with the mirror running", file=sys.stderr, flush=True)
        idle = await _idle_cpu(pids, idle_seconds)
        if not idle_only:
            print("failing over", file=sys.stderr, flush=True)
            destination_s["failover"] = await _fail_over(destination, topics, total)
            print("failing back", file=sys.stderr, flush=True)
            source_s["failback"] = await _fail_back(source, destination, topics, total)
    finally:
        # The destination first: stopped after its source, it would spend the source's
        # shutdown retrying every mirrored partition against a broker that is going away.
        for cluster, seconds in ((destination, destination_s), (source, source_s)):
            started = time.perf_counter()
            await cluster.stop()
            seconds["stop"] = time.perf_counter() - started
    rows = [
        {"cluster": name, "seconds": {k: round(v, 1) for k, v in seconds.items()}}
        for name, seconds in (("source", source_s), ("destination", destination_s))
    ]
    for row, view, cpu, rss_empty in zip(rows, views, idle, empty, strict=True):
        row.update(view)
        row["rss_mib_without_topics"] = rss_empty
        row["rss_bytes_per_partition"] = round((view["rss_mib"] - rss_empty) * 2**20 / total)
        row["idle_cpu_percent"] = cpu
    return {
        "topics": topic_count,
        "partitions_per_topic": partitions,
        "partitions_per_broker": total,
        "idle_seconds": idle_seconds,
        "idle_only": idle_only,
        "cpus": os.cpu_count(),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "brokers": rows,
    }


def _rss_mib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return round(int(status.split("VmRSS:")[1].split()[0]) / 1024)


def render_markdown(results: list[dict[str, Any]], command: str) -> str:
    first = results[0]
    lines = [
        "# Scale: partitions per broker, mirrored"
        + ("" if first.get("idle_only") else ", failed over and failed back"),
        "",
        f"Command: `{command}`",
        "",
        (
            "Two single-broker clusters as processes per size; the destination mirrors every "
            "topic of the source, whose partitions stay empty (`--idle-only`: no records, no "
            "failover or failback)."
            if first.get("idle_only")
            else "Two single-broker clusters as processes per size; one record per partition on "
            "the source, all of it mirrored by the destination, then failed over "
            "(RemoveTopicsFromMirror of every topic on the destination) and failed back (on "
            "the source, a mirror of the same name from the destination and every topic added)."
        )
        + f" {first['cpus']} CPUs. Idle CPU: {first['idle_seconds']:.0f} s with the mirror "
        "running and nothing to copy. RSS per partition: the broker's RSS with the mirror "
        "running less its RSS before any topic existed, over the partitions. Stop: a clean "
        "stop (every log flushed and closed), the destination first, until the process "
        "exited.",
        "",
        "| partitions | topics | cluster | seconds | RSS MiB | RSS bytes per partition "
        "| open fds | open segment files | fd limit | segment-file budget "
        "| idle CPU % of a core | load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        for row in result["brokers"]:
            seconds = ", ".join(f"{k} {v}" for k, v in row["seconds"].items())
            lines.append(
                f"| {result['partitions_per_broker']:,} | {result['topics']} | {row['cluster']} "
                f"| {seconds} | {row['rss_mib']} | {row['rss_bytes_per_partition']:,} "
                f"| {row['open_fds']} | {row['open_segment_files']} | {row['fd_limit']} "
                f"| {row['segment_file_budget']} | {row['idle_cpu_percent']} "
                f"| {result['load_average'][0]} |"
            )
    return "\n".join(lines) + "\n"


def parse_sizes(parser: argparse.ArgumentParser, sizes: str, partitions: int) -> list[int]:
    """``--sizes`` as numbers of partitions, each a positive multiple of ``partitions``
    (the partitions per topic), or the parser's one-line error."""
    parsed = [int(size) for size in sizes.split(",")]
    if any(size <= 0 or size % partitions for size in parsed):
        parser.error(f"every size must be a positive multiple of --partitions {partitions}")
    return parsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mirrorsim.bench.bench_scale")
    parser.add_argument(
        "--sizes",
        default="2000",
        help="partitions per broker, comma separated (each a multiple of --partitions)",
    )
    parser.add_argument("--partitions", type=int, default=100, help="partitions per topic")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument(
        "--idle-only",
        action="store_true",
        help="no records, no failover or failback: idle CPU, memory and descriptors only",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    sizes = parse_sizes(parser, args.sizes, args.partitions)
    command = (
        "python -m mirrorsim.bench.bench_scale "
        f"--sizes {args.sizes} --partitions {args.partitions} --idle-seconds {args.idle_seconds:g}"
        + (" --idle-only" if args.idle_only else "")
    )
    name = "scale-idle" if args.idle_only else "scale"
    results = []
    for size in sizes:
        print(f"== {size:,} partitions", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="bench-scale-") as root:
            results.append(
                asyncio.run(
                    run(
                        size // args.partitions,
                        args.partitions,
                        args.idle_seconds,
                        Path(root),
                        idle_only=args.idle_only,
                    )
                )
            )
            # Written after each size, before its directory (100,000 partition
            # directories per broker) is removed: a large size runs for tens of minutes,
            # and the smaller sizes' rows should outlive it if it is stopped.
            RESULTS.mkdir(exist_ok=True)
            (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
            (RESULTS / f"{name}.md").write_text(render_markdown(results, command))
    print(render_markdown(results, command))


if __name__ == "__main__":
    main()
