"""Replication lag of a running mirror while a producer offers a set rate.

Three processes share the machine, as a deployment spreads them over hosts: the source
cluster (one broker, ``mirrorsim.broker.process``) takes the produce load and serves the
mirror's fetches; the destination runs in this process, so its log ends can be sampled
every millisecond without a request; the producer is a subprocess. Run in one process,
the source's produce ingestion, its fetch serving and the destination's mirror append
would share one core, and the offered rate would measure that core, not the mirror.

The producer builds each Produce request once (acks=all, one 16 KiB lz4 batch for each
partition of a group, as a lingering client batches) and sends the same bytes again with
a fresh correlation id: the leader assigns offsets, so only the rate matters, and the
producer's CPU goes to the socket instead of the encoder. Requests are paced on one
schedule; each group of partitions has its own connection, with up to ``IN_FLIGHT``
requests outstanding (a client's ``max.in.flight.requests.per.connection``). Each batch is stamped
when its acknowledgement arrives (``time.monotonic`` is one clock for every process); a
batch's lag runs from there to the first destination sample at or past its end.

Before the paced run, the same producer runs unpaced for a moment against a topic of the
same source that is not mirrored: what the source alone can ingest, measured in the same
run, so an offered rate below target can be put down to the source, or to the mirror
sharing the machine with it. The CPU each process used in the paced run is reported
with the rates (from ``/proc``, so only on Linux).

After the paced run, the producer runs unpaced into the mirrored topic: the live
maximum, what the source ingests while it also serves the mirror. A second paced run
offers half of that. On a machine where the source cannot ingest half the bulk copy's
rate while serving the mirror (one Python broker, two cores shared by three
processes), the first run measures the machine; the second measures the mirror at a
rate the pipeline sustains.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import datetime
import multiprocessing
import os
import statistics
import struct
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from mirrorsim.bench.in_process import leader_log
from mirrorsim.bench.waiting import until
from mirrorsim.broker.cluster import ClusterRunner, ClusterSpec
from mirrorsim.broker.supervisor import ProcessCluster
from mirrorsim.client import Admin
from mirrorsim.client.admin_types import NewTopic
from mirrorsim.client.cluster import ClusterClient
from mirrorsim.compare.workload import produce_batch
from mirrorsim.coordinator.state_machine import MirrorPartitionState
from mirrorsim.protocol.builder import build_request
from mirrorsim.protocol.errors import ErrorCode, KafkaError
from mirrorsim.protocol.framing import decode_response, encode_request
from mirrorsim.protocol.records import Compression, Record, build_batch

TOPIC = "lag"
UNMIRRORED_TOPIC = "lag-unmirrored"
MIRROR = "lag"
RECORD_BYTES = 1024
BATCH_BYTES = 16_384
RECORDS_PER_BATCH = BATCH_BYTES // RECORD_BYTES
PRODUCE_KEY = 0
PRODUCE_VERSION = 9
PARTITIONS_PER_REQUEST = 16
IN_FLIGHT = 4
ACKS_ALL = -1
SOURCE_ALONE_SECONDS = 2.0
SAMPLE_S = 0.001
SETUP_TIMEOUT_S = 120.0
CATCH_UP_TIMEOUT_S = 60.0
CORRELATION_ID = struct.Struct(">i")
CORRELATION_ID_AT = 8
FRAME_SIZE = struct.Struct(">i")
CLIENT_ID = "bench-lag"
UNPACED = float("inf")


@dataclass(frozen=True, slots=True)
class ProducerRun:
    """What the producer subprocess reports: (partition, end offset, acknowledged at) per
    batch, the bytes it sent, the seconds it took and how it was scheduled meanwhile."""

    acks: list[tuple[int, int, float]]
    sent_bytes: int
    seconds: float
    scheduling: Scheduling

    @property
    def mb_s(self) -> float:
        return self.sent_bytes / 1e6 / self.seconds


def _random_batch(partition: int, count: int) -> bytes:
    """One lz4 batch of random values (so lz4 cannot shrink them away)."""
    now_ms = int(time.time() * 1000)
    records = [
        Record(i, now_ms, f"key-{partition}-{i}".encode(), os.urandom(RECORD_BYTES))
        for i in range(count)
    ]
    return build_batch(records, compression=Compression.LZ4).data


def _produce_frame(topic: str, partitions: list[int]) -> tuple[bytearray, int]:
    """A Produce request frame (correlation id 0) with one batch for each partition, and
    the bytes of record batches it carries."""
    batches = {p: _random_batch(p, RECORDS_PER_BATCH) for p in partitions}
    body = build_request(
        PRODUCE_KEY,
        PRODUCE_VERSION,
        {
            "transactional_id": None,
            "acks": ACKS_ALL,
            "timeout": datetime.timedelta(seconds=30),
            "topic_data": [
                {
                    "name": topic,
                    "partition_data": [{"index": p, "records": b} for p, b in batches.items()],
                }
            ],
        },
    )
    frame = encode_request(body, api_version=PRODUCE_VERSION, correlation_id=0, client_id=CLIENT_ID)
    return bytearray(frame), sum(map(len, batches.values()))


class _Link:
    """One connection to the leader: requests go out in order and Kafka answers in order,
    so a FIFO of sent requests matches each response without looking it up."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.outstanding: collections.deque[int] = collections.deque()
        self.slot_free = asyncio.Event()
        self.slot_free.set()

    def send(self, frame: bytearray, correlation_id: int) -> None:
        CORRELATION_ID.pack_into(frame, CORRELATION_ID_AT, correlation_id)
        self.writer.write(frame)
        self.outstanding.append(correlation_id)
        if len(self.outstanding) >= IN_FLIGHT:
            self.slot_free.clear()

    async def receive(self, acks: list[tuple[int, int, float]]) -> None:
        """Reads responses until the connection closes; stamps every acknowledged batch."""
        while True:
            try:
                size = FRAME_SIZE.unpack(await self.reader.readexactly(FRAME_SIZE.size))[0]
            except asyncio.IncompleteReadError:
                return
            payload = await self.reader.readexactly(size)
            acknowledged = time.monotonic()
            correlation_id, body = decode_response(
                payload, api_key=PRODUCE_KEY, api_version=PRODUCE_VERSION
            )
            if correlation_id != self.outstanding.popleft():
                raise RuntimeError(f"response {correlation_id} out of order")
            for answer in body.responses[0].partition_responses:
                if answer.error_code != ErrorCode.NONE:
                    raise KafkaError(ErrorCode(answer.error_code))
                acks.append(
                    (int(answer.index), int(answer.base_offset) + RECORDS_PER_BATCH, acknowledged)
                )
            self.slot_free.set()


