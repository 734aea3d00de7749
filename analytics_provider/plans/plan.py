"""A plan as data: each change, what it was and what it becomes, as a table for the log and a
summary for XCom. Nothing here talks to the service."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar

LOGGED_ROWS = 200
"""Changes a plan's table shows in the log; the rest are counted."""
XCOM_ROWS = 1000
"""Changes a plan's XCom lists; the rest are counted (the counts are always whole)."""
REFUSAL_ROWS = 20
"""Removals a refusal names; the rest are counted."""

W = TypeVar("W")


class Action(str, Enum):
    """What a change does; its value is how the table and XCom spell it. The members are in the
    order a plan's counts list them."""

    CREATE = "create"
    INVITE = "invite"
    ADD = "add"
    CHANGE = "change"
    REMOVE = "remove"


@dataclass(frozen=True)
class Change(Generic[W]):
    """One write of a plan: ``action`` on ``target`` for ``subject``, shown as ``before`` → ``after``.

    ``write`` is what the apply sends, typed by the feature that plans it (a
    :class:`~analytics_provider.plans.writes.Write`, an upsert entry, a membership); it is not shown.
    """

    action: Action
    subject: str
    target: str
    before: str = ""
    after: str = ""
    write: W | None = field(default=None, compare=False)

    @property
    def sent(self) -> W:
        """The write, for the apply (a change planned without one has nothing to send)."""
        if self.write is None:
            raise ValueError(f"{self.action.value} {self.target} for {self.subject}: planned without a write")
        return self.write

    def row(self) -> dict[str, str]:
        return {"action": self.action.value, "subject": self.subject, "target": self.target,
                "before": self.before, "after": self.after}


@dataclass
class Plan:
    """The changes that make the service hold what the input says, and what is not changed.

    ``subject_label``/``target_label`` name the table's columns (``user``/``attribute``).
    """

    what: str
    subject_label: str
    target_label: str
    changes: list[Change[Any]] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    """What the service holds that the input no longer names, kept (``delete_missing`` or
    ``prune`` off): shown, never written."""
    scope: str = ""
    """What the plan may remove, for messages: ``scope 'sales'``, ``attributes region``."""
    declared: int | None = None
    """How many things of the scope the input declares (rows' values, files' objects)."""
    kept: int | None = None
    """How many things of the scope the service holds that the plan keeps (changed or not)."""
    conflicts: list[tuple[str, list[str]]] = field(default_factory=list)
    """Keys the service has more than one resource for (a key, the resources): shown; the apply
    refuses until one is left."""

    def of(self, action: Action) -> list[Change[Any]]:
        return [c for c in self.changes if c.action == action]

    def counts(self) -> dict[str, int]:
        counted = Counter(c.action for c in self.changes)
        return {action.value: counted.get(action, 0) for action in Action}

    @property
    def is_empty(self) -> bool:
        return not self.changes

    def refusal(self, max_deletes: int | None, allow_delete_all: bool,
                flags: tuple[str, str] = ("allow_delete_all=True", "max_deletes")) -> str | None:
        """Why the plan must not be applied, naming what it would remove; None when it may.
        Refused: keys carried by several resources; more removals than ``max_deletes``; unless
        ``allow_delete_all``, removals when the input declares nothing of the scope, or when
        nothing of it is kept. ``flags``: how the caller spells the two settings."""
        if self.conflicts:
            named = "; ".join(f"{key}: {' and '.join(held)}" for key, held in self.conflicts[:REFUSAL_ROWS])
            return (f"{self.what}: {len(self.conflicts)} key(s) carried by more than one resource: {named}; delete "
                    "all but one in the service (or take the marker out of their titles), then run again; nothing "
                    "was written")
        removals = self.of(Action.REMOVE)
        count = len(removals)
        scope = f" of {self.scope}" if self.scope else ""
        if not removals:
            return None
        if max_deletes is not None and count > max_deletes:
            reason = f"the plan deletes {count}, more than max_deletes ({max_deletes})"
        elif allow_delete_all:
            return None
        elif self.declared == 0:
            reason = f"the input declares nothing{scope} and the plan deletes {count}"
        elif self.kept == 0:
            reason = f"the plan deletes everything{scope} ({count}, none kept)"
        else:
            return None
        named = ", ".join(f"{c.subject}: {c.target}" for c in removals[:REFUSAL_ROWS])
        more = f" and {count - REFUSAL_ROWS} more" if count > REFUSAL_ROWS else ""
        return (f"{self.what}: {reason}: {named}{more}; nothing was written. If that is meant: {flags[0]} (or a "
                f"higher {flags[1]})")

    def summary(self) -> str:
        parts = [f"{n} to {action}" for action, n in self.counts().items() if n]
        text = f"{self.what}: {', '.join(parts) if parts else 'nothing to change'}"
        return "".join([text, *(f"; {note}" for note in self.summary_notes())])

    def summary_notes(self) -> list[str]:
        """What the summary adds after the counts (a feature's plan adds its own first)."""
        notes = [f"{len(self.left)} left as they are"] if self.left else []
        if self.conflicts:
            notes.append(f"{len(self.conflicts)} key(s) carried by more than one resource")
        return notes

    def table(self, limit: int = LOGGED_ROWS) -> str:
        """The summary, then the first ``limit`` changes as aligned columns, then the notes."""
        lines = [self.summary()]
        if self.changes:
            header = ("action", self.subject_label, self.target_label, "before", "after")
            rows = [tuple(c.row().values()) for c in self.changes[:limit]]
            lines += _aligned([header, *rows])
            if len(self.changes) > limit:
                lines.append(f"... and {len(self.changes) - limit} more change(s)")
        return "\n".join(lines + self.table_notes(limit))

    def table_notes(self, limit: int) -> list[str]:
        """The table's lines after the changes (a feature's plan adds its own first)."""
        lines = [f"Conflict: {key} is carried by {' and '.join(held)}: the apply refuses until one is left"
                 for key, held in self.conflicts[:limit]]
        if self.left:
            lines.append(f"Left as they are (no longer in the input): {', '.join(self.left[:limit])}"
                         + (f" and {len(self.left) - limit} more" if len(self.left) > limit else ""))
        return lines

    def to_xcom(self, limit: int = XCOM_ROWS) -> dict[str, Any]:
        """JSON for XCom: counts, the first ``limit`` changes, what is left and what conflicts."""
        return {
            "what": self.what,
            "counts": self.counts(),
            "changes": [c.row() for c in self.changes[:limit]],
            "changes_left_out": max(0, len(self.changes) - limit),
            "left": list(self.left[:limit]),
            "conflicts": [{"key": key, "resources": held} for key, held in self.conflicts[:limit]],
        }


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
