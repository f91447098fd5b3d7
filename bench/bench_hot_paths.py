"""Hot paths outside mirroring: epoch checkpoint writes, request error metrics, frame
splitting, Metadata → cluster view, request building, Produce and Fetch responses,
a fetcher's Fetch request, request metrics.

Run: ``.venv/bin/python -m mirrorsim.bench.bench_hot_paths [--quick]``

Each row times the current code and a baseline in the same process: the baseline is the
straightforward way the same result was computed before (a checkpoint write per
truncation, a walk over every field of every nested message, a frame copied out of a
slice of the buffer, every id converted one by one, a response or request built as kio
entities and encoded by kio, a labelled metric looked up per observation), kept here only as the
yardstick.
Results go to bench/results/hot_paths.json and hot_paths.md with the command.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import shlex
import struct
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.metadata.v12 import response as metadata
from kio.static.primitive import i32
from prometheus_client import CollectorRegistry

from mirrorsim.broker.log.epoch_cache import LeaderEpochFileCache
from mirrorsim.broker.metrics.requests import RequestMetrics, RequestTimes, api_name, error_counts
from mirrorsim.client.cluster import (
    ClusterMetadata,
    PartitionInfo,
    TopicInfo,
    _metadata_from_response,
)
from mirrorsim.protocol.builder import build, build_request
from mirrorsim.protocol.errors import ErrorCode, error_code_from_wire
from mirrorsim.protocol.framing import FrameAssembler, encode_request, encode_response_buffers
from mirrorsim.protocol.messages.fetch_request import (
    FetchRequestBody,
    FetchRequestPartition,
    FetchRequestTopic,
)
from mirrorsim.protocol.messages.fetch_response import (
    FetchPartitionData,
    FetchResponseBody,
    FetchTopicData,
)
from mirrorsim.protocol.messages.produce_response import (
    PartitionProduceOutcome,
    ProduceResponseBody,
    TopicProduceOutcome,
)
from mirrorsim.protocol.registry import response_class

RESULTS_DIR = Path(__file__).resolve().parent / "results"
_SIZE = struct.Struct(">i")


@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    ours_us: float
    baseline_us: float

    @property
    def speedup(self) -> float:
        return self.baseline_us / self.ours_us


def _time_us(fn: Callable[[], object], repeat: int) -> float:
    """Best of three runs of ``repeat`` calls: the least disturbed by other processes."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best * 1e6


# -- leader epoch checkpoint ----------------------------------------------------------


def _truncate_then_new_epoch(cache: LeaderEpochFileCache, write_each: bool) -> None:
    """A failover's pattern: truncate the tail, continue, then a new epoch begins."""
    cache.truncate_from_end(150)
    if write_each:
        cache.flush()
    cache.assign(2, 150)
    cache.assign(3, 200)


def bench_epoch_truncation(directory: Path, repeat: int) -> Row:
    ours = LeaderEpochFileCache(directory / "ours")
    baseline = LeaderEpochFileCache(directory / "baseline")
    for cache in (ours, baseline):
        cache.assign(1, 0)
        cache.assign(2, 100)
        cache.assign(3, 200)
    return Row(
        "epoch cache: truncation + new epoch (truncation written lazily vs at once)",
        _time_us(lambda: _truncate_then_new_epoch(ours, False), repeat),
        _time_us(lambda: _truncate_then_new_epoch(baseline, True), repeat),
    )


# -- request error metrics ------------------------------------------------------------


def _walk_every_field(node: Any, tally: Counter[str]) -> None:
    if isinstance(node, tuple | list):
        for item in node:
            _walk_every_field(item, tally)
    elif dataclasses.is_dataclass(node):
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)
            if field.name == "error_code":
                code = error_code_from_wire(int(value))
                tally[getattr(code, "name", str(code))] += 1
            elif isinstance(value, tuple | list) or dataclasses.is_dataclass(value):
                _walk_every_field(value, tally)


