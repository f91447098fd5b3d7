"""Drill assertions: ``<operand> <op> <operand>`` over the results a run recorded.

An operand is a literal (YAML: integer, float, true/false, null, a quoted string, a
flow list ``[a, b]``) or, for any other bare word, a dotted path into the results
(``duplicates.billing``, ``stop_offsets.orders-0``). Operators: ``== != < <= > >= in``
and ``not in``. A path that names nothing fails the assertion rather than raising, so a
report always lists every check.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from mirrorsim.drills.scenario import ScenarioError

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
    "not in": lambda a, b: a not in b,
    "in": lambda a, b: a in b,
}
_SPLIT = re.compile(r"^\s*(.+?)\s+(==|!=|<=|>=|<|>|not in|in)\s+(.+?)\s*$")


class Missing:
    """A path that the results do not contain."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"<missing {self.path}>"


@dataclass(frozen=True, slots=True)
class Assertion:
    text: str
    left: str
    op: str
    right: str


@dataclass(frozen=True, slots=True)
class AssertionOutcome:
    text: str
    passed: bool
    left: Any
    right: Any

    def to_dict(self) -> dict[str, Any]:
        return {
            "assertion": self.text,
            "passed": self.passed,
            "left": repr(self.left) if isinstance(self.left, Missing) else self.left,
            "right": repr(self.right) if isinstance(self.right, Missing) else self.right,
        }


def parse_assertion(text: str) -> Assertion:
    match = _SPLIT.match(text)
    if match is None:
        raise ScenarioError("expected '<operand> <op> <operand>'")
    left, op, right = match.groups()
    return Assertion(text, left, op, right)


def evaluate(assertion: Assertion, results: Mapping[str, Any]) -> AssertionOutcome:
    left = _operand(assertion.left, results)
    right = _operand(assertion.right, results)
    if isinstance(left, Missing) or isinstance(right, Missing):
        return AssertionOutcome(assertion.text, False, left, right)
    try:
        passed = bool(_OPERATORS[assertion.op](left, right))
    except TypeError:
        passed = False
    return AssertionOutcome(assertion.text, passed, left, right)


def _operand(text: str, results: Mapping[str, Any]) -> Any:
    if text[0] in "\"'[{":
        return yaml.safe_load(text)
    literal = yaml.safe_load(text)
    if isinstance(literal, str):
        return lookup(results, text)
    return literal


def lookup(results: Mapping[str, Any], path: str) -> Any:
    value: Any = results
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return Missing(path)
    return value