Leaders = dict[tuple[str, int], list[int]]
"""The partitions each leader (host, port) leads."""


async def _produce(topic: str, leaders: Leaders, rate_mb_s: float, seconds: float) -> ProducerRun:
    """Each leader's partitions are cut into requests of ``PARTITIONS_PER_REQUEST``, and
    each request has its own connection (so a partition's batches stay in order). Turn k
    sends request ``k % requests``, due ``sent bytes / rate`` after the start; when its
    connection has ``IN_FLIGHT`` requests outstanding the schedule waits, and the offered
    rate falls below the target."""
    requests: list[tuple[_Link, bytearray, int]] = []
    for (host, port), led in leaders.items():
        for first in range(0, len(led), PARTITIONS_PER_REQUEST):
            frame, batch_bytes = _produce_frame(topic, led[first : first + PARTITIONS_PER_REQUEST])
            link = _Link(*await asyncio.open_connection(host, port))
            requests.append((link, frame, batch_bytes))
    acks: list[tuple[int, int, float]] = []
    receivers = [asyncio.create_task(link.receive(acks)) for link, _, _ in requests]
    scheduled = _scheduling()
    started = time.monotonic()
    sent = 0
    k = 0
    while (now := time.monotonic()) - started < seconds:
        due = started + sent / (rate_mb_s * 1e6)
        if due > now:
            await asyncio.sleep(due - now)
        link, frame, batch_bytes = requests[k % len(requests)]
        await link.slot_free.wait()
        link.send(frame, k)
        sent += batch_bytes
        k += 1
    for link, _, _ in requests:
        await link.writer.drain()
        link.writer.write_eof()
    await asyncio.gather(*receivers)
    elapsed = time.monotonic() - started
    for link, _, _ in requests:
        link.writer.close()
        await link.writer.wait_closed()
    return ProducerRun(acks, sent, elapsed, _scheduling() - scheduled)


