"""A DAG for the job-status tests: one export, its file where the run's conf says."""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG

from analytics_provider.operators import AnalyticsExportWidgetOperator

with DAG(
    dag_id="job_statuses_export",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["test"],
) as dag:
    AnalyticsExportWidgetOperator(
        task_id="export",
        widget_id=101,
        output="csv",
        destination="{{ dag_run.conf['destination'] }}",
    )
