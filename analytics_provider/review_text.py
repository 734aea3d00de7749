"""What a review shows: an upstream plan, or an AML validation, as the Markdown body of an approval
request (Airflow renders it in the UI and in notifiers). Nothing here talks to Airflow or the service."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REVIEW_ROWS = 50
"""Rows of a plan a review shows by default; the total is always said."""
MAX_BODY = 64 * 1024
"""Characters of a review's body at most, whatever ``max_rows`` says (rows past it are counted,
and where they are is said); a cell shows at most :data:`MAX_CELL` of its own."""
MAX_CELL = 300
MAX_SENT = 4000
"""Characters of a "what the apply sends" cell at most (every recipient, field and title of a write;
where it goes first); a cell cut says where the whole write is."""
CUT_SENT = " ... (cut: the whole write is in the saved plan, whose digest is below)"

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
    from analytics_provider.plans.by_reference import is_reference
    from analytics_provider.plans.saved import digest

    if is_reference(saved):  # the plan stored by reference: its own digest, which the apply checks it holds
        return str(saved.get("sha256"))
    return digest(saved)


def saved_inline(upstream: Any) -> Mapping[str, Any] | None:
    """The saved plan ``upstream`` holds whole (the plan itself, or a dry run's ``saved``), whose writes
    the apply sends; None for none, or one stored by reference (its file is the apply's to read)."""
    saved = upstream.get("saved", upstream) if isinstance(upstream, Mapping) else None
    if not isinstance(saved, Mapping) or "format" not in saved:
        return None
    from analytics_provider.plans.by_reference import is_reference

    return None if is_reference(saved) else saved


def disagreement(upstream: Any) -> str | None:
    """Why a plan cannot be put to a person as it is, or None: the saved plan it holds is malformed,
    or its counts (or the dry run's around it) are not those of the writes it holds. A review decides
    whether to ask, and says how much, from a saved plan's writes; counts edited to zeros would
    otherwise let a plan that writes pass unasked."""
    saved = saved_inline(upstream)
    if saved is None:
        return None
    from analytics_provider.plans.saved import not_a_plan

    problem = not_a_plan(saved)
    if problem:
        return problem
    if upstream is not saved and _nonzero(upstream.get("counts")) != _nonzero(saved.get("counts")):
        return (f"the plan's counts {_nonzero(upstream.get('counts'))} are not its saved plan's "
                f"{_nonzero(saved.get('counts'))} (the writes the apply sends)")
    return None


def _nonzero(counts: Any) -> dict[str, Any]:
    return {k: v for k, v in counts.items() if v} if isinstance(counts, Mapping) else {}


def change_counts(plan: Mapping[str, Any]) -> dict[str, int]:
    """``{"creates", "changes", "removals"}`` of a plan's XCom (its counts are whole, its rows may be cut)."""
    counts = plan["counts"]
    return {name: sum(int(counts.get(action) or 0) for action in actions)
            for name, actions in (("creates", CREATES), ("changes", CHANGES), ("removals", REMOVALS))}


def needs_review(upstream: Mapping[str, Any]) -> bool:
    """A validation always does (a publish changes what everyone sees); a plan when it changes something:
    a saved plan held whole when it holds a write, whatever its counts say."""
    saved = saved_inline(upstream)
    return is_validation(upstream) or any(change_counts(upstream).values()) or bool(saved and saved["changes"])


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
    saved = saved_inline(upstream)
    rows = list((saved or upstream)["changes"])
    columns = COLUMNS + ("sends",) * (saved is not None)
    total = sum(int(n or 0) for n in upstream["counts"].values())
    lines = [f"**{_text(upstream.get('what') or 'plan')}**: {counts['creates']} to create, "
             f"{counts['changes']} to change, {counts['removals']} to remove.", ""]
    labels = {**(upstream.get("columns") or {}), "sends": "what the apply sends"}
    header = [str(labels.get(c, c)) for c in columns]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(columns)]
    shown, size, cut = 0, sum(len(line) + 1 for line in lines), []
    for number, row in enumerate(rows[:limit], 1):
        told = sent(row) if saved is not None else ""  # told once: the cell, and whole below when cut
        sends = _text(told)
        line = "| " + " | ".join([*(_cell(row.get(c)) for c in COLUMNS),
                                  *[_cell(told, MAX_SENT, CUT_SENT)] * (saved is not None)]) + " |"
        if size + len(line) > MAX_BODY:
            break
        lines.append(line)
        shown, size = shown + 1, size + len(line) + 1
        if len(sends) > MAX_SENT:
            cut.append((number, sends))
    lines += ["", f"Showing {shown} of {total} change(s)." if shown < total else f"All {total} change(s) shown."]
    if shown < total:
        lines.append(where_the_rest_is(upstream, total - shown))
    for number, sends in cut:  # a cell cut in the table: the whole of it below, as far as the body allows
        whole = f"Row {number}, what the apply sends, whole: {sends}"
        if size + len(whole) + 2 > MAX_BODY:
            lines += ["", f"Row {number} and the rows cut after it: what they send is in the saved plan, whole."]
            break
        lines += ["", whole]
        size += len(whole) + 2
    for name, label in (("left", "Left as they are"), ("unknown_users", "Not known to the service")):
        if upstream.get(name):
            lines.append(f"{label}: {_text(', '.join(str(v) for v in upstream[name][:limit]))}")
    digest = saved_digest(upstream)
    if digest is not None:
        lines += ["", f"Plan digest: `{digest}` (the apply refuses a plan whose content differs)."]
    return "\n".join(lines)


def sent(change: Mapping[str, Any]) -> str:
    """What a saved change's write sends, told from the write itself (not from the row's text, which
    the apply does not read): a schedule's or alert's every recipient, channel or webhook host (tokens
    masked), source, schedule, every other field it sends, and its title; a membership, an
    invitation, an attribute's value."""
    from analytics_provider.deliveries.shown import masked_fields, sends, untold

    write, action = change.get("write"), str(change.get("action"))
    if not isinstance(write, Mapping):
        return "(nothing)"
    if isinstance(write.get("membership"), Mapping):
        found = write["membership"]
        into = "to" if action == "add" else "from"
        return f"{action} user {found.get('user_id')} {into} group {found.get('group')!r}"
    if isinstance(write.get("invitation"), Mapping):
        found = write["invitation"]
        return f"invite {found.get('email')} as {found.get('role')} into groups {found.get('group_ids')}"
    if "entry" in write:
        return f"{action} {masked_fields(write['entry'])}"
    fields, kind = write.get("fields"), write.get("kind")
    named = f"{kind} {write.get('id')}" if write.get("id") is not None else f"a new {kind}"
    if not isinstance(fields, Mapping):
        return f"{action} {named}"
    if kind in ("data_schedules", "data_alerts"):  # where it goes first: a long title crowds out nothing
        also = "".join(f"; {field}" for field in untold(fields))
        return f"{action} {named}: {sends(fields, listed=None)}{also}; titled {masked_fields(fields.get('title'))!r}"
    return f"{action} {named}: {masked_fields(fields)}"


def where_the_rest_is(upstream: Mapping[str, Any], more: int) -> str:
    """Where a reviewer finds the ``more`` changes the body leaves out: the saved plan's file (a plan
    stored by reference), or the plan task's result and log."""
    saved = upstream.get("saved")
    if isinstance(saved, Mapping) and saved.get("location"):
        return (f"{more} more change(s) are in the saved plan at `{_text(saved['location'])}` "
                f"(sha256 `{_text(saved.get('sha256'))}`), which the apply task applies exactly.")
    return f"{more} more change(s) are in the plan task's result (its `saved` plan) and its log."


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
    """A value as Markdown shows it literally (no markup, entity or HTML of its own), on one line (a
    carriage return, like a line feed, would end a table's row and spill the rest out of it)."""
    text = "" if value is None else str(value)
    for char in "\\`*_[]<>|#&~":
        text = text.replace(char, "\\" + char)
    return _LINE_BREAKS.sub(" ", text)


_LINE_BREAKS = re.compile("[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")


def _cell(value: Any, limit: int = MAX_CELL, cut: str = "...") -> str:
    text = _text(value)
    return (text if len(text) <= limit else text[: limit - len(cut)] + cut) or " "
