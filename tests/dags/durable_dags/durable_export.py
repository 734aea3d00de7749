"""A DAG for the durable-execution tests: one export that may be retried once, at once."""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG

from analytics_provider.operators import AnalyticsExportWidgetOperator

with DAG(
    dag_id="durable_export",
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
        retries=1,
        retry_delay=pendulum.duration(seconds=0),
        poll_interval=2.0,
    )
