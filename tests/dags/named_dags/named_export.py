"""A DAG written only with names: a dashboard and a widget by their titles, filters by their labels."""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG

from analytics_provider.operators import AnalyticsExportWidgetOperator, AnalyticsPreloadDashboardOperator

with DAG(
    dag_id="named_export",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["test"],
    params={"dashboard": "Sales overview", "widget": "Revenue by region and month", "region": "EU"},
) as dag:
    preload = AnalyticsPreloadDashboardOperator(
        task_id="preload",
        dashboard="{{ params.dashboard }}",
        filters={"Region": ["{{ params.region }}"]},
    )
    export = AnalyticsExportWidgetOperator(
        task_id="export",
        dashboard="{{ params.dashboard }}",
        widget="{{ params.widget }}",
        filters={"Region": ["{{ params.region }}"], "Channel": {"operator": "is_not", "values": ["Phone"]}},
        output="csv",
        destination="{{ dag_run.conf['destination'] }}",
    )
    preload >> export
