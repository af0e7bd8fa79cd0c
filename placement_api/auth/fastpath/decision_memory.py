"""Which policy decisions may be remembered: those of rules whose check trees
depend on nothing but the credentials and the target. Reads oslo.policy's
private check classes, so it is fenced here and checked at start-up."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from importlib import metadata

from oslo_policy import _checks

# The checks whose verdict depends on nothing but the credentials and target.
# (Looked up softly: one gone turns the memory off, see decision_memory_gaps.)
_PURE_CHECKS = tuple(
    getattr(_checks, name)
    for name in (
        *("TrueCheck", "FalseCheck", "NotCheck", "AndCheck", "OrCheck"),
        *("RuleCheck", "RoleCheck", "GenericCheck"),
    )
    if hasattr(_checks, name)
)


def decision_memory_gaps() -> list[str]:
    """What the decision memory reads of oslo.policy's check trees, checked at
    start-up: one line per change, naming the library."""
    version = metadata.version("oslo.policy")
    changed = f"oslo.policy {version} changed what rules_are_pure relies on"
    gaps = [
        f"{changed}: oslo_policy._checks.{name} is gone"
        for name in ("TrueCheck", "FalseCheck", "NotCheck", "AndCheck", "OrCheck", "RuleCheck")
        if not hasattr(_checks, name)
    ]
    if gaps:
        return gaps
    if "self.rule = rule" not in _source(_checks.NotCheck.__init__):
        gaps.append(f"{changed}: NotCheck no longer keeps its operand as .rule")
    for combined in (_checks.AndCheck, _checks.OrCheck):
        if "self.rules = list(rules)" not in _source(combined.__init__):
            gaps.append(f"{changed}: {combined.__name__} no longer keeps its operands as .rules")
    return gaps


def _source(function: object) -> str:
    try:
        return inspect.getsource(function)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return ""


def rules_are_pure(rules: Mapping[str, _checks.BaseCheck]) -> bool:
    """Every rule's check tree holds only ``_PURE_CHECKS``."""
    pending: list[_checks.BaseCheck] = list(rules.values())
    while pending:
        check = pending.pop()
        if type(check) not in _PURE_CHECKS:
            return False
        pending.extend(getattr(check, "rules", ()))
        if isinstance(check, _checks.NotCheck):
            pending.append(check.rule)
    return True
