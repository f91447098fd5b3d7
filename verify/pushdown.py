"""Which Spark filters the segment reader can apply itself, and how.

A filter on ``topic`` or ``partition`` prunes whole partition folders, a range on the
offset column prunes whole segments; both are also applied row by row in the reader so
that every accepted filter holds exactly and Spark need not evaluate it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)


@dataclass
class Pushdown:
    """The conjunction of accepted filters, as the sets and bounds it boils down to."""

    offset_column: str
    topics: set[str] | None = None
    partitions: set[int] | None = None
    start_offset: int | None = None  # inclusive
    end_offset: int | None = None  # exclusive
    accepted: list[Filter] = field(default_factory=list)

    def accept(self, flt: Filter) -> bool:
        """Fold ``flt`` into this pushdown if it can be applied exactly; else leave it."""
        column = getattr(flt, "attribute", None)
        if column == ("topic",) and isinstance(flt, EqualTo | In):
            self.topics = _narrow(self.topics, _values(flt))
        elif column == ("partition",) and isinstance(flt, EqualTo | In):
            self.partitions = _narrow(self.partitions, _values(flt))
        elif column == (self.offset_column,) and isinstance(
            flt, GreaterThan | GreaterThanOrEqual | LessThan | LessThanOrEqual
        ):
            self._bound(flt)
        else:
            return False
        self.accepted.append(flt)
        return True

    def _bound(self, flt: Filter) -> None:
        value = int(flt.value)  # type: ignore[attr-defined]
        if isinstance(flt, GreaterThan | GreaterThanOrEqual):
            start = value + 1 if isinstance(flt, GreaterThan) else value
            current = self.start_offset
            self.start_offset = start if current is None else max(current, start)
        else:
            end = value + 1 if isinstance(flt, LessThanOrEqual) else value
            self.end_offset = end if self.end_offset is None else min(self.end_offset, end)

    def keeps_partition(self, topic: str, partition: int) -> bool:
        return (self.topics is None or topic in self.topics) and (
            self.partitions is None or partition in self.partitions
        )


def _values(flt: EqualTo | In) -> set[Any]:
    return {flt.value} if isinstance(flt, EqualTo) else set(flt.value)


def _narrow(current: set[Any] | None, values: set[Any]) -> set[Any]:
    return values if current is None else current & values