def _producer_process(
    topic: str, leaders: Leaders, rate_mb_s: float, seconds: float, results: Connection
) -> None:
    try:
        results.send(asyncio.run(_produce(topic, leaders, rate_mb_s, seconds)))
    finally:
        results.close()


async def _leaders(bootstrap: str, topic: str) -> Leaders:
    async with ClusterClient(bootstrap, client_id=CLIENT_ID) as client:
        await client.refresh_metadata([topic])
        leaders: Leaders = {}
        for p in client.partitions_for(topic):
            leader = client.leader_for(topic, p)
            if leader is None:
                raise RuntimeError(f"{topic}-{p} has no leader")
            info = client.brokers[leader]
            leaders.setdefault((info.host, info.port), []).append(p)
        return leaders


async def _run_producer(
    bootstrap: str, topic: str, rate_mb_s: float, seconds: float
) -> ProducerRun:
    """The producer subprocess's run against the topic's current leaders."""
    leaders = await _leaders(bootstrap, topic)
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    producer = context.Process(
        target=_producer_process,
        args=(topic, leaders, rate_mb_s, seconds, sender),
        name="bench-lag-producer",
    )
    producer.start()
    sender.close()
    try:
        run: ProducerRun = await asyncio.to_thread(receiver.recv)
        await asyncio.to_thread(producer.join, 60)
        return run
    finally:
        receiver.close()
        if producer.is_alive():
            producer.terminate()
        producer.join()


@dataclass(frozen=True, slots=True)
class Scheduling:
    """Seconds a thread ran on a core and seconds it waited, runnable, for one."""

    running: float
    waiting: float

    def __sub__(self, earlier: Scheduling) -> Scheduling:
        return Scheduling(self.running - earlier.running, self.waiting - earlier.waiting)


def _scheduling(pid: int | str = "self") -> Scheduling:
    """The scheduler's account of a process's main thread (where its event loop runs),
    from ``/proc/<pid>/schedstat``; zeros where there is none. A loop that is never
    idle shows running plus waiting close to the wall-clock time: it wanted more CPU
    than it got."""
    try:
        running_ns, waiting_ns = Path(f"/proc/{pid}/schedstat").read_text().split()[:2]
    except OSError:
        return Scheduling(0.0, 0.0)
    return Scheduling(int(running_ns) / 1e9, int(waiting_ns) / 1e9)


def _lag_of(reached: list[tuple[float, int]], end_offset: int, acknowledged: float) -> float:
    """Milliseconds from the acknowledgement until the destination's log end passed
    ``end_offset`` (0 when it already had when the acknowledgement arrived)."""
    ends = [end for _, end in reached]
    seen_at = reached[bisect.bisect_left(ends, end_offset)][0]
    return max(0.0, seen_at - acknowledged) * 1000


def _mirroring(destination: ClusterRunner, partitions: int) -> bool:
    states = [
        status.state
        for broker in destination.brokers
        for (name, _), status in broker.mirrors.partitions.items()
        if name == TOPIC
    ]
    return len(states) == partitions and all(s is MirrorPartitionState.MIRRORING for s in states)


async def _until(predicate: Any, timeout_s: float, what: str) -> None:
    await until(predicate, timeout_s, what, SAMPLE_S)


async def _establish(source: ProcessCluster, destination: ClusterRunner, partitions: int) -> None:
    """A running mirror of ``TOPIC`` next to the unmirrored topic, every partition of both
    holding one record: a partition's first append at a leader epoch writes its
    leader-epoch checkpoint, a one-off cost that is neither ingestion nor lag."""
    topics = [TOPIC, UNMIRRORED_TOPIC]
    async with Admin(bootstrap=source.bootstrap) as admin:
        (await admin.create_topics([NewTopic(t, partitions) for t in topics])).all()
    async with ClusterClient(source.bootstrap, client_id=CLIENT_ID) as client:
        await client.refresh_metadata(topics)
        for topic in topics:
            for p in range(partitions):
                await produce_batch(client, topic, p, _random_batch(p, 1))
    async with Admin(bootstrap=destination.bootstrap) as admin:
        await admin.create_mirror(MIRROR, {"bootstrap.servers": source.bootstrap})
        (await admin.add_topics_to_mirror(MIRROR, [TOPIC])).all()
    await _until(lambda: _mirroring(destination, partitions), SETUP_TIMEOUT_S, "mirror")
    logs = [leader_log(destination, TOPIC, p) for p in range(partitions)]
    await _until(lambda: all(log.log_end_offset == 1 for log in logs), SETUP_TIMEOUT_S, "copy")


