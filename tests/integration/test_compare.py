"""All three copy modes on one small deterministic workload, then a failover each."""

from __future__ import annotations

from pathlib import Path

from mirrorsim.compare.scenario import ComparisonSettings, run_comparison
from mirrorsim.compare.workload import Workload

# 1 partition, offsets 0..599 produced in batches of 50, 0..99 deleted; the group has
# consumed 277 records past the log start: committed source offset 377.
WORKLOAD = Workload(partitions=1, records_per_partition=600, consumed_per_partition=277)


async def test_three_modes_fail_over_as_each_design_predicts(tmp_path: Path) -> None:
    settings = ComparisonSettings(workload=WORKLOAD, offset_lag_max=100, failback_records=20)
    mirroring, mm2, legacy = await run_comparison(settings, tmp_path)

    (m,) = mirroring.partitions
    assert (m.source_committed, m.expected_target_offset, m.resume_offset) == (377, 377, 377)
    assert mirroring.offsets_preserved and mirroring.topic_id_preserved
    assert mirroring.topic_name_preserved and mirroring.missing_records == 0
    assert mirroring.recompression_cpu_seconds == 0
    assert 0 < mirroring.failback_bytes < mm2.failback_bytes

    # MM2 copies source 100.. to target 0.. (downstream = upstream - 100) and publishes a
    # sync at upstream 100, then each time the target is 101 records past the last one
    # (201, 302, 403, 504), and 599 at the pass's offset commit. Six syncs fit the
    # 64-entry cache whole, so committed 377 translates through 302 -> 202 to 203; the
    # record the group has not consumed sits at target 277: 277 - 203 = 74 re-read.
    (p,) = mm2.partitions
    assert mm2.target_topic == "primary.orders"
    assert (p.expected_target_offset, p.resume_offset) == (277, 203)
    assert (mm2.reprocessed, mm2.skipped, mm2.missing_records) == (74, 0, 0)
    assert not mm2.offsets_preserved and not mm2.topic_id_preserved
    assert [(t.method, t.resume_offsets, t.reprocessed, t.committed) for t in mm2.translations] == [
        ("offset-sync", [203], 74, True)
    ]

    # Legacy MM copies every record and no group offset: the group starts at the log start.
    (lp,) = legacy.partitions
    assert legacy.records_copied == 500 and legacy.missing_records == 0
    assert (lp.expected_target_offset, lp.resume_offset) == (277, 0)
    assert (legacy.reprocessed, legacy.skipped) == (277, 0)
    assert legacy.topic_name_preserved and not legacy.offsets_preserved
