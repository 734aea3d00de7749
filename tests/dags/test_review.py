"""The review step through Airflow (3.3+, where dag.test() waits for the answer): approved, the apply
writes; rejected or timed out, the apply is skipped and nothing is written; the request shows the plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import AIRFLOW_VERSION, dag_bag_of, dag_test
from .hitl import answering

pytestmark = pytest.mark.skipif(AIRFLOW_VERSION < (3, 3), reason="dag.test() answers human-in-the-loop from 3.3")

REVIEW_DAGS = Path(__file__).resolve().parent / "review_dags"
WRITES = ("create_data_schedule", "update_data_schedule", "delete_data_schedule", "create_data_alert",
          "update_data_alert", "delete_data_alert")


@pytest.fixture(scope="module")
def review_bag(airflow_db: None) -> Any:
    return dag_bag_of(REVIEW_DAGS)


def writes(emulator: Any) -> list[str]:
    return [r.operation for r in emulator.requests if r.operation in WRITES]


def states(dag_run: Any) -> dict[str, str]:
    return {ti.task_id: ti.state for ti in dag_run.get_task_instances()}


def test_an_approved_plan_is_applied_and_the_request_shows_its_rows(review_bag, analytics_emulator,
                                                                    analytics_connection) -> None:
    seen: dict[str, Any] = {}
    with answering("reviewed_deliveries", "review", "Approve", seen):
        dag_run = dag_test(review_bag.get_dag("reviewed_deliveries"))
    assert states(dag_run) == {"plan": "success", "review": "success", "apply": "success"}
    assert seen["subject"] == "Apply deliveries: 2 to create, 0 to change, 0 to remove?"
    assert "| create | data schedule | weekly-sales |" in seen["body"]
    assert "| create | data alert | revenue-by-region-watch |" in seen["body"]
    assert writes(analytics_emulator) == ["create_data_schedule", "create_data_alert"]


@pytest.mark.parametrize("answer", ["Reject", None], ids=["rejected", "timed-out"])
def test_a_rejected_or_timed_out_review_skips_the_apply(review_bag, analytics_emulator, analytics_connection,
                                                        answer) -> None:
    with answering("reviewed_deliveries", "review", answer, {}):
        dag_run = dag_test(review_bag.get_dag("reviewed_deliveries"))
    assert states(dag_run) == {"plan": "success", "review": "success", "apply": "skipped"}
    assert writes(analytics_emulator) == []


def test_a_plan_with_nothing_to_change_is_not_put_to_anyone(review_bag, analytics_emulator,
                                                            analytics_connection) -> None:
    with answering("reviewed_deliveries", "review", "Approve", {}):
        dag_test(review_bag.get_dag("reviewed_deliveries"))  # applied: the service holds what the files say
    analytics_emulator.clear_requests()
    asked: dict[str, Any] = {}
    with answering("reviewed_deliveries", "review", "Approve", asked):  # would answer, were anyone asked
        dag_run = dag_test(review_bag.get_dag("reviewed_deliveries"))
    assert asked == {}
    assert states(dag_run) == {"plan": "success", "review": "success", "apply": "success"}
    review = next(ti for ti in dag_run.get_task_instances() if ti.task_id == "review")
    assert review.xcom_pull(task_ids="review")["reviewed"] is False
    assert writes(analytics_emulator) == []