def metadata_response(topics: int, partitions: int) -> Any:
    brokers = tuple(
        metadata.MetadataResponseBroker(node_id=i32(n), host="localhost", port=i32(9092), rack=None)
        for n in range(3)
    )
    return metadata.MetadataResponse(
        throttle_time=datetime.timedelta(0),
        brokers=brokers,
        cluster_id="bench",
        controller_id=i32(0),
        topics=tuple(
            metadata.MetadataResponseTopic(
                error_code=KioErrorCode.none,
                name=f"topic-{t}",
                topic_id=uuid.uuid4(),
                is_internal=False,
                partitions=tuple(
                    metadata.MetadataResponsePartition(
                        error_code=KioErrorCode.none,
                        partition_index=i32(p),
                        leader_id=i32(p % 3),
                        leader_epoch=i32(4),
                        replica_nodes=(i32(0), i32(1), i32(2)),
                        isr_nodes=(i32(0), i32(1), i32(2)),
                        offline_replicas=(),
                    )
                    for p in range(partitions)
                ),
                topic_authorized_operations=i32(0),
            )
            for t in range(topics)
        ),
    )


def bench_error_counts(repeat: int) -> Row:
    body = metadata_response(100, 10)
    assert error_counts(body) == _baseline_error_counts(body)
    return Row(
        "request metrics: error_counts of a 1,000-partition Metadata response",
        _time_us(lambda: error_counts(body), repeat),
        _time_us(lambda: _baseline_error_counts(body), repeat),
    )


def _baseline_error_counts(body: Any) -> Counter[str]:
    tally: Counter[str] = Counter()
    _walk_every_field(body, tally)
    return tally


# -- frame splitting ------------------------------------------------------------------


class _CopyTwiceSplitter:
    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        frames = []
        while len(self._buf) >= 4:
            (size,) = _SIZE.unpack_from(self._buf, 0)
            if len(self._buf) < 4 + size:
                break
            frames.append(bytes(self._buf[4 : 4 + size]))
            del self._buf[: 4 + size]
        return frames


def _feed_all(splitter: FrameAssembler | _CopyTwiceSplitter, chunks: list[bytes]) -> None:
    for chunk in chunks:
        splitter.feed(chunk)


def bench_frames(repeat: int) -> list[Row]:
    large = _SIZE.pack(1 << 20) + bytes(1 << 20)
    large_chunks = [large[i : i + 65536] for i in range(0, len(large), 65536)]
    small = b"".join(_SIZE.pack(100) + bytes(100) for _ in range(500))
    rows = []
    for name, chunks in (
        ("frame splitter: one 1 MiB frame in 64 KiB reads", large_chunks),
        ("frame splitter: 500 frames of 100 B in one read", [small]),
    ):
        rows.append(
            Row(
                name,
                _time_us(lambda c=chunks: _feed_all(FrameAssembler(), c), repeat),
                _time_us(lambda c=chunks: _feed_all(_CopyTwiceSplitter(), c), repeat),
            )
        )
    return rows


# -- metadata and request building -----------------------------------------------------


def _baseline_cluster_view(response: Any) -> ClusterMetadata:
    topics = {}
    for t in response.topics:
        partitions = {
            int(p.partition_index): PartitionInfo(
                partition=int(p.partition_index),
                leader_id=int(p.leader_id),
                leader_epoch=int(getattr(p, "leader_epoch", -1)),
                replicas=tuple(int(r) for r in p.replica_nodes),
                isr=tuple(int(r) for r in p.isr_nodes),
                offline_replicas=tuple(int(r) for r in getattr(p, "offline_replicas", ())),
                error=error_code_from_wire(int(p.error_code)),
            )
            for p in t.partitions
        }
        topics[t.name] = TopicInfo(
            t.name, t.topic_id, bool(t.is_internal), partitions, error_code_from_wire(0)
        )
    return ClusterMetadata(response.cluster_id, int(response.controller_id), {}, topics)


def bench_metadata(repeat: int) -> Row:
    response = metadata_response(100, 10)
    ours = _metadata_from_response(response)
    assert ours.topics == _baseline_cluster_view(response).topics
    return Row(
        "client: cluster view from a 1,000-partition Metadata response",
        _time_us(lambda: _metadata_from_response(response), repeat),
        _time_us(lambda: _baseline_cluster_view(response), repeat),
    )


