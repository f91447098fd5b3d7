"""The human view of a VerifyReport: rich tables for the terminal."""

from __future__ import annotations

from rich.table import Table

from mirrorsim.verify.report import VerifyReport

_STATUS_STYLE = {
    "converged": "green",
    "lagging": "yellow",
    "stopped": "cyan",
    "diverged": "bold red",
}


def _offset(value: int | None) -> str:
    return "-" if value is None else str(value)


def partitions_table(report: VerifyReport) -> Table:
    table = Table(title=f"Mirror convergence ({report.level} level)")
    for column in ("TOPIC", "PARTITION", "STATUS", "SOURCE-LEO", "DESTINATION-LEO", "LAG"):
        table.add_column(column, overflow="fold")
    for column in ("STOP-OFFSET", "MATCHED", "EXPECTED", "UNEXPECTED", "FIRST-UNEXPECTED"):
        table.add_column(column, overflow="fold")
    for row in report.partitions:
        status = row["status"]
        table.add_row(
            row["topic"],
            str(row["partition"]),
            f"[{_STATUS_STYLE[status]}]{status}[/]",
            _offset(row["source_log_end_offset"]),
            _offset(row["destination_log_end_offset"]),
            str(row["lag"]),
            _offset(row["stop_offset"]),
            str(row["matched"]),
            str(row["expected_divergences"]),
            str(row["unexpected_divergences"]),
            _offset(row["first_unexpected_offset"]),
        )
    return table


def failures_table(report: VerifyReport) -> Table | None:
    """What failed: per diverged partition its first unexpected divergence, and every
    unexpected consumer-group check."""
    table = Table(title="Unexpected divergences")
    for column in ("TOPIC", "PARTITION", "GROUP", "OFFSET", "KIND", "EXPECTED", "FOUND"):
        table.add_column(column, overflow="fold")
    for row in report.partitions:
        if row["unexpected_divergences"]:
            table.add_row(
                row["topic"],
                str(row["partition"]),
                "-",
                str(row["first_unexpected_offset"]),
                row["first_unexpected_kind"],
                row["first_unexpected_expected"],
                row["first_unexpected_found"],
            )
    for row in report.groups:
        if row["classification"] == "unexpected":
            offset = row["destination_committed_offset"]
            if offset is None:
                offset = row["source_committed_offset"]
            table.add_row(
                row["topic"],
                str(row["partition"]),
                row["group"],
                str(offset),
                row["kind"],
                row["expected"],
                row["found"],
            )
    return table if table.row_count else None
