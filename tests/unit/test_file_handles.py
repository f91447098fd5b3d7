"""The descriptor budget: many segments through a tiny LRU read exactly as with no limit,
and never hold more descriptors than the budget (counted in /proc/self/fd)."""

from __future__ import annotations

import os
import resource
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.broker.log.errors import StorageError
from mirrorsim.broker.log.file_handles import FileHandles, budget_for, raise_descriptor_limit
from mirrorsim.protocol.records import Record, build_batch, decode_records, iter_batches

PARTITIONS = 4
TINY_BUDGET = 3
UNBOUNDED = 1 << 20
SEGMENT_BYTES = 400
"""Small enough that a few appends roll a segment: the logs hold many segments each."""


def open_fds_under(directory: Path) -> int:
    """Descriptors of this process open on files below ``directory``."""
    count = 0
    for entry in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{entry}")
        except OSError:
            continue
        if target.startswith(str(directory)):
            count += 1
    return count


def open_logs(root: Path, handles: FileHandles) -> list[PartitionLog]:
    config = LogConfig(segment_bytes=SEGMENT_BYTES)
    return [
        PartitionLog.open(root / f"t-{p}", config, clock=lambda: 1.0, handles=handles)
        for p in range(PARTITIONS)
    ]


appends = st.tuples(
    st.just("append"),
    st.integers(0, PARTITIONS - 1),
    st.integers(1, 4),
    st.binary(min_size=1, max_size=60),
)
reads = st.tuples(
    st.just("read"),
    st.integers(0, PARTITIONS - 1),
    st.floats(0, 1),
    st.integers(1, 600),
)
reopens = st.tuples(st.just("reopen"), st.integers(0, PARTITIONS - 1), st.just(0), st.just(0))
steps = st.lists(st.one_of(appends, appends, reads, reads, reopens), min_size=1, max_size=60)


class Run:
    """One set of logs under one registry, driven by the same steps as its twin."""

    def __init__(self, root: Path, budget: int) -> None:
        self.root = root
        self.handles = FileHandles(budget)
        self.logs = open_logs(root, self.handles)

    def step(self, kind: str, partition: int, a: float | int, b: int | bytes) -> object:
        log = self.logs[partition]
        if kind == "append":
            assert isinstance(a, int) and isinstance(b, bytes)
            records = [Record(i, 1_000 + i, b"k%d" % i, b) for i in range(a)]
            info = log.append_as_leader([build_batch(records)], leader_epoch=0)
            return info.first_offset, info.last_offset
        if kind == "read":
            assert isinstance(a, float) and isinstance(b, int)
            offset = int(a * log.log_end_offset)
            result = log.read(offset, b)
            return result.records, result.first_offset, result.next_offset
        log.close()
        self.logs[partition] = PartitionLog.open(
            log.dir, log.config, clock=lambda: 1.0, handles=self.handles
        )
        return log.log_end_offset

    def close(self) -> None:
        for log in self.logs:
            log.close()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(script=steps)
def test_tiny_budget_reads_like_no_budget_and_stays_within_it(
    script: list[tuple[str, int, float | int, int | bytes]],
) -> None:
    with tempfile.TemporaryDirectory() as bounded_dir, tempfile.TemporaryDirectory() as free_dir:
        bounded = Run(Path(bounded_dir), TINY_BUDGET)
        unbounded = Run(Path(free_dir), UNBOUNDED)
        try:
            for kind, partition, a, b in script:
                assert bounded.step(kind, partition, a, b) == unbounded.step(kind, partition, a, b)
                assert open_fds_under(bounded.root) <= TINY_BUDGET
                assert bounded.handles.open_count <= TINY_BUDGET
        finally:
            bounded.close()
            unbounded.close()
        assert open_fds_under(bounded.root) == 0


def test_logs_with_more_segments_than_budget_read_back_after_eviction(tmp_path: Path) -> None:
    handles = FileHandles(TINY_BUDGET)
    logs = open_logs(tmp_path, handles)
    for round_ in range(10):
        for log in logs:
            log.append_as_leader([build_batch([Record(0, 1_000, b"k", b"%d" % round_ * 40)])], 0)
    assert sum(len(log.segments) for log in logs) > 4 * TINY_BUDGET
    assert open_fds_under(tmp_path) <= TINY_BUDGET
    for log in logs:
        offset, payloads = 0, []
        while offset < log.log_end_offset:
            result = log.read(offset, 1 << 20)
            payloads += [r.value for b in iter_batches(result.records) for r in decode_records(b)]
            offset = result.next_offset
        assert payloads == [b"%d" % round_ * 40 for round_ in range(10)]
    assert open_fds_under(tmp_path) <= TINY_BUDGET
    for log in logs:
        log.close()
    assert open_fds_under(tmp_path) == 0


def test_a_pinned_handle_is_not_closed_by_a_use_elsewhere(tmp_path: Path) -> None:
    handles = FileHandles(1)
    first, second, third = (handles.file(tmp_path / n, create=True) for n in ("a", "b", "c"))
    with first as fd:
        os.write(fd, b"first")
        reader = threading.Thread(target=lambda: second.__enter__())
        reader.start()
        reader.join()
        assert os.pread(fd, 5, 0) == b"first"
        assert first.is_open and second.is_open
    with third:
        assert not first.is_open
        assert second.is_open
    second.__exit__(None, None, None)
    with first as fd:
        assert os.pread(fd, 5, 0) == b"first"
        assert not second.is_open


def exhaust(hog: list[int]) -> None:
    """Open descriptors into ``hog`` until the process has none left."""
    try:
        while True:
            hog.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass


def test_out_of_descriptors_closes_idle_handles_then_reports_a_storage_error(
    tmp_path: Path,
) -> None:
    handles = FileHandles(UNBOUNDED)
    idle = [handles.file(tmp_path / f"idle-{i}", create=True) for i in range(4)]
    wanted = handles.file(tmp_path / "wanted", create=True)
    wanted.close()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 64, hard))
    hog: list[int] = []
    try:
        exhaust(hog)
        with wanted as fd:
            assert fd >= 0
        assert not any(pooled.is_open for pooled in idle)
        wanted.close()
        exhaust(hog)
        with pytest.raises(StorageError, match="wanted"), wanted:
            pass
    finally:
        for fd in hog:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert handles.open_count == 0


def test_the_budget_is_a_fraction_of_the_raised_limit() -> None:
    limit = raise_descriptor_limit()
    assert limit.soft == limit.hard or limit.hard < 0
    assert limit.budget == budget_for(limit.soft)
    assert 0 < limit.budget < limit.soft
