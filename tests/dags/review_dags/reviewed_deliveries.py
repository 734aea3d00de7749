"""Plan the delivery files, have a person review the plan, then apply it (Airflow 3.1+)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from airflow.providers.common.compat.sdk import DAG

from analytics_provider.operators import AnalyticsApplyDeliveriesOperator, AnalyticsReviewPlanOperator

DELIVERIES = str(Path(__file__).resolve().parents[3] / "example_dags" / "deliveries")

with DAG(dag_id="reviewed_deliveries", schedule=None, catchup=False, params={"response_minutes": 240}) as dag:
    plan = AnalyticsApplyDeliveriesOperator(task_id="plan", path=DELIVERIES, scope="sales", dry_run=True)
    review = AnalyticsReviewPlanOperator(task_id="review", plan=plan.output, response_timeout=timedelta(hours=4))
    apply = AnalyticsApplyDeliveriesOperator(task_id="apply", path=DELIVERIES, scope="sales")
    plan >> review >> apply
