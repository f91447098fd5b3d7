"""Delta debugging (Zeller's ddmin) over a schedule's steps.

``fails`` re-runs a candidate (the same seed's steps, a subset of them, on fresh names)
and says whether it still violates the invariant being chased. The result is 1-minimal
as far as the budget allows: removing any single step of it makes the violation go
away. A step whose premise a removal took away (a remove of a topic no longer mirrored)
is refused or skipped by the product, so any subset is a runnable schedule.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


async def ddmin(
    items: Sequence[T], fails: Callable[[list[T]], Awaitable[bool]], budget: int = 60
) -> list[T]:
    """A small sub-sequence of ``items`` (order kept) for which ``fails`` holds; at most
    ``budget`` calls of ``fails``."""
    current = list(items)
    calls = 0
    granularity = 2
    while len(current) >= 2 and calls < budget:
        chunks = _split(current, granularity)
        reduced = False
        candidates = chunks + [_without(chunks, i) for i in range(len(chunks))]
        for index, candidate in enumerate(candidates):
            if calls >= budget or not candidate or len(candidate) == len(current):
                continue
            calls += 1
            if await fails(candidate):
                current = candidate
                granularity = 2 if index < len(chunks) else max(granularity - 1, 2)
                reduced = True
                break
        if not reduced:
            if granularity >= len(current):
                break
            granularity = min(len(current), granularity * 2)
    return current


def _split(items: list[T], parts: int) -> list[list[T]]:
    size, extra = divmod(len(items), parts)
    chunks, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        chunks.append(items[start:end])
        start = end
    return [c for c in chunks if c]


def _without(chunks: list[list[T]], index: int) -> list[T]:
    return [item for i, chunk in enumerate(chunks) if i != index for item in chunk]
