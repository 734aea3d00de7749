"""The review of a saved plan decides and shows from its writes (issue 44, attacks after the first fixes):
a plan whose ``counts`` were edited to zeros while its write sends to an outside address was approved
unasked and applied; a row's text edited apart from its write showed the reviewer the old recipients.
(An operator: this file runs once per Python, beside the operators' other tests.)"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from analytics_provider import review_text
from analytics_provider.deliveries.check import check
from analytics_provider.deliveries.files import load
from analytics_provider.deliveries.plan import plan_deliveries
from analytics_provider.deliveries.saved import apply_saved_deliveries, save_deliveries
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.plans.saved import SavedPlanError, digest

from .test_deliveries import write
from .test_plan_files_and_secrets import ONE, hook

__all__ = ["hook"]  # the fixture, shared

OUTSIDE = "exfil@outside.example"


def saved_then_edited(hook: Any, tmp_path: Any, *, zero_counts: bool) -> dict[str, Any]:
    """The saved plan of one create to ann@example.com, its write edited to send to :data:`OUTSIDE`
    (its row left as it was), its own sha256 recomputed as whoever edits it can."""
    write(tmp_path / "deliveries", "sales.yml", ONE)
    declared, found = check(load(tmp_path / "deliveries"))
    assert found == []
    seen: dict[Any, Any] = {}
    saved = save_deliveries(hook, plan_deliveries(hook, declared, scope="sales", seen=seen), seen, scope="sales",
                            prune=False)
    edited = copy.deepcopy(saved)
    edited["changes"][0]["write"]["fields"]["dest"]["recipients"] = [OUTSIDE]
    if zero_counts:
        edited["counts"] = dict.fromkeys(edited["counts"], 0)
    edited.pop("sha256")
    return {**edited, "sha256": digest(edited)}


def test_a_plan_whose_counts_say_nothing_while_it_writes_is_refused_not_approved_unasked(
        tmp_path, hook, analytics_emulator) -> None:
    """Before: the review returned ``{"responded_by_user": None, "reviewed": False}`` ("changes
    nothing") and the apply created the schedule to the outside address."""
    from analytics_provider.operators.review import _MISSING, AnalyticsReviewPlanOperator

    edited = saved_then_edited(hook, tmp_path, zero_counts=True)
    assert review_text.needs_review(edited)  # decided by its write, whatever its counts say
    assert "counts.create 0, but 1 such change(s)" in str(review_text.disagreement(edited))
    assert review_text.disagreement({"counts": {"create": 0}, "changes": [], "saved": {
        **edited, "counts": {**edited["counts"], "create": 1}}}) is not None  # a dry run's counts, apart
    if _MISSING is None:
        review = AnalyticsReviewPlanOperator(task_id="review", plan=edited)
        with pytest.raises(AnalyticsParameterError, match=r"review: plan must be a plan whose counts .*"
                                                          r"counts\.create 0, but 1 such change"):
            review.execute({})
    with pytest.raises(SavedPlanError, match=r"counts\.create 0, but 1 such change"):
        apply_saved_deliveries(hook, edited, "apply")
    assert [s for s in hook.list_data_schedules() if OUTSIDE in str(s)] == []


def test_the_review_shows_what_each_write_sends_not_the_rows_text(tmp_path, hook, analytics_emulator) -> None:
    """Before: the body named ann@example.com (the row) and not the outside address the write sends."""
    edited = saved_then_edited(hook, tmp_path, zero_counts=False)
    assert review_text.disagreement(edited) is None
    body = review_text.body(edited)
    (row,) = [line for line in body.splitlines() if line.startswith("| create ")]
    assert row.split(" | ")[-1] == (r"create a new data\_schedules: to e-mail exfil@outside.example; from dashboard 1; "
                                    "every '0 8 \\* \\* 1'; dest.title=\"Weekly sales {{$today}}\"; "
                                    r"titled 'Weekly sales \[managed: sales/weekly-sales\]' |")
    assert "| what the apply sends |" in body
    dry_run = {"what": "deliveries", "counts": edited["counts"], "changes": edited["changes"][:0], "saved": edited}
    assert OUTSIDE in review_text.body(dry_run)  # a dry run's result: its saved plan's writes are shown


EDITS = {  # what a hand edit of a saved create can change, and what the review must then show
    "a filter": (lambda f: f.update(dynamic_filter_presets=[{"field": "region", "values": ["EMEA"]}]), "EMEA"),
    "the destination's title": (lambda f: f["dest"].update(title="Board pack"), "Board pack"),
    "the destination's options": (lambda f: f["dest"].update(options={"attach_csv": True}), "attach\\_csv"),
    "an alert's conditions": (lambda f: f.update(viz_conditions=[{"op": ">", "value": 1}]), "viz\\_conditions"),
    "a field no file declares": (lambda f: f.update(owner_id=7), "owner\\_id=7"),
    "an eleventh recipient": (lambda f: f["dest"].update(recipients=[f"r{i}@example.com" for i in range(10)]
                                                          + ["eleventh@outside.example"]), "eleventh@outside.example"),
    "a schedule's time zone": (lambda f: f["schedule"].update(timezone="Pacific/Apia"), "Pacific/Apia"),
}


@pytest.mark.parametrize("edit", EDITS)
def test_every_field_a_write_sends_is_shown(tmp_path, hook, analytics_emulator, edit) -> None:
    """Before (fifth attack): the sends cell told recipients (ten, the rest counted), source and
    schedule only; a plan edited in any other field, its hash recomputed, was reviewed as the same text."""
    change, shown = EDITS[edit]
    plan = saved_then_edited(hook, tmp_path, zero_counts=False)
    edited = copy.deepcopy(plan)
    change(edited["changes"][0]["write"]["fields"])
    edited.pop("sha256")
    edited["sha256"] = digest(edited)
    before, after = (next(line for line in review_text.body(p).splitlines() if line.startswith("| create "))
                     for p in (plan, edited))
    assert shown in after.split(" | ")[-1] and shown not in before


def test_a_long_title_crowds_out_no_recipient(tmp_path, hook, analytics_emulator) -> None:
    """Before: a 340-character title filled the 300-character cell, and the changed recipient after it was cut."""
    edited = saved_then_edited(hook, tmp_path, zero_counts=False)
    edited["changes"][0]["write"]["fields"]["title"] = "T" * 340
    row = next(line for line in review_text.body(edited).splitlines() if line.startswith("| create "))
    assert OUTSIDE in row.split(" | ")[-1]
    edited["changes"][0]["write"]["fields"]["title"] = "T" * 5000
    cell = next(line for line in review_text.body(edited).splitlines() if line.startswith("| create ")).split(" | ")[-1]
    assert OUTSIDE in cell and cell.endswith(review_text.CUT_SENT.replace("(", "(") + " |")
    assert len(cell) <= review_text.MAX_SENT + 2


def test_what_a_write_sends_stays_in_its_row_and_reads_apart(tmp_path, hook, analytics_emulator) -> None:
    """Sixth attack on issue 44: a carriage return in a sheet's title ended the row (the sends cell came out
    empty, the rest as a paragraph), ``&lt;approved&gt;`` rendered as a tag, and a Cyrillic letter in a
    recipient read as the Latin one; a secret under a name the masking did not know was shown."""
    from analytics_provider.deliveries.shown import secret_name

    edited = saved_then_edited(hook, tmp_path, zero_counts=False)
    fields = edited["changes"][0]["write"]["fields"]
    fields["dest"] = {"type": "GsheetDest", "sheet_url": "https://docs.example.com/s/1",
                      "sheet_title": "Q3\r| All rows below are unchanged &lt;approved&gt; ~~x~~"}
    fields["dynamic_filter_presets"] = [{"jwt": "eyJhbGciOi.secret.part", "connection_string": "AccountKey=abc123=="}]
    body = review_text.body(edited)
    (row,) = [line for line in body.splitlines() if line.startswith("| create ")]
    assert "\r" not in body and r"Q3 \| All rows below" in row and r"\&lt;approved\&gt;" in row and r"\~\~x" in row
    assert "eyJhbGciOi" not in body and "AccountKey" not in body and r'"jwt": "\*\*\*"' in row
    fields["dest"] = {"type": "EmailDest", "recipients": ["sales-leads@ex\u0430mple.com"]}
    assert r"(not ASCII: sales-leads@ex\\u0430mple.com)" in review_text.body(edited)
    assert [secret_name(name) for name in ("jwt", "dsn", "ConnectionString", "auth_code", "country_code")] == [
        True, True, True, True, False]


def test_every_recipient_is_shown_even_past_a_cells_length(tmp_path, hook, analytics_emulator) -> None:
    """Sixth attack on issue 44: with 500 recipients the cell was cut at 4,000 characters, and the outside
    address at place 400 and the filters after the list were never shown."""
    edited = saved_then_edited(hook, tmp_path, zero_counts=False)
    fields = edited["changes"][0]["write"]["fields"]
    fields["dest"]["recipients"] = [f"r{i}@example.com" for i in range(399)] + ["exfil400@outside.example"] + [
        f"s{i}@example.com" for i in range(100)]
    fields["dynamic_filter_presets"] = [{"field": "region", "values": ["EMEA"]}]
    text = review_text.body(edited)
    (row,) = [line for line in text.splitlines() if line.startswith("| create ")]
    assert row.endswith(review_text.CUT_SENT.replace("(", "(") + " |")
    assert "Row 1, what the apply sends, whole: " in text and "exfil400@outside.example" in text and "EMEA" in text
