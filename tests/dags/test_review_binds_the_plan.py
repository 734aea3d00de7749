"""What a review binds (issue 44), through Airflow (3.3+): the request shows what each create sends
and the plan's digest; the apply refuses a saved plan whose content is not the one shown, even
with its own hash recomputed (a plan's XCom edited between the review and the apply)."""

from __future__ import annotations

from typing import Any

import pytest

from analytics_provider.plans.saved import _digest, digest
from analytics_provider.testing.review import answering_review

from .conftest import AIRFLOW_VERSION, dag_bag_of, dag_test
from .test_deliveries_dags import delivery_file
from .test_review import DAG_ID, REVIEW, REVIEW_DAGS, states, writes

pytestmark = pytest.mark.skipif(AIRFLOW_VERSION < (3, 3), reason="dag.test() answers human-in-the-loop from 3.3")
PLAN = "deliveries.plan"


@pytest.fixture(scope="module")
def bag(airflow_db: None) -> Any:
    return dag_bag_of(REVIEW_DAGS)


def plan_xcom(edit: Any = None) -> Any:
    """The plan task's result in the latest run of the DAG; ``edit`` changes it in the database. Run
    by ``answering_review`` in its session (the thread's scoped one, committed when it answers)."""
    from airflow import settings
    from airflow.models.dagrun import DagRun
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    session = settings.Session()
    run_id = session.scalar(select(DagRun.run_id).where(DagRun.dag_id == DAG_ID).order_by(DagRun.id.desc()).limit(1))
    row = session.scalars(XComModel.get_many(run_id=run_id, key="return_value", task_ids=PLAN,
                                             dag_ids=DAG_ID)).one()
    value = XComModel.deserialize_value(row)
    if edit is not None:
        edit(value)
        XComModel.set("return_value", value, dag_id=DAG_ID, task_id=PLAN, run_id=run_id, session=session,
                      serialize=False)  # stored as the task's own result is: JSON, not a JSON string
        session.flush()
    return value


def test_the_request_shows_what_a_create_sends_and_the_plans_digest(bag, analytics_emulator,
                                                                    analytics_connection) -> None:
    shown: dict[str, Any] = {}
    with answering_review(DAG_ID, REVIEW, "Approve", before=lambda: shown.update(plan_xcom())) as seen:
        dag_run = dag_test(bag.get_dag(DAG_ID))
    assert states(dag_run) == {"plan": "success", "review": "success", "apply": "success"}
    assert ("| create | data schedule | weekly-sales |   | to e-mail sales-leads@example.com; from dashboard "
            "'Sales overview' (1); every '0 8 \\* \\* 1'; ") in seen.body  # then its other fields, where declared
    assert f"Plan digest: `{digest(shown['saved'])}`" in seen.body
    answer = dag_run.get_task_instance(REVIEW).xcom_pull(task_ids=REVIEW)
    assert answer["digest"] == digest(shown["saved"]) and answer["reviewed"] is True


def test_a_plan_changed_after_its_review_is_refused_whatever_hash_it_carries(bag, analytics_emulator,
                                                                            analytics_connection, capsys) -> None:
    def outside_address(plan: Any) -> None:
        saved = plan["saved"]
        saved["changes"][0]["write"]["fields"]["dest"]["recipients"] = ["mallory@outside.example"]
        saved["sha256"] = _digest({k: v for k, v in saved.items() if k != "sha256"})  # recomputed, as anyone can

    with answering_review(DAG_ID, REVIEW, "Approve", before=lambda: plan_xcom(outside_address)):
        dag_run = dag_test(bag.get_dag(DAG_ID))
    assert states(dag_run) == {"plan": "success", "review": "success", "apply": "failed"}
    log = capsys.readouterr().out
    said = [line for line in log.splitlines() if "deliveries.apply" in line or "Error" in line]
    assert "deliveries.apply: the plan's content is not the one approved (digest " in log, said[-12:]
    assert "it was changed after the review; nothing was written" in log
    assert "Applying the saved plan exactly" not in log
    assert writes(analytics_emulator) == []


def test_the_review_tasks_rendered_plan_shows_a_webhook_with_its_token_masked(
        tmp_path, airflow_db, analytics_emulator, analytics_connection) -> None:
    """Second attack on issue 44: the review task's rendered ``plan`` field (Airflow's UI shows it,
    its database keeps it) held the saved plan's writes with the webhook's real endpoint. Stored
    masked; the apply still sends the real one."""
    import json
    import textwrap

    from airflow.models.renderedtifields import RenderedTaskInstanceFields

    token = "s3cr3tT0kenXYZ42"
    endpoint = f"hooks.example.com/services/T000/B000/{token}"  # without a scheme, as the attack wrote it
    delivery_file(tmp_path, "hooks.yml", f"""\
        alerts:
          - key: revenue-hook
            widget: 101
            repeat: "0 9 * * *"
            dest: {{type: WebhookDest, endpoint: "{endpoint}"}}
        """)
    (tmp_path / "webhook_dag.py").write_text(textwrap.dedent(f"""\
        from datetime import timedelta
        from airflow.providers.common.compat.sdk import DAG
        from analytics_provider.operators import AnalyticsApplyDeliveriesOperator, plan_review_apply

        with DAG(dag_id="reviewed_webhook", schedule=None, catchup=False):
            plan_review_apply("deliveries", AnalyticsApplyDeliveriesOperator, path={str(tmp_path / "deliveries")!r},
                              scope="sales", review={{"response_timeout": timedelta(hours=4)}})
        """))
    dags = dag_bag_of(tmp_path)
    with answering_review("reviewed_webhook", REVIEW, "Approve"):
        dag_run = dag_test(dags.get_dag("reviewed_webhook"))
    assert states(dag_run) == {"plan": "success", "review": "success", "apply": "success"}
    rendered = RenderedTaskInstanceFields.get_templated_fields(dag_run.get_task_instance(REVIEW))
    shown = json.dumps(rendered)
    assert token not in shown and "hooks.example.com/services/T000/B000/***" in shown, shown[:2000]
    (sent,) = [r for r in analytics_emulator.requests if r.operation == "create_data_alert"]
    assert sent.json["data_alert"]["dest"]["endpoint"] == endpoint
