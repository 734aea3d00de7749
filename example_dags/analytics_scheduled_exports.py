"""Every morning, export several widgets as xlsx and pdf to object storage.

The widgets are a mapped task (one task instance per widget and format). The destination is an
object-storage URI: ``file://`` under a temporary folder by default, so that the DAG runs
anywhere; set ``export_root`` to ``s3://bucket/prefix`` (with an Airflow connection for the
store) in production. Files appear there only when complete, and each one is an event on its
export's stable asset (``analytics://exports/revenue-by-region.xlsx``...; the file's URI, day and
job id in the event's extra), emitted through the alias ``analytics-scheduled-exports``;
``analytics_ship_exported_files`` is scheduled on those assets.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pendulum
from airflow.providers.common.compat.sdk import DAG, AssetAlias, Param, task

from analytics_provider.operators import AnalyticsExportWidgetOperator

EXPORT_ROOT = "file://" + str(Path(tempfile.gettempdir()) / "analytics-scheduled-exports")
# (dashboard, the widget's title on it, the export's name: its files' and its asset's)
WIDGETS = [
    ("Sales overview", "Revenue by region and month", "revenue-by-region"),
    ("Sales overview", "Orders by channel", "orders-by-channel"),
    ("Marketing performance", "Campaign performance", "campaign-performance"),
]
FORMATS = ["xlsx", "pdf"]
# One mapped task cannot list a different outlet per widget: each file's event goes through this
# alias to its export's asset (analytics://exports/revenue-by-region.xlsx...).
EXPORTS_ALIAS = "analytics-scheduled-exports"
# The run's day: every Airflow 3 run has run_after, a run triggered by hand no logical date (ds);
# on Airflow 2.11 every run has a logical date and no run_after.
RUN_DAY = "{{ dag_run.run_after | default(logical_date) | ds }}"

with DAG(
    dag_id="analytics_scheduled_exports",
    description="Morning export of key widgets as xlsx and pdf",
    schedule="0 6 * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["analytics", "example"],
    params={"export_root": Param(EXPORT_ROOT, type="string")},
    default_args={"retries": 2, "retry_delay": pendulum.duration(minutes=1), "poll_interval": 1.0},
) as dag:
    exports = AnalyticsExportWidgetOperator.partial(
        task_id="export_widget", max_active_tis_per_dagrun=4, outlets=[AssetAlias(EXPORTS_ALIAS)]
    ).expand_kwargs(
        [
            {
                "dashboard": dashboard,
                "widget": widget,
                "output": output,
                "destination": f"{{{{ params.export_root }}}}/{RUN_DAY}/{name}.{output}",
                "asset": f"{name}.{output}",
            }
            for dashboard, widget, name in WIDGETS
            for output in FORMATS
        ]
    )

    @task
    def report(summaries: list[dict]) -> list[str]:
        """Where the files are; a real pipeline would notify or hand them on here.

        The mapped results are read in one request (a slice): iterating them reads one by one
        until a read past the last fails, which Airflow's api-server logs as an error.
        """
        files = list(summaries[:])
        for summary in files:
            print(f"{summary['path']} ({summary['content_type']}, {summary['bytes']} bytes)")
        return [summary["path"] for summary in files]

    report(exports.output)