def bench_builder(repeat: int) -> Row:
    fields = {
        "topics": [{"name": f"topic-{t}", "topic_id": None} for t in range(200)],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }
    request_type = type(build_request(3, 12, fields))

    def uncached() -> None:
        from mirrorsim.protocol import builder

        builder._plan.cache_clear()
        builder.build(request_type, fields)

    return Row(
        "client: Metadata request for 200 topics (baseline resolves field types per call)",
        _time_us(lambda: build_request(3, 12, fields), repeat),
        _time_us(uncached, repeat),
    )


# -- Produce and Fetch responses ------------------------------------------------------

PARTITIONS_PER_RESPONSE = 16
PRODUCE_VERSION = 9
FETCH_VERSION = 17
BATCH = bytes(16_384)


def bench_produce_response(repeat: int) -> Row:
    outcomes = [PartitionProduceOutcome(p, 0, 1000 + p, -1, 0) for p in range(16)]
    ours = ProduceResponseBody(PRODUCE_VERSION, [TopicProduceOutcome("t", None, outcomes)])
    cls = response_class(0, PRODUCE_VERSION)

    def kio() -> object:
        fields = {
            "responses": [
                {
                    "name": "t",
                    "partition_responses": [
                        {
                            "index": o.index,
                            "error_code": ErrorCode.NONE,
                            "base_offset": o.base_offset,
                            "log_append_time": None,
                            "log_start_offset": o.log_start_offset,
                            "record_errors": (),
                            "error_message": None,
                        }
                        for o in outcomes
                    ],
                }
            ],
            "throttle_time": datetime.timedelta(0),
        }
        return encode_response_buffers(
            build(cls, fields), api_version=PRODUCE_VERSION, correlation_id=1
        )

    def encoded() -> object:
        return encode_response_buffers(ours, api_version=PRODUCE_VERSION, correlation_id=1)

    assert b"".join(kio()) == b"".join(encoded())
    return Row(
        f"broker: Produce response of {PARTITIONS_PER_RESPONSE} partitions "
        "(encoded from the outcomes vs kio entities built and encoded)",
        _time_us(encoded, repeat),
        _time_us(kio, repeat),
    )


def bench_fetch_response(repeat: int) -> Row:
    reads = [
        FetchPartitionData(p, 0, 5000, 5000, 0, (), records=BATCH, mirror_leader_epoch=3)
        for p in range(PARTITIONS_PER_RESPONSE)
    ]
    ours = FetchResponseBody(FETCH_VERSION, [FetchTopicData(None, uuid.UUID(int=7), reads)])
    cls = response_class(1, FETCH_VERSION)

    def kio() -> object:
        fields = {
            "throttle_time": datetime.timedelta(0),
            "error_code": ErrorCode.NONE,
            "session_id": 0,
            "responses": [
                {
                    "topic_id": uuid.UUID(int=7),
                    "partitions": [
                        {
                            "partition_index": r.partition_index,
                            "error_code": ErrorCode.NONE,
                            "high_watermark": r.high_watermark,
                            "last_stable_offset": r.last_stable_offset,
                            "log_start_offset": r.log_start_offset,
                            "aborted_transactions": (),
                            "preferred_read_replica": -1,
                            "records": r.records,
                        }
                        for r in reads
                    ],
                }
            ],
        }
        return encode_response_buffers(
            build(cls, fields), api_version=FETCH_VERSION, correlation_id=1
        )

    def encoded() -> object:
        return encode_response_buffers(ours, api_version=FETCH_VERSION, correlation_id=1)

    assert b"".join(kio()) == b"".join(encoded())
    return Row(
        f"broker: Fetch response of {PARTITIONS_PER_RESPONSE} partitions x 16 KiB "
        "(encoded from the reads vs kio entities built and encoded)",
        _time_us(encoded, repeat),
        _time_us(kio, repeat),
    )


