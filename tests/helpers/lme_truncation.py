"""Last-mirrored-epoch truncation scenarios: entry builders and the reference convergence."""

from mirrorsim.broker.log.epoch_cache import EpochEntry
from mirrorsim.fetcher.truncation import (
    epoch_end_offset,
    lme_truncation_offset,
    replication_truncation,
)

Log = list[int]


def entries(log: Log) -> list[EpochEntry]:
    out: list[EpochEntry] = []
    for offset, epoch in enumerate(log):
        if not out or out[-1].epoch != epoch:
            out.append(EpochEntry(epoch, offset))
    return out


def converge(destination: Log, source: Log, lme: int) -> Log:
    """LME truncation, then replication-protocol rounds, then fetching: a test executor."""
    dest = destination[: lme_truncation_offset(entries(destination), lme, len(destination))]
    for _ in range(len(dest) + 2):
        if not dest:
            break
        requested = dest[-1]
        src_epoch, src_end = epoch_end_offset(entries(source), requested, len(source))
        cut = replication_truncation(
            local_end_for_epoch=epoch_end_offset(entries(dest), src_epoch, len(dest)),
            requested_epoch=requested,
            source_epoch=src_epoch,
            source_end_offset=src_end,
            log_end_offset=len(dest),
        )
        dest = dest[: cut.offset]
        if cut.complete:
            break
    return dest
