"""The outcome of a verification run, as plain data a JSON report and a table share."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from mirrorsim.verify.convergence import UNEXPECTED


@dataclass(frozen=True)
class VerifyReport:
    """Per-partition summaries, the first divergences (all counted, ``max_listed`` kept)
    and the consumer-group checks."""

    level: str
    partitions: list[dict[str, Any]]
    divergences: list[dict[str, Any]]
    groups: list[dict[str, Any]] = field(default_factory=list)

    @property
    def unexpected_divergences(self) -> int:
        in_logs = sum(row["unexpected_divergences"] for row in self.partitions)
        in_groups = sum(1 for row in self.groups if row["classification"] == UNEXPECTED)
        return in_logs + in_groups

    @property
    def expected_divergences(self) -> int:
        return sum(row["expected_divergences"] for row in self.partitions) + sum(
            1 for row in self.groups if row["classification"] not in (None, UNEXPECTED)
        )

    @property
    def converged(self) -> bool:
        """True when nothing diverges that the recorded stop points do not explain."""
        return self.unexpected_divergences == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "converged": self.converged,
            "unexpected_divergences": self.unexpected_divergences,
            "expected_divergences": self.expected_divergences,
            **asdict(self),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)
