"""Replica placement and its validation, as pure functions over broker ids.

Placement follows Kafka's rack-unaware assignment: a start index and a growing shift
spread leaders and followers evenly, so partition p of a topic on brokers [1, 2, 3]
gets leader brokers[(start + p) % n].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mirrorsim.protocol.errors import ErrorCode, KafkaError


def assign_replicas(
    brokers: Sequence[int],
    num_partitions: int,
    replication_factor: int,
    *,
    first_partition: int = 0,
    start_index: int = 0,
) -> dict[int, tuple[int, ...]]:
    """Replicas for partitions ``first_partition .. first_partition + num_partitions - 1``."""
    ids = sorted(brokers)
    n = len(ids)
    if replication_factor > n:
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): The target "
            f"replication factor of {replication_factor} cannot be reached because only "
            f"{n} broker(s) are registered.",
        )
    result: dict[int, tuple[int, ...]] = {}
    for p in range(first_partition, first_partition + num_partitions):
        first = (start_index + p) % n
        shift = start_index + p // n
        followers = (
            ids[(first + 1 + (shift + j) % (n - 1)) % n] for j in range(replication_factor - 1)
        )
        result[p] = (ids[first], *followers)
    return result


def validate_manual_assignment(
    assignment: Mapping[int, Sequence[int]],
    known_brokers: Sequence[int],
    *,
    first_partition: int = 0,
) -> dict[int, tuple[int, ...]]:
    """Check a client-given assignment the way Kafka does; raise INVALID_REPLICA_ASSIGNMENT."""
    expected = list(range(first_partition, first_partition + len(assignment)))
    if sorted(assignment) != expected:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Partitions must be numbered consecutively starting at "
            f"{first_partition}; got {sorted(assignment)}",
        )
    sizes = {len(replicas) for replicas in assignment.values()}
    if len(sizes) != 1 or 0 in sizes:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "All partitions must have the same, non-zero number of replicas",
        )
    known = set(known_brokers)
    for partition, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate brokers not allowed in replica assignment: {list(replicas)} "
                f"for partition id {partition}.",
            )
        unknown = [b for b in replicas if b not in known]
        if unknown:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker(s) {unknown} that are not "
                "registered.",
            )
    return {p: tuple(r) for p, r in assignment.items()}
