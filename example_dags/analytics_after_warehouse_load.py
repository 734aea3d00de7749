"""After a warehouse load: bust the cache, preload the dashboard, export a widget, read the file.

Trigger it at the end of your load (or schedule it on the load's Asset). Against the emulator
it runs unchanged; point the ``analytics_default`` connection at your account for real use and
set the names in the DAG's params: the dashboard's and the widget's titles, and the value of the
dashboard's Region filter (data sources have no names in the API: that one is an id).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pendulum
from airflow.providers.common.compat.sdk import DAG, Asset, Param, task

from analytics_provider.operators import (
    AnalyticsBustDataSourceCacheOperator,
    AnalyticsExportWidgetOperator,
    AnalyticsPreloadDashboardOperator,
)

EXPORT_DIR = str(Path(tempfile.gettempdir()) / "analytics-exports")
# the table the load writes; analytics_preload_on_warehouse_table is scheduled on it
WAREHOUSE_ORDERS = Asset(uri="postgres://warehouse:5432/analytics/public/orders")

with DAG(
    dag_id="analytics_after_warehouse_load",
    description="Refresh the analytics service after the warehouse load, then export a widget",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example"],
    params={
        "data_source_id": Param(1, type="integer", description="the warehouse's data source (by id)"),
        "dashboard": Param("Sales overview", type="string", description="the dashboard viewers open first"),
        "widget": Param("Revenue by region and month", type="string", description="the widget to export"),
        "region": Param("EU", type="string", description="the export's value of the dashboard's Region filter"),
        "export_dir": Param(EXPORT_DIR, type="string"),
    },
    default_args={"retries": 1, "retry_delay": pendulum.duration(seconds=30), "poll_interval": 1.0},
) as dag:

    @task(outlets=[WAREHOUSE_ORDERS])
    def load_warehouse() -> int:
        """Stand-in for your load (dbt, COPY, an ingestion tool...)."""
        return 1_000

    bust_cache = AnalyticsBustDataSourceCacheOperator(
        task_id="bust_data_source_cache",
        data_source_id="{{ params.data_source_id }}",
    )

    preload = AnalyticsPreloadDashboardOperator(
        task_id="preload_dashboard",
        dashboard="{{ params.dashboard }}",
        bust_cache=True,
    )

    export = AnalyticsExportWidgetOperator(
        task_id="export_widget",
        dashboard="{{ params.dashboard }}",
        widget="{{ params.widget }}",
        filters={"Region": ["{{ params.region }}"]},
        output="csv",
        destination="{{ params.export_dir }}/{{ dag_run.run_after | default(logical_date) | ds }}/"
        "{{ params.widget | lower | replace(' ', '-') }}.csv",
    )

    @task
    def read_export(summary: dict) -> int:
        """Ship the file onwards; here we just read it."""
        lines = Path(summary["path"]).read_text(encoding="utf-8").splitlines()
        print(f"{summary['path']}: {len(lines) - 1} rows, {summary['bytes']} bytes")
        for line in lines[:5]:
            print("  " + line)
        return len(lines) - 1

    load_warehouse() >> bust_cache >> preload >> export
    read_export(export.output)
