"""Matching an aggregate metadata value against an extra spec requirement.

A requirement is either a plain value (string equality) or an operator and
its operand: ``= N`` (at least N), ``== N``, ``!= N``, ``>= N``, ``<= N``
(numbers), ``s== x``, ``s!= x``, ``s< x``, ``s<= x``, ``s> x``, ``s>= x``
(strings), ``<in> x`` (x is a substring), ``<or> a <or> b`` (any of).
A value that is not a number never satisfies a numeric operator.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

_NUMERIC: dict[str, Callable[[float, float], bool]] = {
    "=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "<=": operator.le,
}
_STRING: dict[str, Callable[[str, str], bool]] = {
    "s==": operator.eq,
    "s!=": operator.ne,
    "s<": operator.lt,
    "s<=": operator.le,
    "s>": operator.gt,
    "s>=": operator.ge,
}


def satisfies(value: str, requirement: str) -> bool:
    words = requirement.split()
    if not words:
        return value == requirement
    op, operand = words[0], " ".join(words[1:])
    if op == "<or>":
        alternatives = [part.strip() for part in requirement.split("<or>") if part.strip()]
        return value in alternatives
    if op == "<in>":
        return operand in value
    if op in _STRING:
        return _STRING[op](value, operand)
    if op in _NUMERIC:
        try:
            return _NUMERIC[op](float(value), float(operand))
        except ValueError:
            return False
    return value == requirement
