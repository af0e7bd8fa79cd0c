"""Policy enforcement: may this caller perform this action?

oslo.policy over the defaults in ``placement_api.auth.policies`` and the
operator's policy file (and that file only), its decisions remembered until
the file changes. docs/keystone.md, "Policy and token scope", says how.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from oslo_config import cfg
from oslo_policy import policy as oslo_policy

from placement_api import errors
from placement_api.auth import policies
from placement_api.auth.context import RequestContext
from placement_api.auth.fastpath.decision_memory import rules_are_pure
from placement_api.auth.fastpath.enforcer import PolicyFileOnlyEnforcer

LOG = logging.getLogger(__name__)

_GROUP = "oslo_policy"
# Decisions a Policy remembers (rules x callers x targets) before starting afresh.
DECISIONS_REMEMBERED = 4096


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
        self._enforcer = PolicyFileOnlyEnforcer(
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
        self._rules_are_pure = remember_decisions and rules_are_pure(self._enforcer.rules)

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
        self._rules_are_pure = self._remember and rules_are_pure(self._enforcer.rules)


def _file_state(path: Path | None) -> tuple[int, int] | None:
    if path is None:
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


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
