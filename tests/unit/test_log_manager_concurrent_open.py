"""Two threads opening the same partition's log get the one log.

A metadata refresh that is cancelled while a worker thread opens a log leaves that thread
running; the next refresh opens the same partition again. Both must end with the same
``PartitionLog``, with no error and no second set of open files.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mirrorsim.broker.log.config import LogConfig
from mirrorsim.broker.log.log_manager import LogManager

OPENERS = 8
ROUNDS = 30


def test_concurrent_opens_of_one_partition_return_one_log(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        manager = LogManager(tmp_path / f"round-{round_}")
        start = threading.Barrier(OPENERS)

        def open_log(manager: LogManager = manager, start: threading.Barrier = start) -> object:
            start.wait()
            return manager.get_or_create("orders", 0, LogConfig())

        with ThreadPoolExecutor(OPENERS) as pool:
            logs = [f.result() for f in [pool.submit(open_log) for _ in range(OPENERS)]]
        assert len({id(log) for log in logs}) == 1
        assert manager.get("orders", 0) is logs[0]
        manager.close()
