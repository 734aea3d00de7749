"""A ``file://`` plan storage whose folder is not there is refused at the start of the task, before any
request (it failed once the plan task had read the service, losing the plan), naming the task and
``plan_storage``; parsing makes no folder. A second attack on #46."""

from __future__ import annotations

from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.operators import AnalyticsSyncGroupMembersOperator
from analytics_provider.testing.task_instance import FakeTaskInstance


@pytest.fixture
def rows(analytics_emulator, analytics_connection) -> list[Any]:
    return [(user_id, "Operations") for user_id in analytics_emulator.add_users(300)]


def test_an_absent_file_url_folder_is_refused_before_any_request(rows, tmp_path, analytics_emulator) -> None:
    absent = tmp_path / "no" / "such"
    task = AnalyticsSyncGroupMembersOperator(task_id="plan", rows=rows, dry_run=True, max_xcom_bytes=1024,
                                             plan_storage=f"file://{absent}")
    assert not (tmp_path / "no").exists()  # parsing made no folder
    analytics_emulator.clear_requests()
    with pytest.raises(AnalyticsParameterError) as refused:
        task.execute({"ti": FakeTaskInstance()})
    text = str(refused.value)
    assert text.startswith("plan: plan_storage must be a folder for the saved plans")
    assert (f"the folder {absent} of this file:// URL is not there on this worker (an URL's folder is not made: "
            f"make it, or give the path {absent}, whose folder is made); got 'file://{absent}'") in text
    assert analytics_emulator.requests == []  # the old task read the service, then failed to store its plan
    assert not (tmp_path / "no").exists()


def test_the_apply_task_is_refused_the_same_way_before_it_writes(rows, tmp_path, analytics_emulator) -> None:
    kept = tmp_path / "plans"
    kept.mkdir()
    plan = AnalyticsSyncGroupMembersOperator(task_id="plan", rows=rows, dry_run=True, max_xcom_bytes=1024,
                                             plan_storage=f"file://{kept}").execute({"ti": FakeTaskInstance()})
    assert plan["saved"]["location"].startswith(f"file://{kept}/plan-")  # a file:// URL of a folder there works
    analytics_emulator.clear_requests()
    apply = AnalyticsSyncGroupMembersOperator(task_id="apply", plan=plan, plan_storage=f"file://{tmp_path}/gone")
    with pytest.raises(AnalyticsParameterError, match=r"^apply: plan_storage must be .* the folder .*/gone of this "):
        apply.execute({"ti": FakeTaskInstance()})
    assert analytics_emulator.requests == []
