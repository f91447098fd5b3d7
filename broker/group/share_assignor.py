"""The server-side assignor of KIP-932 share groups: `simple` (Kafka's SimpleAssignor).

In a share group the records of a partition are handed out one by one, so a partition may
be assigned to several members at once. The rules, as Kafka 4.1 states them:

- every subscribed partition goes to at least one member subscribed to its topic; with
  more subscribers than partitions a partition is shared by `ceil(subscribers /
  partitions)` of them, so nobody is left without work;
- balance first: no two members that could take the same partition hold counts differing
  by more than one;
- then stickiness: a member keeps what it had unless balance (or too much sharing)
  requires moving it.

A pure function of the members' subscriptions, the subscribed topics' partition counts and
the current target, like the consumer assignors (`assignors`), and deterministic: members
and partitions are always visited in sorted order. Kafka's own choice among equally good
assignments differs (it hashes member ids); clients cannot tell, since any member may be
given any partition.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from mirrorsim.broker.group.assignors import Assignment
from mirrorsim.broker.group.offset_store import TopicPartition

SIMPLE = "simple"


def simple_assign(
    subscriptions: Mapping[str, frozenset[str]],
    partition_counts: Mapping[str, int],
    current: Mapping[str, frozenset[TopicPartition]],
) -> Assignment:
    """Keep what is still valid (up to each partition's sharing), hand out what is
    missing to the least loaded eligible members, then move partitions from the most to
    the least loaded member until no move narrows the gap."""
    members = sorted(subscriptions)
    subscribers = {
        topic: [m for m in members if topic in subscriptions[m]]
        for topic, count in sorted(partition_counts.items())
        if count > 0
    }
    sharing = {
        topic: -(-len(subs) // partition_counts[topic])
        for topic, subs in subscribers.items()
        if subs
    }
    holders: dict[TopicPartition, set[str]] = {
        TopicPartition(topic, p): set() for topic in sharing for p in range(partition_counts[topic])
    }
    owned: dict[str, set[TopicPartition]] = {m: set() for m in members}
    for member in members:
        for tp in sorted(current.get(member, frozenset())):
            held = holders.get(tp)
            if (
                held is not None
                and tp.topic in subscriptions[member]
                and len(held) < sharing[tp.topic]
            ):
                held.add(member)
                owned[member].add(tp)
    _fill(holders, sharing, owned, subscriptions)
    _balance(owned, holders, subscriptions)
    return {member: frozenset(partitions) for member, partitions in owned.items()}


def _fill(
    holders: dict[TopicPartition, set[str]],
    sharing: Mapping[str, int],
    owned: dict[str, set[TopicPartition]],
    subscriptions: Mapping[str, frozenset[str]],
) -> None:
    """Bring every partition up to its sharing with the least loaded subscribers that do
    not hold it yet (ties: the smallest member id). Members with the same subscription
    share one heap of (load, member id), as in `assignors._hand_out`; a member picked for
    a partition goes back on its heap only after that partition is served, so it is not
    picked twice for it."""
    heaps: dict[frozenset[str], list[tuple[int, str]]] = {}
    for member, topics in subscriptions.items():
        heaps.setdefault(topics, []).append((len(owned[member]), member))
    for heap in heaps.values():
        heapq.heapify(heap)
    for tp, held in holders.items():
        need = sharing[tp.topic] - len(held)
        if need <= 0:
            continue
        candidates = [heap for topics, heap in heaps.items() if tp.topic in topics]
        set_aside: list[tuple[list[tuple[int, str]], tuple[int, str]]] = []
        while need and any(candidates):
            heap = min((h for h in candidates if h), key=lambda h: h[0])
            load, member = heapq.heappop(heap)
            if member not in held:
                held.add(member)
                owned[member].add(tp)
                load += 1
                need -= 1
            set_aside.append((heap, (load, member)))
        for heap, entry in set_aside:
            heapq.heappush(heap, entry)


def _balance(
    owned: dict[str, set[TopicPartition]],
    holders: dict[TopicPartition, set[str]],
    subscriptions: Mapping[str, frozenset[str]],
) -> None:
    """Move one partition at a time from a member to an eligible member holding at least
    two fewer that does not hold it already; each move strictly lowers the sum of squared
    loads, so this terminates."""
    alike = len(set(subscriptions.values())) <= 1
    while True:
        move = _alike_move(owned) if alike else _best_move(owned, holders, subscriptions)
        if move is None:
            return
        source, target, tp = move
        owned[source].remove(tp)
        owned[target].add(tp)
        holders[tp].remove(source)
        holders[tp].add(target)


def _alike_move(
    owned: dict[str, set[TopicPartition]],
) -> tuple[str, str, TopicPartition] | None:
    """When every member subscribes alike: the most loaded member (ties: smallest id)
    gives the least loaded (ties: smallest id) its largest partition the receiver lacks,
    which exists since the giver holds more."""
    if not owned:
        return None
    source = min(owned, key=lambda m: (-len(owned[m]), m))
    target = min(owned, key=lambda m: (len(owned[m]), m))
    if len(owned[source]) - len(owned[target]) <= 1:
        return None
    return source, target, max(owned[source] - owned[target])


def _best_move(
    owned: dict[str, set[TopicPartition]],
    holders: Mapping[TopicPartition, set[str]],
    subscriptions: Mapping[str, frozenset[str]],
) -> tuple[str, str, TopicPartition] | None:
    by_load = sorted(owned, key=lambda m: (-len(owned[m]), m))
    for source in by_load:
        receivers = sorted(
            (m for m in owned if len(owned[m]) + 1 < len(owned[source])),
            key=lambda m: (len(owned[m]), m),
        )
        for target in receivers:
            movable = [
                tp
                for tp in owned[source]
                if tp.topic in subscriptions[target] and target not in holders[tp]
            ]
            if movable:
                return source, target, max(movable)
    return None
