"""Live progress of a Spark job on a rich status line: the job's step and task counts.

Spark reports progress only through its status tracker, so a daemon thread polls it
while the driver blocks in ``collect()``.
"""

from __future__ import annotations

import threading
from types import TracebackType

from pyspark import SparkContext
from rich.status import Status

POLL_SECONDS = 0.5


class SparkProgress:
    def __init__(self, context: SparkContext, status: Status) -> None:
        self._context = context
        self._status = status
        self._step = "starting"
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="spark-progress", daemon=True)

    def step(self, name: str) -> None:
        self._step = name
        self._refresh()

    def __enter__(self) -> SparkProgress:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stopped.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stopped.wait(POLL_SECONDS):
            self._refresh()

    def _refresh(self) -> None:
        tracker = self._context.statusTracker()
        stages = [tracker.getStageInfo(stage) for stage in tracker.getActiveStageIds()]
        done = sum(stage.numCompletedTasks for stage in stages if stage is not None)
        total = sum(stage.numTasks for stage in stages if stage is not None)
        tasks = f" — {done}/{total} tasks in {len(stages)} stage(s)" if total else ""
        self._status.update(f"{self._step}{tasks}")
