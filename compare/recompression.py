"""The CPU a record-by-record copy spends on compression: decompress every source batch
and compress its records into a new batch, as a MirrorMaker worker's consumer and
producer do. Cluster mirroring copies the bytes and spends none of it."""

from __future__ import annotations

import time

from mirrorsim.broker.cluster import ClusterRunner
from mirrorsim.compare.workload import Workload
from mirrorsim.protocol.records import build_batch, decode_records


def recompression_cpu_seconds(source: ClusterRunner, workload: Workload) -> float:
    """Process CPU seconds to decompress and recompress the workload's batches once."""
    replica_manager = source.brokers[0].replica_manager
    batches = [
        batch
        for p in range(workload.partitions)
        for batch in replica_manager.partition(workload.topic, p).log.batches()
    ]
    started = time.process_time()
    for batch in batches:
        build_batch(decode_records(batch), compression=batch.compression)
    return time.process_time() - started