async def _sampled_run(
    source: ProcessCluster,
    destination: ClusterRunner,
    partitions: int,
    rate_mb_s: float,
    seconds: float,
) -> tuple[ProducerRun, list[float], dict[str, Scheduling]]:
    """One producer run with the destination's log ends sampled every millisecond; the
    run, every batch's lag (sorted) and how each process was scheduled."""
    logs = [leader_log(destination, TOPIC, p) for p in range(partitions)]
    reached: list[list[tuple[float, int]]] = [[] for _ in range(partitions)]
    sampling = asyncio.Event()

    async def watch() -> None:
        last = [-1] * partitions
        while not sampling.is_set():
            now = time.monotonic()
            for p, log in enumerate(logs):
                end = log.log_end_offset
                if end != last[p]:
                    reached[p].append((now, end))
                    last[p] = end
            await asyncio.sleep(SAMPLE_S)

    source_pid = next(b.pid for b in source.brokers.values() if b.pid is not None)
    source_started = _scheduling(source_pid)
    own_started = _scheduling()
    watcher = asyncio.create_task(watch())
    try:
        run = await _run_producer(source.bootstrap, TOPIC, rate_mb_s, seconds)
        final = _acknowledged_ends(run)
        await _until(
            lambda: all(reached[p] and reached[p][-1][1] >= end for p, end in final.items()),
            CATCH_UP_TIMEOUT_S,
            "mirror of the lag run",
        )
    finally:
        sampling.set()
        await watcher
    scheduling = {
        "source": _scheduling(source_pid) - source_started,
        "destination": _scheduling() - own_started,
        "producer": run.scheduling,
    }
    lags = sorted(_lag_of(reached[p], end, acknowledged) for p, end, acknowledged in run.acks)
    return run, lags, scheduling


def _acknowledged_ends(run: ProducerRun) -> dict[int, int]:
    """Per partition, the end offset of the last batch ``run`` had acknowledged."""
    final: dict[int, int] = {}
    for p, end, _ in run.acks:
        final[p] = max(end, final.get(p, end))
    return final


async def _caught_up(destination: ClusterRunner, run: ProducerRun) -> None:
    """Wait until the destination holds every batch ``run`` had acknowledged."""
    final = _acknowledged_ends(run)
    logs = {p: leader_log(destination, TOPIC, p) for p in final}
    await _until(
        lambda: all(logs[p].log_end_offset >= end for p, end in final.items()),
        CATCH_UP_TIMEOUT_S,
        "mirror of the unpaced run",
    )


def _summary(
    rate_mb_s: float, run: ProducerRun, lags: list[float], scheduling: dict[str, Scheduling]
) -> dict[str, Any]:
    return {
        "target_mb_s": round(rate_mb_s, 2),
        "offered_mb_s": round(run.mb_s, 2),
        "cores_used": {name: round(s.running / run.seconds, 2) for name, s in scheduling.items()},
        "cores_waited_for": {
            name: round(s.waiting / run.seconds, 2) for name, s in scheduling.items()
        },
        "cores_needed_at_target": round(
            sum(s.running for s in scheduling.values()) / run.seconds / run.mb_s * rate_mb_s, 2
        ),
        "machine_cores": os.cpu_count(),
        "batches": len(lags),
        "p50_ms": round(statistics.median(lags), 1),
        "p99_ms": round(lags[max(0, int(len(lags) * 0.99) - 1)], 1),
        "max_ms": round(lags[-1], 1),
    }


