"""The review step: what a plan or an AML validation looks like as an approval request, a plan with no
changes put to nobody, its refusals, and its refusal on an Airflow without human-in-the-loop."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest

from analytics_provider.operators import (
    AnalyticsApplyDeliveriesOperator,
    AnalyticsReviewPlanOperator,
    plan_review_apply,
)
from analytics_provider.operators.review import _MISSING
from analytics_provider.review_text import body, needs_review, subject

needs_hitl = pytest.mark.skipif(_MISSING is not None, reason="Airflow before 3.1: no human-in-the-loop")

PLAN = {
    "what": "deliveries", "counts": {"create": 2, "invite": 0, "add": 0, "change": 1, "remove": 1},
    "changes": [
        {"action": "create", "subject": "schedule", "target": "weekly-sales", "before": "", "after": "sales.yml:2"},
        {"action": "create", "subject": "alert", "target": "revenue|drop", "before": "", "after": "sales.yml:9"},
        {"action": "change", "subject": "schedule 12", "target": "daily", "before": "repeat '0 7 * * *'",
         "after": "repeat '0 8 * * *'"},
        {"action": "remove", "subject": "alert 4", "target": "old", "before": "in no file", "after": ""},
    ],
    "changes_left_out": 0,
}
EMPTY = {**PLAN, "counts": dict.fromkeys(PLAN["counts"], 0), "changes": []}
VALIDATED = {"job_id": 7, "project": "https://git.example.com/aml.git", "branch": "master",
             "commit": "9f2c4e1b7a3d5f60812c4e9b0a7d3f1e5c2b8a64",
             "diagnostics": ["models/orders.model.aml:1:1: warning 2001: Unused field 'x'"]}


def test_a_plan_reads_as_counts_and_a_table_cut_at_the_limit_with_the_total() -> None:
    text = body(PLAN, limit=3)
    assert text.splitlines()[0] == "**deliveries**: 2 to create, 1 to change, 1 to remove."
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows[0] == "| action | subject | target | before | after |"
    assert rows[2] == r"| create | alert | revenue\|drop |   | sales.yml:9 |"  # a cell's | stays in its cell
    assert len(rows) == 1 + 3
    assert text.splitlines()[-2:] == ["Showing 3 of 4 change(s).",
                                      "1 more change(s) are in the plan task's result (its `saved` plan) and its log."]
    assert body(PLAN).splitlines()[-1] == "All 4 change(s) shown."
    assert subject(PLAN) == "Apply deliveries: 2 to create, 1 to change, 1 to remove?"


def test_a_validation_reads_as_project_branch_commit_and_diagnostics() -> None:
    text = body(VALIDATED)
    assert "- branch: `master`" in text and f"- commit: `{VALIDATED['commit']}`" in text
    assert "- project: https://git.example.com/aml.git" in text
    assert "Diagnostics: 1" in text and "Unused field 'x'" in text
    assert subject(VALIDATED) == "Publish the AML project: branch master at 9f2c4e1b7a3d?"


def test_what_needs_a_review() -> None:
    assert needs_review(PLAN) and needs_review(VALIDATED) and not needs_review(EMPTY)


@needs_hitl
def test_a_plan_with_no_changes_succeeds_at_once_and_says_so(capsys) -> None:
    task = AnalyticsReviewPlanOperator(task_id="review", plan=EMPTY, response_timeout=timedelta(hours=4))
    # no task instance in the context: asking anyone (Airflow's upsert of the request) would fail here
    assert task.execute({}) == {"chosen_options": ["Approve"], "params_input": {}, "responded_by_user": None,
                                "reviewed": False, "digest": None}
    assert "The plan changes nothing: no review needed" in capsys.readouterr().out  # the task log


@needs_hitl
def test_the_review_is_an_approval_that_rejects_on_time_out() -> None:
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    task = AnalyticsReviewPlanOperator(task_id="review", plan=PLAN, response_timeout=timedelta(hours=4),
                                       assigned_users={"id": "ann", "name": "Ann"})
    assert isinstance(task, ApprovalOperator)
    assert task.defaults == ["Reject"] and task.fail_on_reject is False
    assert task.assigned_users == [{"id": "ann", "name": "Ann"}]
    # the standard provider before 1.13 (Airflow 3.1.8's constraints) bounds the wait by execution_timeout
    assert (getattr(task, "response_timeout", None) or task.execution_timeout) == timedelta(hours=4)
    assert AnalyticsReviewPlanOperator(task_id="r", plan=PLAN, fail_on_reject=True).fail_on_reject is True


@needs_hitl
def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^review: body must be left out: the review sets it"):
        AnalyticsReviewPlanOperator(task_id="review", plan=PLAN, body="hi")
    with pytest.raises(ValueError, match=r"^review: defaults must be left out"):
        AnalyticsReviewPlanOperator(task_id="review", plan=PLAN, defaults="Approve")
    with pytest.raises(ValueError, match=r"^review: max_rows must be a number of rows \(1 or more\); got 0"):
        AnalyticsReviewPlanOperator(task_id="review", plan=PLAN, max_rows=0)
    with pytest.raises(ValueError, match=r"^review: plan must be the result of a plan task"):
        AnalyticsReviewPlanOperator(task_id="review", plan={"job_id": 3}).execute({})


def test_without_human_in_the_loop_the_operator_is_refused_pointing_to_saved_plans() -> None:
    # Airflow 2.11 and 3.0 have no airflow.providers.standard.operators.hitl: made so here
    code = (
        "import sys\n"
        "sys.modules['airflow.providers.standard.operators.hitl'] = None\n"
        "from analytics_provider.operators import AnalyticsReviewPlanOperator\n"
        "try:\n"
        "    AnalyticsReviewPlanOperator(task_id='review', plan={})\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    out = out.splitlines()[-1]
    assert out.startswith("review: AnalyticsReviewPlanOperator needs Airflow 3.1 or later (human-in-the-loop")
    assert "plan=" in out and "manage apply --plan PLAN.json" in out and "'Reviewed changes'" in out


@needs_hitl
def test_the_three_tasks_in_one_line_and_their_refusals() -> None:
    from airflow.providers.common.compat.sdk import DAG

    with DAG("reviewed", schedule=None):
        group = plan_review_apply("deliveries", AnalyticsApplyDeliveriesOperator, path="/nowhere/{{ ds }}",
                                  scope="sales", review={"max_rows": 10})
    plan, review, apply = (group.children[f"deliveries.{name}"] for name in ("plan", "review", "apply"))
    assert plan.is_dry_run and review.max_rows == 10 and apply.path is None
    assert plan.downstream_task_ids == {"deliveries.review", "deliveries.apply"}
    assert review.downstream_task_ids == {"deliveries.apply"}
    assert review.plan.operator is plan and apply.plan.operator is plan  # both take the plan task's result
    with pytest.raises(ValueError, match=r"^deliveries: operator must be an operator that applies a saved plan"):
        plan_review_apply("deliveries", AnalyticsReviewPlanOperator)
    with pytest.raises(ValueError, match=r"^deliveries: dry_run must be left out: plan_review_apply sets it"):
        plan_review_apply("deliveries", AnalyticsApplyDeliveriesOperator, path="x", dry_run=True)


@needs_hitl
def test_the_rendered_plan_field_shows_addresses_masked_and_the_digest_is_the_real_plans() -> None:
    """Second attack on issue 44: the review's rendered ``plan`` field (shown in Airflow's UI, kept in
    its database) held the saved plan's writes with the real webhook endpoints. Rendered, it holds
    them masked; the digest the review returns is still the real plan's."""
    from analytics_provider.plans.saved import digest

    token = "s3cr3tT0kenXYZ42"
    saved = {"format": "analytics_provider saved plan 1", "changes": [], "touched": [], "what": "deliveries",
             "counts": EMPTY["counts"],
             "written": [{"dest": {"type": "WebhookDest", "endpoint": f"hooks.example.com/services/T0/B0/{token}"}},
                         {"dest": {"type": "WebhookDest", "endpoint": f" https://hooks.example.com/in/{token}"}}]}
    task = AnalyticsReviewPlanOperator(task_id="review", plan={**EMPTY, "saved": saved},
                                       response_timeout=timedelta(hours=4))
    task.render_template_fields({})
    assert token not in repr(task.plan), task.plan
    assert task.plan["saved"]["written"][0]["dest"]["endpoint"] == "hooks.example.com/services/T0/B0/***"
    assert task.execute({})["digest"] == digest(saved)
