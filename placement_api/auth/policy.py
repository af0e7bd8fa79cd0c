"""Policy enforcement: may this caller perform this action?

oslo.policy over the defaults in ``placement_api.auth.policies`` and the
operator's policy file (and that file only), its decisions remembered until
the file changes. docs/keystone.md, "Policy and token scope", says how.
"""

from __future__ import annotations

import copy
import inspect
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from oslo_config import cfg
from oslo_policy import _checks
from oslo_policy import policy as oslo_policy

from placement_api import errors
from placement_api.auth import policies
from placement_api.auth.context import RequestContext

LOG = logging.getLogger(__name__)

_GROUP = "oslo_policy"
# Decisions a Policy remembers (rules x callers x targets) before starting afresh.
DECISIONS_REMEMBERED = 4096


class _PolicyFileOnlyEnforcer(oslo_policy.Enforcer):
    """An enforcer that never searches configuration directories.

    oslo.policy looks its policy file (and policy.d directories) up next to
    the config files and in ~ and /etc; here the file is an absolute path
    given by our settings, or there is none.
    """

    def _get_policy_path(self, path: str) -> str:
        candidate = Path(path)
        if candidate.is_absolute() and candidate.is_file():
            return str(candidate)
        raise cfg.ConfigFilesNotFoundError([path])


class Policy:
    def __init__(
        self,
        *,
        policy_file: Path | None,
        enforce_new_defaults: bool,
        enforce_scope: bool = True,
        remember_decisions: bool = True,
    ) -> None:
        if policy_file is not None and not policy_file.is_file():
            raise FileNotFoundError(f"policy file {policy_file} does not exist")
        conf = cfg.ConfigOpts()
        self._enforcer = _PolicyFileOnlyEnforcer(
            conf, policy_file=str(policy_file.resolve()) if policy_file else None
        )
        conf.set_override("enforce_new_defaults", enforce_new_defaults, group=_GROUP)
        # No policy.d: the one file is the whole override set.
        conf.set_override("policy_dirs", [], group=_GROUP)
        # Every default changed with secure RBAC; one warning per rule at
        # start-up says nothing an operator can act on.
        self._enforcer.suppress_default_change_warnings = True
        self._enforcer.register_defaults(_scoped(policies.all_rules(), enforce_scope=enforce_scope))
        # Parse the file now so a malformed one stops start-up, not a request.
        try:
            self._enforcer.load_rules()
        except ValueError as exc:
            raise ValueError(f"policy file {policy_file} is not valid YAML or JSON: {exc}") from exc

        self._policy_file = policy_file.resolve() if policy_file else None
        self._file_seen = _file_state(self._policy_file)
        self._decisions: dict[tuple[object, ...], bool] = {}
        self._remember = remember_decisions
        self._rules_are_pure = remember_decisions and _pure(self._enforcer.rules)

    def authorize(
        self, rule: str, context: RequestContext, target: Mapping[str, object] | None = None
    ) -> None:
        """Raise ``Forbidden`` unless ``context`` may perform ``rule`` on ``target``.

        Without a target the action is on the caller's own project and user.
        An unregistered rule name is a programming error and raises
        ``oslo_policy.policy.PolicyNotRegistered``.
        """
        if target is None:
            target = {"project_id": context.project_id, "user_id": context.user_id}
        self._reload_if_changed()
        key = (rule, context.policy_identity(), *target.items())
        try:
            allowed = self._decisions.get(key)
        except TypeError:  # a target value that cannot be a key: decided afresh
            key, allowed = (), None
        if allowed is None:
            # Without do_raise a scope mismatch is a plain denial, as upstream maps it.
            allowed = bool(
                self._enforcer.authorize(rule, dict(target), context.policy_credentials())
            )
            if key and self._rules_are_pure:
                if len(self._decisions) >= DECISIONS_REMEMBERED:
                    self._decisions.clear()
                self._decisions[key] = allowed
        if not allowed:
            LOG.debug("policy denied %s to %s", rule, context.policy_credentials())
            raise errors.Forbidden(f"Policy does not allow {rule} to be performed.")

    def _reload_if_changed(self) -> None:
        """Re-read the policy file when it changed, and forget every decision.

        The file's modification time and size are compared here: oslo.policy's
        own check walks every registered rule on each call.
        """
        state = _file_state(self._policy_file)
        if state == self._file_seen:
            return
        self._enforcer.load_rules()
        self._file_seen = state
        self._decisions.clear()
        self._rules_are_pure = self._remember and _pure(self._enforcer.rules)


def _file_state(path: Path | None) -> tuple[int, int] | None:
    if path is None:
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


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
    changed = f"oslo.policy {version} changed what policy._pure relies on"
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


def _pure(rules: Mapping[str, _checks.BaseCheck]) -> bool:
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


@dataclass(frozen=True)
class EffectiveRule:
    name: str
    check: str
    default: str
    description: str
    from_file: bool


def effective_rules(policy: Policy) -> list[EffectiveRule]:
    """Every registered rule and the check it is enforced with now (the policy
    file's, or the default, OR'd with its legacy check in legacy mode)."""
    enforcer = policy._enforcer
    found = []
    for name, default in enforcer.registered_rules.items():
        check = enforcer.rules.get(name)
        found.append(
            EffectiveRule(
                name=name,
                check=str(check) if check is not None else default.check_str,
                default=default.check_str,
                description=default.description or "",
                from_file=name in enforcer.file_rules,
            )
        )
    return found


def _scoped(
    rules: Iterable[oslo_policy.RuleDefault], *, enforce_scope: bool
) -> list[oslo_policy.RuleDefault]:
    """The rules, with their scope types dropped when scope is not enforced.

    oslo.policy always checks a rule's scope types, so not enforcing scope
    (oslo.policy's former ``enforce_scope = False``) registers them without.
    """
    if enforce_scope:
        return list(rules)
    unscoped = []
    for rule in rules:
        legacy = copy.copy(rule)
        legacy.scope_types = None
        unscoped.append(legacy)
    return unscoped
