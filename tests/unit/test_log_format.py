"""An independent reader, written from Kafka's documented on-disk format with struct
alone, checks what PartitionLog writes: segment batches, .index, .timeindex,
.txnindex, leader-epoch-checkpoint and partition.metadata."""

from __future__ import annotations

import base64
import struct
import uuid
from pathlib import Path

import crc32c

from mirrorsim.broker.log import AppendOrigin, LogConfig, PartitionLog
from mirrorsim.protocol.records import ControlRecordType, Record, build_batch, build_control_batch

BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")


def parse_segment(path: Path) -> list[dict[str, int]]:
    data = path.read_bytes()
    batches, pos = [], 0
    while pos < len(data):
        (base, length, epoch, magic, crc, attrs, lod, _, max_ts, _, _, _, count) = (
            BATCH_HEADER.unpack_from(data, pos)
        )
        end = pos + 12 + length
        assert magic == 2
        assert crc32c.crc32c(data[pos + 21 : end]) == crc
        batches.append(
            {
                "position": pos,
                "base": base,
                "last": base + lod,
                "epoch": epoch,
                "max_ts": max_ts,
                "count": count,
                "attrs": attrs,
            }
        )
        pos = end
    assert pos == len(data)
    return batches


def test_segments_and_indexes_match_kafkas_format(tmp_path: Path) -> None:
    topic_id = uuid.uuid4()
    path = tmp_path / "fmt-0"
    log = PartitionLog.open(
        path, LogConfig(segment_bytes=1_500, index_interval_bytes=150), topic_id=topic_id
    )
    for i in range(40):
        records = [Record(j, 10_000 + (i * 37) % 500 + j, b"key", b"x" * 30) for j in range(2)]
        log.append_as_leader([build_batch(records)], leader_epoch=i // 10)
    log.append_as_leader(
        [
            build_batch(
                [Record(0, 1, b"k", b"v")],
                producer_id=3,
                producer_epoch=0,
                base_sequence=0,
                is_transactional=True,
            )
        ],
        leader_epoch=4,
    )
    abort = build_control_batch(
        ControlRecordType.ABORT, producer_id=3, producer_epoch=0, timestamp=20_000
    )
    log.append_as_leader([abort], leader_epoch=4, origin=AppendOrigin.COORDINATOR)
    log.close()

    logs = sorted(path.glob("*.log"))
    assert len(logs) > 2
    expected_offset = 0
    epochs_seen: list[tuple[int, int]] = []
    for log_file in logs:
        base_offset = int(log_file.name[:20])
        assert len(log_file.name) == len("00000000000000000000.log")
        batches = parse_segment(log_file)
        assert batches[0]["base"] == base_offset
        for b in batches:
            assert b["base"] == expected_offset
            expected_offset = b["last"] + 1
            if not epochs_seen or epochs_seen[-1][0] != b["epoch"]:
                epochs_seen.append((b["epoch"], b["base"]))
        by_position = {b["position"]: b for b in batches}

        index = log_file.with_suffix(".index").read_bytes()
        assert len(index) % 8 == 0
        assert index or len(log_file.read_bytes()) < 2 * 150
        for relative, position in struct.iter_unpack(">ii", index):
            assert by_position[position]["last"] == base_offset + relative

        time_index = log_file.with_suffix(".timeindex").read_bytes()
        assert len(time_index) % 12 == 0 and time_index
        previous = -1
        for timestamp, relative in struct.iter_unpack(">qi", time_index):
            assert timestamp > previous
            previous = timestamp
            upto = [b for b in batches if b["base"] <= base_offset + relative]
            assert max(b["max_ts"] for b in upto) == timestamp
        assert previous == max(b["max_ts"] for b in batches)

    txn_index = sorted(path.glob("*.txnindex"))
    assert len(txn_index) == 1
    version, pid, first, last, lso = struct.unpack(">hqqqq", txn_index[0].read_bytes())
    assert (version, pid, first, last, lso) == (0, 3, 80, 81, 82)

    lines = (path / "leader-epoch-checkpoint").read_text().splitlines()
    assert lines[:2] == ["0", str(len(epochs_seen))]
    assert [tuple(map(int, line.split())) for line in lines[2:]] == epochs_seen

    metadata = dict(
        line.split(": ", 1) for line in (path / "partition.metadata").read_text().splitlines()
    )
    assert metadata["version"] == "0"
    raw = base64.urlsafe_b64decode(metadata["topic_id"] + "==")
    assert uuid.UUID(bytes=raw) == topic_id
