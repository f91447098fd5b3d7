"""Cost of a failover's stop cut on large logs: producer state and ``.txnindex`` vs a scan.

Run: ``.venv/bin/python -m mirrorsim.bench.bench_stop_cut [--quick]``

A mirror partition's log of ``batches`` batches (one 100-byte record each, 1 MiB
segments) holds a transaction every ten batches, a third of them aborted, and ends the
way a failover finds it: a transaction aborted across the high watermark and another
still open. The measured cut (``transactions_deciding_stop_cut``, what STOPPING runs)
reads the producer state and the segments' transaction indexes. The baseline, measured
in the same run on the same log, is what STOPPING used to do: read every batch of the
log, decode its markers and rebuild every transaction (``transaction_spans``). Both must
agree on the cut. ratio = scan time / cut time. Results go to bench/results/stop_cut.json
and stop_cut.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
from pathlib import Path

from mirrorsim.bench.waiting import median_ms
from mirrorsim.broker.log import LogConfig, PartitionLog
from mirrorsim.coordinator.stop_transactions import transactions_deciding_stop_cut
from mirrorsim.fetcher.truncation import stop_truncation_offset, transaction_spans
from mirrorsim.protocol.records import (
    ControlRecordType,
    RawBatch,
    Record,
    build_batch,
    build_control_batch,
    decode_control_batch,
)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SEGMENT_BYTES = 1 << 20
TS = 1_700_000_000_000
SIZES = (10_000, 100_000)
QUICK_SIZES = (10_000,)


def _data(offset: int, producer_id: int = -1) -> RawBatch:
    return build_batch(
        [Record(offset, TS, b"key", b"v" * 100)],
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
        is_transactional=producer_id >= 0,
    )


def _marker(offset: int, producer_id: int, kind: ControlRecordType) -> RawBatch:
    return build_control_batch(
        kind, producer_id=producer_id, producer_epoch=0, base_offset=offset, timestamp=TS
    )


def build_log(directory: Path, batches: int) -> tuple[PartitionLog, int]:
    """The log, and the first offset of the transaction aborted across its high watermark."""
    log = PartitionLog.open(directory, LogConfig(segment_bytes=SEGMENT_BYTES), clock=lambda: 1.0)
    pending: list[RawBatch] = []
    offset = 0
    while offset < batches - 10:
        round_ = offset // 10
        producer_id = 1_000 + round_ % 13
        kind = ControlRecordType.ABORT if round_ % 3 == 0 else ControlRecordType.COMMIT
        pending.append(_data(offset, producer_id))
        pending.extend(_data(offset + i) for i in range(1, 9))
        pending.append(_marker(offset + 9, producer_id, kind))
        offset += 10
        if len(pending) >= 1_000:
            log.append_as_follower(pending)
            pending = []
    straddling = offset
    pending += [_data(offset, 7), _data(offset + 1), _data(offset + 2, 8)]
    pending.append(_marker(offset + 3, 7, ControlRecordType.ABORT))
    log.append_as_follower(pending)
    log.update_high_watermark(straddling + 2)
    return log, straddling


def scan_cut(log: PartitionLog) -> int:
    """The former STOPPING plan: every batch read, markers decoded, transactions rebuilt."""
    rows: list[tuple[int, int, bool, bool, bool | None]] = []
    for batch in log.batches():
        if not batch.is_transactional:
            continue
        aborted = None
        if batch.is_control:
            aborted = decode_control_batch(batch).kind is ControlRecordType.ABORT
        rows.append((batch.base_offset, batch.producer_id, True, batch.is_control, aborted))
    return stop_truncation_offset(log.last_stable_offset, transaction_spans(rows))


def indexed_cut(log: PartitionLog) -> int:
    lso = log.last_stable_offset
    spans = transactions_deciding_stop_cut(
        last_stable_offset=lso,
        log_start_offset=log.log_start_offset,
        open_transactions=log.producer_state.ongoing_transactions(),
        aborted_ending_at_or_after=log.aborted_transactions_ending_at_or_after,
    )
    return stop_truncation_offset(lso, spans)


def render_markdown(result: dict[str, object]) -> str:
    rows = result["logs"]
    assert isinstance(rows, list)
    lines = [
        "# Failover stop cut benchmark",
        "",
        f"Command: `{result['command']}`",
        "",
        f"Python {result['python']} on {result['machine']}; one 100-byte record per batch, "
        "1 MiB segments, a transaction every ten batches (a third aborted), the log ending "
        "in a transaction aborted across the high watermark and an open one.",
        "Baseline: the former plan, reading every batch and rebuilding every transaction; "
        "same log, same run. ratio = scan time / cut time. Both give the same cut.",
        "",
        "| batches | segments | cut | producer state + .txnindex ms | full scan ms | ratio |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['batches']} | {r['segments']} | {r['cut']} | {r['cut_ms']:.3f} "
        f"| {r['scan_ms']:.1f} | {r['ratio']:.0f} |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small log only, fewer runs")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 7
    command = ".venv/bin/python -m mirrorsim.bench.bench_stop_cut" + (
        " --quick" if args.quick else ""
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-stop-cut-") as tmp:
        for batches in QUICK_SIZES if args.quick else SIZES:
            log, straddling = build_log(Path(tmp) / f"mirror-{batches}", batches)
            cut = indexed_cut(log)
            if cut != straddling or scan_cut(log) != cut:
                raise AssertionError(f"cuts disagree: {cut}, {scan_cut(log)}, {straddling}")
            cut_ms = median_ms(lambda log=log: indexed_cut(log), repeat)
            scan_ms = median_ms(lambda log=log: scan_cut(log), repeat)
            rows.append(
                {
                    "batches": batches,
                    "segments": len(log.segments),
                    "cut": cut,
                    "cut_ms": cut_ms,
                    "scan_ms": scan_ms,
                    "ratio": scan_ms / max(cut_ms, 1e-6),
                }
            )
            log.close()
    result = {
        "command": command,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "repeat": repeat,
        "logs": rows,
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "stop_cut.json").write_text(json.dumps(result, indent=2) + "\n")
    markdown = render_markdown(result)
    (RESULTS_DIR / "stop_cut.md").write_text(markdown)
    print(markdown, end="")


if __name__ == "__main__":
    main()
