"""One log line format for every broker, in its own process or many in one process.

``%(asctime)s %(levelname)s broker=<id> %(name)s: %(message)s``. The broker id comes from
a context variable that ``Broker.start`` sets: every task the broker creates (jobs,
listener, connections) inherits it, so several in-process brokers stay apart in one log.
Lines from outside any broker show ``broker=-``.
"""

from __future__ import annotations

import contextvars
import logging
import sys

LOG_FORMAT = "%(asctime)s %(levelname)s broker=%(broker)s %(name)s: %(message)s"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

current_broker: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "current_broker", default=None
)


class _BrokerLogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The stderr handler ``configure_logging`` installs (found again by its class)."""


class BrokerField(logging.Filter):
    """Adds ``record.broker``: the id of the broker whose task logged, else ``-``."""

    def filter(self, record: logging.LogRecord) -> bool:
        broker = current_broker.get()
        record.broker = "-" if broker is None else broker
        return True


def configure_logging(level: str) -> None:
    """Log to stderr in ``LOG_FORMAT`` from ``level`` up; calling it again replaces the
    handler it installed before and leaves any other handler alone."""
    handler = _BrokerLogHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(BrokerField())
    root = logging.getLogger()
    for existing in [h for h in root.handlers if isinstance(h, _BrokerLogHandler)]:
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level.upper())
