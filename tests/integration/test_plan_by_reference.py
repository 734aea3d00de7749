"""Issue 46, item 4: XComs of a bounded size. A dry run's saved plan past ``max_xcom_bytes`` is written
to the plan storage and the XCom carries its summary (what, counts, size, SHA-256, where); the apply
task reads it back, checked, and applies it exactly; the review says how many changes it leaves out
and where they are. Measured: the XCom's bytes, with the plan inline and by reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analytics_provider import review_text
from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.operators import AnalyticsSyncGroupMembersOperator
from analytics_provider.plans.by_reference import REFERENCE_FORMAT
from analytics_provider.plans.saved import SavedPlanError
from analytics_provider.testing.task_instance import FakeTaskInstance

USERS = 600


def planned(rows: list[Any], storage: Path | str, limit: int | None) -> dict[str, Any]:
    task = AnalyticsSyncGroupMembersOperator(task_id="plan", rows=rows, dry_run=True, max_xcom_bytes=limit,
                                             plan_storage=str(storage))
    return task.execute({"ti": FakeTaskInstance()})


def apply(plan: dict[str, Any]) -> dict[str, Any]:
    return AnalyticsSyncGroupMembersOperator(task_id="apply", plan=plan).execute({"ti": FakeTaskInstance()})


@pytest.fixture
def rows(analytics_emulator, analytics_connection) -> list[Any]:
    return [(user_id, "Operations") for user_id in analytics_emulator.add_users(USERS)]


def test_a_large_saved_plan_goes_by_reference_and_is_applied_exactly(rows, tmp_path, analytics_emulator) -> None:
    inline = planned(rows, tmp_path / "inline", 16 * 1024 * 1024)  # the largest taken
    small = planned(rows, tmp_path / "plans", 16 * 1024)
    assert list((tmp_path / "inline").glob("*")) == []  # within its limit: no file
    saved = small["saved"]
    assert saved["format"] == REFERENCE_FORMAT and saved["counts"] == inline["saved"]["counts"]
    assert saved["changes_count"] == len(inline["saved"]["changes"])
    assert Path(saved["location"]).parent == (tmp_path / "plans").resolve()
    stored = json.loads(Path(saved["location"]).read_text())

    def but_its_own(plan: dict[str, Any]) -> dict[str, Any]:  # each plan is one of its own: its id, when made
        return {k: v for k, v in plan.items() if k not in ("plan_id", "made_at", "sha256")}

    assert stored["sha256"] == saved["sha256"] and but_its_own(stored) == but_its_own(inline["saved"])
    inline_bytes, small_bytes = len(json.dumps(inline["saved"])), len(json.dumps(saved))
    assert small_bytes < 1024 < 16 * 1024 < inline_bytes, (inline_bytes, small_bytes)  # the saved plan: 1/100th
    analytics_emulator.clear_requests()
    result = apply(small)
    assert result["applied"] == saved["changes_count"] > 0 and result["saved_plan"] == saved["sha256"]
    assert sum(r.operation == "add_user_to_group" for r in analytics_emulator.requests) == saved["changes_count"]


def test_a_referenced_plan_edited_since_writes_nothing(rows, tmp_path, analytics_emulator) -> None:
    plan = planned(rows, tmp_path, 16 * 1024)
    stored = Path(plan["saved"]["location"])
    stored.write_text(stored.read_text().replace('"add"', '"remove"', 1))
    analytics_emulator.clear_requests()
    with pytest.raises(SavedPlanError, match=r"^apply: the saved plan at .* is not the one the plan task stored"):
        apply(plan)
    stored.unlink()
    with pytest.raises(SavedPlanError, match=r"^apply: the saved plan at .* cannot be read \(FileNotFoundError"):
        apply(plan)
    assert [r.operation for r in analytics_emulator.requests if r.method != "GET"] == []


@pytest.mark.parametrize(("storage", "why"), [
    ("/dev/null", "it is there and is no folder"),
    ("/etc/passwd", "it is there and is no folder"),
    (42, "it is of type int, no folder"),
    ("plans/here", "a relative path depends on the folder each worker runs in"),
    ("", "it names no folder"),
    ("s3:// my bucket", "it is no URL"),
    # one plan was applied twice from two folders (a second attack on #46)
    ("file://rel/plans", "a file:// URL names a folder as file:///absolute/path; this one depends on the folder"),
    ("file://", "a file:// URL names a folder as file:///absolute/path; this one depends on the folder"),
    ("~no-such-user-here/plans", "~no-such-user-here names no user's home folder"),
    # a file where a parent folder should be: known at parse since a second attack on #44 (was: when written)
    ("/dev/null/plans", "/dev/null is there and is no folder: no folder can be made in it"),
    ("memory://plans", "memory:// is held by one process only"),
])
def test_a_plan_storage_that_cannot_be_a_folder_is_refused_when_the_dag_is_parsed(storage, why) -> None:
    with pytest.raises(AnalyticsParameterError, match=r"^plan: plan_storage must be a folder for the saved plans: an "
                                                      r"absolute path .*, or an ObjectStoragePath \(" + why):
        AnalyticsSyncGroupMembersOperator(task_id="plan", rows=[], dry_run=True, plan_storage=storage)


@pytest.mark.parametrize("storage", ["nosuch://bucket/plans"])
def test_a_plan_storage_that_fails_when_written_says_so_by_name(rows, tmp_path, storage) -> None:
    """Known only when the plan is written: a scheme no file system serves. Was a bare ValueError."""
    with pytest.raises(SavedPlanError, match=r"^plan: the saved plan \([0-9,]+ bytes, past max_xcom_bytes=16384\) "
                                             rf"cannot be written to plan_storage='{storage}' \((ValueError|"
                                             r"NotADirectoryError|FileExistsError): .*\); plan_storage must be a "
                                             r"folder for the saved plans"):
        planned(rows, storage, 16 * 1024)


def test_the_review_says_how_many_more_and_where(rows, tmp_path) -> None:
    plan = planned(rows, tmp_path, 16 * 1024)
    body = review_text.body(plan, 20)
    total = plan["saved"]["changes_count"]
    assert f"Showing 20 of {total} change(s)." in body
    assert (f"{total - 20} more change(s) are in the saved plan at `{review_text._text(plan['saved']['location'])}` "
            f"(sha256 `{plan['saved']['sha256']}`)") in body


def test_a_review_body_is_bounded_whatever_max_rows_says() -> None:
    rows = [{"action": "add", "subject": "u" * 5000, "target": f"group {i}", "before": "", "after": "member"}
            for i in range(5000)]
    plan = {"what": "group members", "counts": {"add": 5000}, "changes": rows}
    body = review_text.body(plan, 5000)
    assert len(body) <= review_text.MAX_BODY + 500
    shown = body.count("| add |")
    assert 0 < shown < 5000 and f"Showing {shown} of 5000 change(s)." in body
    assert f"{5000 - shown} more change(s) are in the plan task's result" in body


def test_a_bad_max_xcom_bytes_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"^plan: max_xcom_bytes must be a whole number of bytes from 1 to 16,777,216"):
        AnalyticsSyncGroupMembersOperator(task_id="plan", rows=[], dry_run=True, max_xcom_bytes=0)


@pytest.mark.parametrize("replaced_by", ["endless", "pipe", "grown"])
def test_a_referenced_plan_replaced_by_a_device_a_pipe_or_more_is_refused_unread(rows, tmp_path, analytics_emulator,
                                                                                 replaced_by) -> None:
    """Read up to the size the reference records, a regular file only: /dev/zero took all memory, a FIFO
    hung the apply for ever (found by an attack on issue 46)."""
    import os

    plan = planned(rows, tmp_path / "plans", 16 * 1024)
    stored = Path(plan["saved"]["location"])
    stored.unlink()
    if replaced_by == "endless":
        stored.symlink_to("/dev/zero")
    elif replaced_by == "pipe":
        os.mkfifo(stored)
    else:
        stored.write_bytes(b" " * (plan["saved"]["bytes"] * 50))
    analytics_emulator.clear_requests()
    said = "is not the one the plan task stored" if replaced_by == "grown" else \
        r"cannot be read \(ValueError: not a regular file\)"
    with pytest.raises(SavedPlanError, match=said):
        apply(plan)
    assert [r.operation for r in analytics_emulator.requests if r.method != "GET"] == []
