"""Server-side partition assignors of KIP-848 consumer groups: `uniform` and `range`.

An assignor is a pure function of the members' subscriptions, the partition counts of the
subscribed topics and the current target assignment, so the coordinator can recompute the
target whenever the group epoch moves and tests can check the rules without a broker.

- `uniform` (Kafka 4's default) balances the number of partitions per member: no two
  members that could take the same partition differ by more than one. It is sticky: a
  member keeps every partition it had unless balance requires moving it.
- `range` gives each subscribed member a contiguous range of each topic, members in
  member-id order, the first `partitions % members` getting one more (Kafka's range
  rule, so topics with equal partition counts are co-partitioned). It is not sticky.

Both are deterministic: the same input always yields the same assignment.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping

from mirrorsim.broker.group.offset_store import TopicPartition

UNIFORM = "uniform"
RANGE = "range"

Assignment = dict[str, frozenset[TopicPartition]]
"""Member id to the partitions the member should own."""

Assignor = Callable[
    [Mapping[str, frozenset[str]], Mapping[str, int], Mapping[str, frozenset[TopicPartition]]],
    Assignment,
]


def uniform_assign(
    subscriptions: Mapping[str, frozenset[str]],
    partition_counts: Mapping[str, int],
    current: Mapping[str, frozenset[TopicPartition]],
) -> Assignment:
    """Sticky balanced assignment: keep what is still valid, hand out the rest to the
    least loaded eligible member, then move partitions from the most to the least loaded
    eligible member until no move narrows the gap."""
    members = sorted(subscriptions)
    owned: dict[str, set[TopicPartition]] = {m: set() for m in members}
    taken: set[TopicPartition] = set()
    for member in members:
        for tp in sorted(current.get(member, frozenset())):
            if _eligible(tp, subscriptions[member], partition_counts) and tp not in taken:
                owned[member].add(tp)
                taken.add(tp)
    free = [tp for tp in _all_partitions(subscriptions, partition_counts) if tp not in taken]
    _hand_out(free, owned, subscriptions)
    _balance(owned, subscriptions)
    return {member: frozenset(partitions) for member, partitions in owned.items()}


def _hand_out(
    free: list[TopicPartition],
    owned: dict[str, set[TopicPartition]],
    subscriptions: Mapping[str, frozenset[str]],
) -> None:
    """Give each free partition to the least loaded member subscribed to its topic (ties:
    the smallest member id). Members with the same subscription share one heap of
    (load, member id), so a group whose members subscribe alike costs log(members) per
    partition rather than a scan of every member."""
    heaps: dict[frozenset[str], list[tuple[int, str]]] = {}
    for member, topics in subscriptions.items():
        heaps.setdefault(topics, []).append((len(owned[member]), member))
    for heap in heaps.values():
        heapq.heapify(heap)
    for tp in free:
        candidates = [heap for topics, heap in heaps.items() if tp.topic in topics]
        heap = min(candidates, key=lambda h: h[0])
        load, member = heap[0]
        heapq.heapreplace(heap, (load + 1, member))
        owned[member].add(tp)


def _balance(
    owned: dict[str, set[TopicPartition]], subscriptions: Mapping[str, frozenset[str]]
) -> None:
    """Move one partition at a time from a member to an eligible member holding at least
    two fewer; each move strictly lowers the sum of squared loads, so this terminates."""
    if len(set(subscriptions.values())) <= 1:
        _balance_alike(owned)
        return
    while True:
        move = _best_move(owned, subscriptions)
        if move is None:
            return
        source, target, tp = move
        owned[source].remove(tp)
        owned[target].add(tp)


def _balance_alike(owned: dict[str, set[TopicPartition]]) -> None:
    """`_balance` when every member subscribes alike, so any partition may go to anyone:
    the most loaded member (ties: smallest id) gives its smallest partition to the least
    loaded (ties: smallest id). Each member's partitions sit in a heap, so a move costs a
    scan of the members plus log(partitions), not a sort of the giver's partitions."""
    heaps = {member: sorted(parts) for member, parts in owned.items()}
    while True:
        source = min(owned, key=lambda m: (-len(owned[m]), m))
        target = min(owned, key=lambda m: (len(owned[m]), m))
        if len(owned[source]) - len(owned[target]) <= 1:
            return
        tp = heapq.heappop(heaps[source])
        heapq.heappush(heaps[target], tp)
        owned[source].remove(tp)
        owned[target].add(tp)


def _best_move(
    owned: dict[str, set[TopicPartition]], subscriptions: Mapping[str, frozenset[str]]
) -> tuple[str, str, TopicPartition] | None:
    loads = [len(parts) for parts in owned.values()]
    if not loads or max(loads) - min(loads) <= 1:
        return None
    by_load = sorted(owned, key=lambda m: (-len(owned[m]), m))
    for source in by_load:
        receivers = sorted(
            (m for m in owned if len(owned[m]) + 1 < len(owned[source])),
            key=lambda m: (len(owned[m]), m),
        )
        for target in receivers:
            movable = sorted(tp for tp in owned[source] if tp.topic in subscriptions[target])
            if movable:
                return source, target, movable[-1]
    return None


def range_assign(
    subscriptions: Mapping[str, frozenset[str]],
    partition_counts: Mapping[str, int],
    current: Mapping[str, frozenset[TopicPartition]],
) -> Assignment:
    """Kafka's range rule per topic; `current` is unused (the range rule is not sticky)."""
    del current
    owned: dict[str, set[TopicPartition]] = {m: set() for m in subscriptions}
    topics = sorted({t for topics in subscriptions.values() for t in topics})
    for topic in topics:
        count = partition_counts.get(topic, 0)
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        quota, extra = divmod(count, len(members))
        start = 0
        for index, member in enumerate(members):
            size = quota + (1 if index < extra else 0)
            owned[member].update(TopicPartition(topic, p) for p in range(start, start + size))
            start += size
    return {member: frozenset(partitions) for member, partitions in owned.items()}


ASSIGNORS: dict[str, Assignor] = {UNIFORM: uniform_assign, RANGE: range_assign}


def _eligible(
    tp: TopicPartition, topics: frozenset[str], partition_counts: Mapping[str, int]
) -> bool:
    return tp.topic in topics and 0 <= tp.partition < partition_counts.get(tp.topic, 0)


def _all_partitions(
    subscriptions: Mapping[str, frozenset[str]], partition_counts: Mapping[str, int]
) -> list[TopicPartition]:
    topics = sorted({t for topics in subscriptions.values() for t in topics})
    return [
        TopicPartition(topic, p) for topic in topics for p in range(partition_counts.get(topic, 0))
    ]