async def lag_at_rate(
    data_dir: Path, partitions: int, rate_mb_s: float, seconds: float, configs: dict[str, Any]
) -> dict[str, Any]:
    """Replication lag of a fresh mirror of ``partitions`` partitions while the producer
    offers ``rate_mb_s``, after what the source alone ingests unpaced; then the live
    maximum (the same producer unpaced into the mirrored topic, the mirror following)
    and the lag at half of it. The clusters get ``configs`` and live under
    ``data_dir``."""
    source_spec = ClusterSpec(
        name="lag-source", data_dir=data_dir / "lag-source", brokers=1, configs=configs
    )
    destination_spec = ClusterSpec(
        name="lag-destination", data_dir=data_dir / "lag-destination", configs=configs
    )
    async with (
        ProcessCluster(source_spec) as source,
        ClusterRunner(destination_spec) as destination,
    ):
        await _establish(source, destination, partitions)
        source_alone = await _run_producer(
            source.bootstrap, UNMIRRORED_TOPIC, UNPACED, SOURCE_ALONE_SECONDS
        )
        at_target = _summary(
            rate_mb_s, *await _sampled_run(source, destination, partitions, rate_mb_s, seconds)
        )
        live = await _run_producer(source.bootstrap, TOPIC, UNPACED, SOURCE_ALONE_SECONDS)
        await _caught_up(destination, live)
        half_live = live.mb_s / 2
        at_half_live = _summary(
            half_live, *await _sampled_run(source, destination, partitions, half_live, seconds)
        )
    return {
        **at_target,
        "source_alone_mb_s": round(source_alone.mb_s, 2),
        "live_max_mb_s": round(live.mb_s, 2),
        "at_half_live_max": at_half_live,
        "producer": (
            f"subprocess, a connection per request of "
            f"{PARTITIONS_PER_REQUEST} partitions x 16 KiB, {IN_FLIGHT} in flight each, acks=all"
        ),
        "source": "one broker in its own process",
    }


LAG_NOTE = (
    "Lag run: the source is one broker in its own process, the destination runs in the "
    "benchmark's process and the producer in a subprocess that resends Produce requests "
    f"built once (acks=all, {PARTITIONS_PER_REQUEST} partitions x 16 KiB lz4 batches per "
    f"request, a connection per request with {IN_FLIGHT} in flight). Offered is the rate "
    "it reached; 'source alone' is the same producer unpaced into an unmirrored topic of "
    "the same source, just before. The live maximum is the same producer unpaced into "
    "the mirrored topic while the mirror follows (what the source ingests while it serves "
    "the mirror); the second run offers half of it. Lag is from the acknowledgement to "
    "the destination's "
    "log end passing the batch, sampled every millisecond. Cores running are CPU "
    "seconds per second of the paced run (its catch-up included), cores waiting the "
    "seconds each event loop was runnable but had no core (/proc/<pid>/schedstat); "
    "running plus waiting near 1 is a process that was never idle. The cores needed at "
    "target scale the cores running from the offered rate to the target (the CPU per "
    "MB of this run; an upper estimate, as a mirror fetch carries more bytes at a "
    "higher rate)."
)


def lag_table(runs: list[tuple[int, dict[str, Any] | None]]) -> list[str]:
    """Markdown lines for the lag runs, as (record bytes of the copy before, result): the
    run at the target, then (when measured) the one at half the live maximum."""
    done = [(size, lag) for size, lag in runs if lag]
    if not done:
        return []
    lines = [
        "",
        "| lag run (1 KiB records) | target MB/s | offered MB/s | source alone MB/s "
        "| cores running (waiting): source / destination / producer "
        "| cores needed at target (machine) "
        "| batches | p50 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size, lag in done:
        rows = [(f"half the {size}-byte copy's rate", lag)]
        if "at_half_live_max" in lag:
            rows.append(
                (f"half the live maximum ({lag['live_max_mb_s']} MB/s)", lag["at_half_live_max"])
            )
        for label, row in rows:
            cores = " / ".join(
                f"{row['cores_used'][name]} ({row['cores_waited_for'][name]})"
                for name in ("source", "destination", "producer")
            )
            lines.append(
                f"| {label} | {row['target_mb_s']} | {row['offered_mb_s']} "
                f"| {lag['source_alone_mb_s']} "
                f"| {cores} "
                f"| {row['cores_needed_at_target']} ({row['machine_cores']}) "
                f"| {row['batches']} | {row['p50_ms']} | {row['p99_ms']} | {row['max_ms']} |"
            )
    return lines
