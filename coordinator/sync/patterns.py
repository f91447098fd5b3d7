"""Comma-separated regex lists, the shape of every mirror sync filter config.

Kafka splits LIST configs on every comma, which breaks regexes such as ``p{1,3}``; here a
comma separates items only outside brackets, braces and parentheses and when not escaped,
so every list the spec shows splits the same way and quantifiers survive. Patterns match
a whole name (``fullmatch``): ``app-.*`` must not select ``my-app-1``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_OPENERS = {"(": ")", "{": "}"}


class SyncFilterError(ValueError):
    """A mirror sync filter config that cannot be parsed; the message names config and item."""


def split_list(value: str) -> list[str]:
    """Items of a comma-separated list, stripped, with empty items dropped."""
    items: list[str] = []
    current: list[str] = []
    closers: list[str] = []
    in_class = False
    escaped = False
    for char in value:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char in _OPENERS:
            closers.append(_OPENERS[char])
        elif closers and char == closers[-1]:
            closers.pop()
        elif char == "," and not closers:
            items.append("".join(current))
            current = []
            continue
        current.append(char)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def compile_full_match(pattern: str, *, config: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise SyncFilterError(f"{config}: invalid regex {pattern!r}: {error}") from None


@dataclass(frozen=True)
class PatternList:
    """Names selected by any of a list of regexes.

    The patterns are also joined into one alternation so a name costs one regex call; a
    pattern with global inline flags (``(?i)...``) cannot be joined, and then each pattern
    is tried in turn.
    """

    patterns: tuple[str, ...]
    _compiled: tuple[re.Pattern[str], ...]
    _combined: re.Pattern[str] | None

    @classmethod
    def of(cls, patterns: Iterable[str], *, config: str) -> PatternList:
        unique = tuple(dict.fromkeys(patterns))
        compiled = tuple(compile_full_match(pattern, config=config) for pattern in unique)
        try:
            combined = re.compile("|".join(f"(?:{p})" for p in unique)) if unique else None
        except re.error:
            combined = None
        return cls(unique, compiled, combined)

    @classmethod
    def parse(cls, value: str, *, config: str) -> PatternList:
        return cls.of(split_list(value), config=config)

    def matches(self, name: str) -> bool:
        if self._combined is not None:
            return self._combined.fullmatch(name) is not None
        return any(pattern.fullmatch(name) for pattern in self._compiled)
