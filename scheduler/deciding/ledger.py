"""Consumers this scheduler placed in a server group, and where.

Placement has no notion of server groups, so the scheduler remembers the
members it placed (until they are released through it). Callers that keep
group membership themselves pass ``hints.group.members``; those consumers are
located through their allocations in Placement, which also covers members
placed by other scheduler processes or before a restart.
"""

from __future__ import annotations


class GroupLedger:
    def __init__(self) -> None:
        self._group_of: dict[str, str] = {}
        self._members: dict[str, dict[str, str]] = {}

    def record(self, group: str, consumer: str, host: str) -> None:
        self._group_of[consumer] = group
        self._members.setdefault(group, {})[consumer] = host

    def forget(self, consumer: str) -> None:
        group = self._group_of.pop(consumer, None)
        if group is not None:
            members = self._members[group]
            members.pop(consumer, None)
            if not members:
                del self._members[group]

    def members(self, group: str) -> dict[str, str]:
        """consumer -> host, for the members placed here."""
        return dict(self._members.get(group, {}))
