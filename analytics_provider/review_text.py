"""What a review shows: an upstream plan, or an AML validation, as the Markdown body of an approval
request (Airflow renders it in the UI and in notifiers). Nothing here talks to Airflow or the service."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REVIEW_ROWS = 50
"""Rows of a plan a review shows by default; the total is always said."""

CREATES, CHANGES, REMOVALS = ("create", "invite", "add"), ("change",), ("remove",)
COLUMNS = ("action", "subject", "target", "before", "after")


def is_validation(upstream: Any) -> bool:
    """Whether ``upstream`` is an AML validation's result (``AnalyticsValidateAmlProjectOperator``)."""
    return isinstance(upstream, Mapping) and "commit" in upstream and "branch" in upstream


def is_plan(upstream: Any) -> bool:
    """Whether ``upstream`` is a plan's XCom (an access sync's, the deliveries', a saved plan)."""
    return isinstance(upstream, Mapping) and isinstance(upstream.get("counts"), Mapping) \
        and isinstance(upstream.get("changes"), list)


def saved_digest(upstream: Any) -> str | None:
    """The digest of the saved plan ``upstream`` holds (a dry run's result, or the plan itself), or None."""
    saved = upstream.get("saved", upstream) if isinstance(upstream, Mapping) else None
    if not isinstance(saved, Mapping) or "format" not in saved:
        return None
    from analytics_provider.plans.saved import digest

    return digest(saved)


def change_counts(plan: Mapping[str, Any]) -> dict[str, int]:
    """``{"creates", "changes", "removals"}`` of a plan's XCom (its counts are whole, its rows may be cut)."""
    counts = plan["counts"]
    return {name: sum(int(counts.get(action) or 0) for action in actions)
            for name, actions in (("creates", CREATES), ("changes", CHANGES), ("removals", REMOVALS))}


def needs_review(upstream: Mapping[str, Any]) -> bool:
    """A validation always does (a publish changes what everyone sees); a plan when it changes something."""
    return is_validation(upstream) or any(change_counts(upstream).values())


def subject(upstream: Mapping[str, Any]) -> str:
    if is_validation(upstream):
        return f"Publish the AML project: branch {upstream['branch']} at {str(upstream['commit'])[:12]}?"
    counts = change_counts(upstream)
    return (f"Apply {upstream.get('what') or 'the plan'}: {counts['creates']} to create, "
            f"{counts['changes']} to change, {counts['removals']} to remove?")


def body(upstream: Mapping[str, Any], limit: int = REVIEW_ROWS) -> str:
    """The request's Markdown: a validation's project, branch, commit and diagnostics; or a plan's
    counts and its first ``limit`` rows with the total."""
    if is_validation(upstream):
        return _validation_body(upstream)
    counts = change_counts(upstream)
    rows = list(upstream["changes"])
    total = sum(int(n or 0) for n in upstream["counts"].values())
    lines = [f"**{_text(upstream.get('what') or 'plan')}**: {counts['creates']} to create, "
             f"{counts['changes']} to change, {counts['removals']} to remove.", ""]
    labels = upstream.get("columns") or {}
    header = [str(labels.get(c, c)) for c in COLUMNS]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(row.get(c)) for c in COLUMNS) + " |" for row in rows[:limit]]
    shown = min(limit, len(rows))
    lines += ["", f"Showing {shown} of {total} change(s)." if shown < total else f"All {total} change(s) shown."]
    for name, label in (("left", "Left as they are"), ("unknown_users", "Not known to the service")):
        if upstream.get(name):
            lines.append(f"{label}: {_text(', '.join(str(v) for v in upstream[name][:limit]))}")
    digest = saved_digest(upstream)
    if digest is not None:
        lines += ["", f"Plan digest: `{digest}` (the apply refuses a plan whose content differs)."]
    return "\n".join(lines)


def _validation_body(validated: Mapping[str, Any]) -> str:
    diagnostics = [str(d) for d in validated.get("diagnostics") or []]
    lines = ["**Publish the AML project to production**", "",
             f"- project: {_text(validated.get('project') or '(not named)')}",
             f"- branch: `{_text(validated['branch'])}`",
             f"- commit: `{_text(validated['commit'])}`",
             f"- validation job: {_text(validated.get('job_id'))}", "",
             f"Diagnostics: {len(diagnostics)}" + ("" if diagnostics else " (none)")]
    lines += [f"- {_text(d)}" for d in diagnostics[:REVIEW_ROWS]]
    if len(diagnostics) > REVIEW_ROWS:
        lines.append(f"- ... and {len(diagnostics) - REVIEW_ROWS} more")
    return "\n".join(lines)


def _text(value: Any) -> str:
    """A value as Markdown shows it literally (no markup or HTML of its own)."""
    text = "" if value is None else str(value)
    for char in "\\`*_[]<>|#":
        text = text.replace(char, "\\" + char)
    return text.replace("\n", " ")


def _cell(value: Any) -> str:
    return _text(value) or " "
