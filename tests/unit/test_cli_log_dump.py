"""dump-log's lines, checked against the spec's kafka-dump-log --mirror-state-decoder sample."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from mirrorsim.cli.log_dump import (
    Decoder,
    base_offset_of,
    dump_log,
    dump_offset_index,
    dump_time_index,
)
from mirrorsim.cli.main import cli
from mirrorsim.protocol.messages.mirror_state_records import (
    MirrorPartitionStateKey,
    MirrorPartitionStateValue,
    encode_mirror_state_key,
    encode_mirror_state_value,
)
from mirrorsim.protocol.records import ControlRecordType, Record, build_batch, build_control_batch

SPEC = Path("/work/shared/spec/001_338b6a3feaa0f594.txt")
SPEC_SAMPLE = [
    "Log starting offset: 0",
    "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
    "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1771239071191 size: 98 "
    "magic: 2 compresscodec: none crc: 3314855113 isvalid: true",
    "| offset: 0 CreateTime: 1771239071191 keySize: 13 valueSize: 17 sequence: -1 headerKeys: [] "
    'key: {"type":"2","data":{"mirrorName":"my-mirror"}} '
    'payload: {"version":"0","data":{"topicName":"my-topic","partition":0,"state":0}}',
    "baseOffset: 1 lastOffset: 1 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
    "deleteHorizonMs: OptionalLong.empty position: 98 CreateTime: 1771239071219 size: 98 "
    "magic: 2 compresscodec: none crc: 3968746657 isvalid: true",
    "| offset: 1 CreateTime: 1771239071219 keySize: 13 valueSize: 17 sequence: -1 headerKeys: [] "
    'key: {"type":"2","data":{"mirrorName":"my-mirror"}} '
    'payload: {"version":"0","data":{"topicName":"my-topic","partition":0,"state":1}}',
]


def mirror_state_segment() -> bytes:
    key = encode_mirror_state_key(MirrorPartitionStateKey(mirror_name="my-mirror"))
    data = b""
    for offset, timestamp, state in ((0, 1771239071191, 0), (1, 1771239071219, 1)):
        value = encode_mirror_state_value(
            MirrorPartitionStateValue(topic_name="my-topic", partition=0, state=state)
        )
        record = Record(offset, timestamp, key, value)
        data += build_batch([record], base_offset=offset, partition_leader_epoch=0).data
    return data


def test_mirror_state_decoder_reproduces_the_spec_sample_byte_for_byte() -> None:
    lines = list(
        dump_log(mirror_state_segment(), base_offset=0, decoder=Decoder.MIRROR_STATE, deep=False)
    )
    assert lines == SPEC_SAMPLE
    if SPEC.exists():
        spec_text = SPEC.read_text()
        assert all(line in spec_text for line in SPEC_SAMPLE)


def test_without_a_decoder_only_batches_are_printed() -> None:
    lines = list(dump_log(mirror_state_segment(), base_offset=0, decoder=Decoder.NONE, deep=False))
    assert lines == [SPEC_SAMPLE[0], SPEC_SAMPLE[1], SPEC_SAMPLE[3]]


def test_deep_iteration_prints_records_without_contents() -> None:
    lines = list(dump_log(mirror_state_segment(), base_offset=0, decoder=Decoder.NONE, deep=True))
    assert lines[2] == (
        "| offset: 0 CreateTime: 1771239071191 keySize: 13 valueSize: 17 sequence: -1 "
        "headerKeys: []"
    )


def test_control_records_and_text_payloads() -> None:
    data = build_batch(
        [
            Record(5, 1000, b"k", b"hello", (("h1", b"x"), ("h2", None))),
            Record(6, 1001, None, b"v"),
        ],
        base_offset=5,
        producer_id=42,
        producer_epoch=1,
        base_sequence=7,
        is_transactional=True,
        partition_leader_epoch=3,
    ).data
    data += build_control_batch(
        ControlRecordType.COMMIT,
        producer_id=42,
        producer_epoch=1,
        base_offset=7,
        partition_leader_epoch=3,
        timestamp=1002,
        coordinator_epoch=9,
    ).data
    data += build_control_batch(
        ControlRecordType.MIRROR_PID_RESET,
        producer_id=-1,
        producer_epoch=-1,
        base_offset=8,
        partition_leader_epoch=4,
        timestamp=1003,
        source_cluster_id="lBq12jYZRp-9wF3M9MPopg",
    ).data
    lines = list(dump_log(data, base_offset=5, decoder=Decoder.TEXT, deep=False))
    assert lines[1].startswith(
        "baseOffset: 5 lastOffset: 6 count: 2 baseSequence: 7 lastSequence: 8 producerId: 42 "
        "producerEpoch: 1 partitionLeaderEpoch: 3 isTransactional: true isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1001 size: "
    )
    assert lines[2] == (
        "| offset: 5 CreateTime: 1000 keySize: 1 valueSize: 5 sequence: 7 headerKeys: [h1,h2] "
        "key: k payload: hello"
    )
    assert lines[3] == (
        "| offset: 6 CreateTime: 1001 keySize: -1 valueSize: 1 sequence: 8 headerKeys: [] "
        "payload: v"
    )
    assert "isTransactional: true isControl: true" in lines[4]
    assert lines[5].endswith("headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 9")
    assert "isTransactional: false isControl: true" in lines[6]
    assert lines[7].endswith(
        "headerKeys: [] controlType: MIRROR_PID_RESET(7) sourceClusterId: lBq12jYZRp-9wF3M9MPopg"
    )
    assert len(lines) == 8


def test_a_torn_tail_is_reported_and_a_corrupt_crc_marked_invalid() -> None:
    data = bytearray(mirror_state_segment())
    data[-1] ^= 0xFF
    lines = list(
        dump_log(bytes(data) + b"\x00\x01\x02", base_offset=0, decoder=Decoder.NONE, deep=False)
    )
    assert lines[2].endswith("isvalid: false")
    assert lines[-1] == "Found 3 invalid bytes at the end of the file"


def test_tombstones_print_delete() -> None:
    key = encode_mirror_state_key(MirrorPartitionStateKey(mirror_name="m"))
    data = build_batch([Record(0, 1, key, None)]).data
    (line,) = [
        printed
        for printed in dump_log(data, base_offset=0, decoder=Decoder.MIRROR_STATE, deep=False)
        if printed.startswith("|")
    ]
    assert line.endswith('key: {"type":"2","data":{"mirrorName":"m"}} payload: <DELETE>')


def test_index_files() -> None:
    offsets = (
        (0).to_bytes(4, "big")
        + (0).to_bytes(4, "big")
        + (7).to_bytes(4, "big")
        + (4096).to_bytes(4, "big")
    )
    assert list(dump_offset_index(offsets + bytes(16), base_offset=100)) == [
        "offset: 100 position: 0",
        "offset: 107 position: 4096",
    ]
    times = (1000).to_bytes(8, "big") + (3).to_bytes(4, "big")
    assert list(dump_time_index(times + bytes(12), base_offset=100)) == [
        "timestamp: 1000 offset: 103"
    ]


def test_base_offset_comes_from_the_file_name() -> None:
    assert base_offset_of("00000000000000000042.log") == 42
    assert base_offset_of("leader-epoch-checkpoint") == 0


def test_the_command_takes_kafkas_comma_list_max_bytes_and_skips_record_metadata(
    tmp_path: Path,
) -> None:
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(mirror_state_segment())
    index = tmp_path / "00000000000000000000.index"
    index.write_bytes(b"")

    both = CliRunner().invoke(cli, ["dump-log", "--files", f"{log},{index}"])
    assert both.exit_code == 0, both.output
    assert both.stdout.splitlines() == [
        f"Dumping {log}",
        SPEC_SAMPLE[0],
        SPEC_SAMPLE[1],
        SPEC_SAMPLE[3],
        f"Dumping {index}",
    ]

    first_batch = CliRunner().invoke(cli, ["dump-log", "--files", str(log), "--max-bytes", "150"])
    assert first_batch.stdout.splitlines() == [f"Dumping {log}", SPEC_SAMPLE[0], SPEC_SAMPLE[1]]

    contents = CliRunner().invoke(
        cli,
        ["dump-log", "--files", str(log), "--mirror-state-decoder", "--skip-record-metadata"],
    )
    assert contents.stdout.splitlines()[3] == (
        ' key: {"type":"2","data":{"mirrorName":"my-mirror"}} '
        'payload: {"version":"0","data":{"topicName":"my-topic","partition":0,"state":0}}'
    )

    missing = CliRunner().invoke(cli, ["dump-log", "--files", f"{log},{tmp_path / 'nope.log'}"])
    assert (missing.exit_code, missing.stderr) == (
        1,
        f"Error: {tmp_path / 'nope.log'} is not a file\n",
    )
