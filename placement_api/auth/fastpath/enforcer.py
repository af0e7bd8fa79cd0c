"""An oslo.policy enforcer that reads one policy file, given by absolute path."""

from __future__ import annotations

from pathlib import Path

from oslo_config import cfg
from oslo_policy import policy as oslo_policy


class PolicyFileOnlyEnforcer(oslo_policy.Enforcer):
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
