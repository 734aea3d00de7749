"""The reviewed change through Airflow (3.3+, where dag.test() waits for the answer): plan, review,
apply exactly the reviewed plan. Approved, it is written; rejected or timed out, the apply is skipped
and nothing is written; changed in the service between review and apply, the apply refuses and
nothing is written; a plan with nothing to change is put to no one. The request shows the plan."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from integration.git_repo import aml_repository, commit, git

from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.testing.review import answering_review

from .conftest import AIRFLOW_VERSION, dag_bag_of, dag_test

pytestmark = pytest.mark.skipif(AIRFLOW_VERSION < (3, 3), reason="dag.test() answers human-in-the-loop from 3.3")

REVIEW_DAGS = Path(__file__).resolve().parent / "review_dags"
DAG_ID, REVIEW = "reviewed_deliveries", "deliveries.review"
WRITES = ("create_data_schedule", "update_data_schedule", "delete_data_schedule", "create_data_alert",
          "update_data_alert", "delete_data_alert")


@pytest.fixture(scope="module")
def review_bag(airflow_db: None) -> Any:
    return dag_bag_of(REVIEW_DAGS)


def writes(emulator: Any) -> list[str]:
    return [r.operation for r in emulator.requests if r.operation in WRITES]


def states(dag_run: Any) -> dict[str, str]:
    return {ti.task_id.removeprefix("deliveries."): ti.state for ti in dag_run.get_task_instances()}


def test_an_approved_plan_is_applied_and_the_request_shows_its_rows(review_bag, analytics_emulator,
                                                                    analytics_connection) -> None:
    with answering_review(DAG_ID, REVIEW, "Approve") as seen:
        dag_run = dag_test(review_bag.get_dag(DAG_ID))
    assert states(dag_run) == {"plan": "success", "review": "success", "apply": "success"}
    assert seen.subject == "Apply deliveries: 2 to create, 0 to change, 0 to remove?"
    assert "| create | data schedule | weekly-sales |" in seen.body
    assert "| create | data alert | revenue-by-region-watch |" in seen.body
    assert writes(analytics_emulator) == ["create_data_schedule", "create_data_alert"]


@pytest.mark.parametrize("answer", ["Reject", None], ids=["rejected", "timed-out"])
def test_a_rejected_or_timed_out_review_skips_the_apply(review_bag, analytics_emulator, analytics_connection,
                                                        answer) -> None:
    with answering_review(DAG_ID, REVIEW, answer):
        dag_run = dag_test(review_bag.get_dag(DAG_ID))
    assert states(dag_run) == {"plan": "success", "review": "success", "apply": "skipped"}
    assert writes(analytics_emulator) == []


def test_a_change_in_the_service_between_review_and_apply_is_refused(review_bag, analytics_emulator,
                                                                     analytics_connection, capsys) -> None:
    def made_by_hand() -> None:  # another apply makes the reviewed schedule meanwhile
        hook = AnalyticsHook(analytics_connection)
        try:
            hook.create_data_schedule({
                "title": "Weekly sales [managed: sales/weekly-sales]", "source_type": "Dashboard", "source_id": 1,
                "schedule": {"repeat": "0 8 * * 1", "paused": False},
                "dest": {"type": "EmailDest", "recipients": ["ann@example.com"]}})
        finally:
            hook.close()
        analytics_emulator.clear_requests()

    with answering_review(DAG_ID, REVIEW, "Approve", before=made_by_hand):
        dag_run = dag_test(review_bag.get_dag(DAG_ID))
    assert states(dag_run) == {"plan": "success", "review": "success", "apply": "failed"}
    assert "deliveries.apply: stale plan: plan again. 1 resource(s) the plan touches changed" in (
        capsys.readouterr().out)  # the task's log
    assert writes(analytics_emulator) == []


def test_a_plan_with_nothing_to_change_is_not_put_to_anyone(review_bag, analytics_emulator,
                                                            analytics_connection) -> None:
    with answering_review(DAG_ID, REVIEW, "Approve"):
        dag_test(review_bag.get_dag(DAG_ID))  # applied: the service holds what the files say
    analytics_emulator.clear_requests()
    with answering_review(DAG_ID, REVIEW, "Approve") as asked:  # would answer, were anyone asked
        dag_run = dag_test(review_bag.get_dag(DAG_ID))
    assert not asked.asked
    assert states(dag_run) == {"plan": "success", "review": "success", "apply": "success"}
    assert dag_run.get_task_instance(REVIEW).xcom_pull(task_ids=REVIEW)["reviewed"] is False
    assert writes(analytics_emulator) == []


@pytest.fixture
def aml_repo(tmp_path: Path) -> Path:
    return aml_repository(tmp_path)


def test_a_reviewed_publish_publishes_the_validated_commit(review_bag, analytics_emulator, analytics_connection,
                                                          aml_repo) -> None:
    head = git(aml_repo, "rev-parse", "HEAD")
    analytics_emulator.world.state.projects[1]["commit_oid"] = head  # the service's production head
    with answering_review("reviewed_publish", "review", "Approve") as seen:
        dag_run = dag_test(review_bag.get_dag("reviewed_publish"), {"repository": str(aml_repo)})
    assert {ti.task_id: ti.state for ti in dag_run.get_task_instances()} == {
        "validate": "success", "review": "success", "publish": "success"}
    assert seen.subject == f"Publish the AML project: branch master at {head[:12]}?"
    assert f"- commit: `{head}`" in seen.body and "Diagnostics: 0 (none)" in seen.body
    assert [r.operation for r in analytics_emulator.requests if r.operation in (
        "validate_aml_project", "publish_aml_project")] == ["validate_aml_project", "publish_aml_project"]


def test_a_branch_that_moved_during_the_review_is_not_published(review_bag, analytics_emulator,
                                                                analytics_connection, aml_repo, capsys) -> None:
    with answering_review("reviewed_publish", "review", "Approve", before=lambda: commit(aml_repo, "Model orders { }")):
        dag_run = dag_test(review_bag.get_dag("reviewed_publish"), {"repository": str(aml_repo)})
    assert {ti.task_id: ti.state for ti in dag_run.get_task_instances()} == {
        "validate": "success", "review": "success", "publish": "failed"}
    assert "publish: branch 'master' moved since it was validated" in capsys.readouterr().out
    assert [r.operation for r in analytics_emulator.requests if r.operation == "publish_aml_project"] == []


def _park_only_once_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Opens the parking race wide: the helper answers at its first sight of the parked review (it does
    not wait to hear dag.test() say it waits), and dag.test() writes the parked state over the task only
    once that answer is recorded (at CI's load the answer came 0.4 s after the task started, and was lost)."""
    from airflow.models.hitl import HITLDetail
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from analytics_provider.testing import review

    monkeypatch.setattr(review, "UNHEARD", 0.0)
    monkeypatch.setattr(review, "_WAITING_LINE", "(a line dag.test() never logs)")
    set_state = TaskInstance.set_state

    def parked_late(self: Any, state: Any, **kwargs: Any) -> Any:
        if state == "awaiting_input" and self.task_id == REVIEW:
            answered = threading.Event()
            while not answered.wait(0.05):
                with create_session() as session:
                    if session.scalar(select(HITLDetail.responded_at).where(HITLDetail.ti_id == self.id)):
                        answered.set()
        return set_state(self, state, **kwargs)

    monkeypatch.setattr(TaskInstance, "set_state", parked_late)


