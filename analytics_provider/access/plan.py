"""An access sync's plan: the shared plan (:mod:`analytics_provider.plans.plan`) with the users the
rows name that the service does not know, and how many users were read."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from analytics_provider.plans.plan import LOGGED_ROWS, XCOM_ROWS, Plan

XCOM_UNKNOWN_USERS = 100
"""Unknown users a plan's XCom lists; the rest are counted."""


@dataclass
class AccessPlan(Plan):
    """``unknown`` lists the rows' users the service does not know (those named by e-mail may be
    planned for an invitation: changes with action ``invite``); ``users_read`` counts the
    service's users read."""

    unknown: list[str] = field(default_factory=list)
    users_read: int = 0

    def summary_notes(self) -> list[str]:
        unknown = [f"{len(self.unknown)} user(s) the service does not know"] if self.unknown else []
        return unknown + super().summary_notes()

    def table_notes(self, limit: int = LOGGED_ROWS) -> list[str]:
        lines = []
        if self.unknown:
            more = f" and {len(self.unknown) - limit} more" if len(self.unknown) > limit else ""
            lines.append(f"Not known to the service: {', '.join(self.unknown[:limit])}{more}")
        return lines + super().table_notes(limit)

    def to_xcom(self, limit: int = XCOM_ROWS) -> dict[str, Any]:
        """The shared plan's XCom, with the first 100 unknown users (the rest counted) and the
        users read (in the order the keys have always had)."""
        shared = super().to_xcom(limit)
        left, conflicts = shared.pop("left"), shared.pop("conflicts")
        return {
            **shared,
            "unknown_users": list(self.unknown[:XCOM_UNKNOWN_USERS]),
            "unknown_users_left_out": max(0, len(self.unknown) - XCOM_UNKNOWN_USERS),
            "left": left,
            "conflicts": conflicts,
            "users_read": self.users_read,
        }


def shown_values(values: Iterable[str] | None) -> str:
    """Values as the table shows them: sorted, comma-separated; ``(none)`` for none."""
    if values is None:
        return "(none)"
    return ", ".join(sorted(values)) or "(none)"
