"""Plan the delivery files, have a person review the plan, then apply exactly that plan (Airflow 3.1+)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from airflow.providers.common.compat.sdk import DAG

from analytics_provider.operators import AnalyticsApplyDeliveriesOperator, plan_review_apply

DELIVERIES = str(Path(__file__).resolve().parents[3] / "example_dags" / "deliveries")

with DAG(dag_id="reviewed_deliveries", schedule=None, catchup=False) as dag:
    plan_review_apply("deliveries", AnalyticsApplyDeliveriesOperator, path=DELIVERIES, scope="sales",
                      review={"response_timeout": timedelta(hours=4)})