def test_an_answer_lost_to_the_parking_race_is_given_again(review_bag, analytics_emulator, analytics_connection,
                                                           monkeypatch) -> None:
    _park_only_once_answered(monkeypatch)
    with answering_review(DAG_ID, REVIEW, "Approve") as seen:
        dag_run = dag_test(review_bag.get_dag(DAG_ID))
    assert seen.given == 2  # the first answer was written over by the parking, the second took
    assert states(dag_run) == {"plan": "success", "review": "success", "apply": "success"}
    assert writes(analytics_emulator) == ["create_data_schedule", "create_data_alert"]


def test_an_answer_that_never_takes_fails_the_test_instead_of_hanging(review_bag, analytics_emulator,
                                                                      analytics_connection, monkeypatch) -> None:
    from analytics_provider.testing import review

    _park_only_once_answered(monkeypatch)
    monkeypatch.setattr(review, "GIVEN_AT_MOST", 1)
    lost = "was given 1 times and the task is still awaiting input"
    with pytest.raises(review.ReviewNotAnswered, match=lost), answering_review(DAG_ID, REVIEW, "Approve"):
        dag_run = dag_test(review_bag.get_dag(DAG_ID))
    assert states(dag_run) == {"plan": "success", "review": "failed", "apply": "upstream_failed"}
    assert writes(analytics_emulator) == []
