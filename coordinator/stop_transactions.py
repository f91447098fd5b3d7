"""The transactions a failover's stop cut depends on, without reading the log's batches.

The stop cut (``stop_truncation_offset``) starts at the LSO and drops below every open
or aborted transaction that straddles it. A transaction straddles a cut only when its
marker is at or above the cut, or when it has none: committed transactions never lower
it, open ones are in the producer state, and aborted ones are in the ``.txnindex`` of
the segment that holds their ABORT marker, exactly what a Kafka broker keeps for
READ_COMMITTED fetches. So the transactions are taken from those two, with the index
read from the current cut on; when an abort lowers the cut below that window the window
widens to the new cut and is read again. A failover then costs the same for a log of one
segment or of a thousand, where a scan of every batch cost a full read per partition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from mirrorsim.broker.log.txn_index import CompletedAbort
from mirrorsim.fetcher.truncation import TxnSpan, stop_truncation_offset


def transactions_deciding_stop_cut(
    *,
    last_stable_offset: int,
    log_start_offset: int,
    open_transactions: Mapping[int, int],
    aborted_ending_at_or_after: Callable[[int], Iterable[CompletedAbort]],
) -> list[TxnSpan]:
    """Every transaction that can move the stop cut, from the LSO down.

    ``open_transactions`` maps producer id → first offset of its ongoing transaction;
    ``aborted_ending_at_or_after(offset)`` gives the aborted transactions whose marker
    is at or after ``offset``. The cut ``stop_truncation_offset`` computes from the
    result is the one it computes from every transaction of the log. First offsets below
    the log start are raised to it: the records before it are gone, and a cut below the
    log start would empty the log.
    """
    open_spans = [
        TxnSpan(producer_id, max(first_offset, log_start_offset), None, aborted=False)
        for producer_id, first_offset in open_transactions.items()
    ]
    window = last_stable_offset
    while True:
        spans = open_spans + [
            TxnSpan(
                entry.producer_id,
                max(entry.first_offset, log_start_offset),
                entry.last_offset,
                aborted=True,
            )
            for entry in aborted_ending_at_or_after(window)
        ]
        cut = stop_truncation_offset(last_stable_offset, spans)
        if cut >= window:
            return sorted(spans, key=lambda s: (s.first_offset, s.producer_id))
        window = cut
