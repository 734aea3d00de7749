"""The e2e's reviewed deliveries: plan the delivery files beside it, a person reviews, apply exactly
the reviewed plan (``scripts/e2e_review.py`` answers the review through Airflow's REST API)."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.providers.common.compat.sdk import DAG

from analytics_provider.operators import AnalyticsApplyDeliveriesOperator, plan_review_apply

with DAG(
    dag_id="e2e_reviewed_deliveries",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["analytics", "e2e", "deliveries"],
) as dag:
    plan_review_apply("deliveries", AnalyticsApplyDeliveriesOperator, path="deliveries", scope="sales",
                      review={"response_timeout": timedelta(hours=1)})
