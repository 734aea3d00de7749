"""After a warehouse load: refresh what read the tables it wrote, export a widget, read the file.

The refresh asks the service which data sources and dashboards read the loaded tables (no list
kept by hand: a new dashboard on the table is refreshed the next time), logs the plan, busts each
data source's cache once and preloads each dashboard once; each dashboard refreshed is an event on
its asset (``analytics_export_when_dashboard_fresh`` is scheduled on one). Trigger it at the end of
your load (or schedule it on the load's Asset). Against the emulator it runs unchanged; point the
``analytics_default`` connection at your account for real use, list the tables your load writes
in ``LOADED_TABLES`` and set the names in the DAG's params: the dashboard's and the widget's titles
to export, and the value of the dashboard's Region filter.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pendulum
from airflow.providers.common.compat.sdk import DAG, Asset, Param, task

from analytics_provider.operators import AnalyticsExportWidgetOperator, AnalyticsRefreshImpactedOperator

EXPORT_DIR = str(Path(tempfile.gettempdir()) / "analytics-exports")
# the table the load writes; analytics_preload_on_warehouse_table is scheduled on it
WAREHOUSE_ORDERS = Asset(uri="postgres://warehouse:5432/analytics/public/orders")
LOADED_TABLES = ["analytics.public.orders"]  # what the load writes: db.schema.table (or schema.table)

with DAG(
    dag_id="analytics_after_warehouse_load",
    description="Refresh what the warehouse load touched, then export a widget",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example"],
    params={
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

    refresh = AnalyticsRefreshImpactedOperator(
        task_id="refresh_impacted",
        tables=LOADED_TABLES,
        warehouse_namespace="postgres://warehouse:5432",
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

    load_warehouse() >> refresh >> export
    read_export(export.output)
