"""Producer ids for InitProducerId, unique across restarts and across the cluster's brokers.

Kafka hands brokers blocks of ids from the controller so that a restart never reissues an
id. This allocator keeps the same guarantee locally: it persists the end of the current
block before handing out any id in it, so after a crash it resumes at the next block (a few
ids are skipped, none is reused). Ids are striped by broker id (``sequence * STRIDE +
broker_id``) so brokers of one cluster never collide without talking to each other.
"""

from __future__ import annotations

import os
from pathlib import Path

BLOCK_SIZE = 1000
STRIDE = 1024
FILE_NAME = "producer-id-block"


class ProducerIdAllocator:
    def __init__(self, data_dir: Path, broker_id: int) -> None:
        if not 0 <= broker_id < STRIDE:
            raise ValueError(f"broker id {broker_id} outside 0..{STRIDE - 1}")
        self._path = Path(data_dir) / FILE_NAME
        self._broker_id = broker_id
        self._next_sequence = self._load()
        self._block_end = self._next_sequence

    def _load(self) -> int:
        try:
            return int(self._path.read_text().strip())
        except FileNotFoundError:
            return 0

    def _persist(self, block_end: int) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write(f"{block_end}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path)

    def allocate(self) -> int:
        if self._next_sequence >= self._block_end:
            self._block_end = self._next_sequence + BLOCK_SIZE
            self._persist(self._block_end)
        sequence = self._next_sequence
        self._next_sequence += 1
        return sequence * STRIDE + self._broker_id