def bench_fetch_request(repeat: int) -> Row:
    """A live mirror's Fetch: one incremental session naming the partitions it appended to."""
    topic_id = uuid.UUID(int=7)
    positions = [(p, 5000 + p, 3) for p in range(PARTITIONS_PER_RESPONSE)]
    ours = FetchRequestBody(
        version=FETCH_VERSION,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=8 << 20,
        isolation_level=1,
        session_id=11,
        session_epoch=42,
        topics=[
            FetchRequestTopic(
                "mirrored",
                topic_id,
                [
                    FetchRequestPartition(p, offset, 1 << 20, current_leader_epoch=epoch)
                    for p, offset, epoch in positions
                ],
            )
        ],
    )

    def kio() -> object:
        fields = {
            "replica_id": -1,
            "max_wait": datetime.timedelta(milliseconds=500),
            "min_bytes": 1,
            "max_bytes": 8 << 20,
            "isolation_level": 1,
            "session_id": 11,
            "session_epoch": 42,
            "topics": [
                {
                    "topic": "mirrored",
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition": p,
                            "current_leader_epoch": epoch,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                        for p, offset, epoch in positions
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        body = build_request(1, FETCH_VERSION, fields)
        return encode_request(body, api_version=FETCH_VERSION, correlation_id=1, client_id="m")

    def encoded() -> object:
        return encode_request(ours, api_version=FETCH_VERSION, correlation_id=1, client_id="m")

    assert kio() == encoded()
    return Row(
        f"fetcher: Fetch request naming {PARTITIONS_PER_RESPONSE} partitions "
        "(encoded from the positions vs kio entities built and encoded)",
        _time_us(encoded, repeat),
        _time_us(kio, repeat),
    )


def bench_request_metrics(repeat: int) -> Row:
    """One request's accounting without error codes: three counters and seven timers."""
    metrics = RequestMetrics(CollectorRegistry())
    times = RequestTimes(0.001, 0.002, 0.0, 0.0001, 0.0001, 0.0, 0.004)

    def ours() -> None:
        metrics.observe(0, 9, request_size=1000, response_size=100, response=None)
        metrics.observe_times(0, 9, times)

    def labelled_per_call() -> None:
        name = api_name(0, 9)
        metrics.requests.labels(name, "9").inc()
        metrics.request_bytes.labels(name).inc(1000)
        metrics.response_bytes.labels(name).inc(100)
        for field, histogram in metrics.timers.items():
            histogram.labels(name).observe(getattr(times, field))

    return Row(
        "broker: request metrics of one request (series looked up once vs labels() per call)",
        _time_us(ours, repeat * 10),
        _time_us(labelled_per_call, repeat * 10),
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    arguments = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(arguments)
    repeat = 20 if args.quick else 100
    with tempfile.TemporaryDirectory(prefix="bench-hot-") as tmp:
        rows = [bench_epoch_truncation(Path(tmp), max(repeat // 5, 5))]
    rows += [bench_error_counts(repeat), *bench_frames(repeat), bench_metadata(repeat)]
    rows.append(bench_builder(repeat))
    rows += [bench_produce_response(repeat), bench_fetch_response(repeat)]
    rows.append(bench_fetch_request(repeat))
    rows.append(bench_request_metrics(repeat))
    command = shlex.join([".venv/bin/python", "-m", "mirrorsim.bench.bench_hot_paths", *arguments])
    document = {
        "command": command,
        "rows": [{**dataclasses.asdict(r), "speedup": round(r.speedup, 2)} for r in rows],
    }
    lines = [
        "# Hot paths outside mirroring",
        "",
        f"Command: `{command}`",
        "",
        "| path | ours µs | baseline µs | speedup |",
        "|---|---|---|---|",
        *(f"| {r.name} | {r.ours_us:.1f} | {r.baseline_us:.1f} | {r.speedup:.2f}x |" for r in rows),
        "",
        "Baselines run in the same process; see the module docstring for what each one is.",
    ]
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "hot_paths.json").write_text(json.dumps(document, indent=2) + "\n")
    (RESULTS_DIR / "hot_paths.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
