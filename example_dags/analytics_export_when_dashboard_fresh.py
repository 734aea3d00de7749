"""Export a dashboard's widget once the dashboard is fresh: scheduled on the dashboard's asset.

``analytics_after_warehouse_load`` refreshes what its load touched; each dashboard it preloads is
an event on that dashboard's asset, ``analytics://<service host>/dashboards/<id>``
(:func:`~analytics_provider.assets.dashboard_asset`). This DAG runs after each refresh of "Sales
overview" (id 1 in the emulator's seed) and exports one of its widgets, from a warm cache.

``ANALYTICS_SERVICE`` names the service the asset is on, as the connection reaches it: a region
(``eu``, ``us``, ``apac``), a host, or a base URL (the emulator's, in tests). Read when the file is
parsed; it is not a secret.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param

from analytics_provider.assets import dashboard_asset
from analytics_provider.operators import AnalyticsExportWidgetOperator

SERVICE = os.environ.get("ANALYTICS_SERVICE", "eu")
SALES_OVERVIEW = 1  # the dashboard's id: an asset is named by id, which a rename does not change
EXPORT_DIR = str(Path(tempfile.gettempdir()) / "analytics-fresh-exports")

with DAG(
    dag_id="analytics_export_when_dashboard_fresh",
    description="Export a widget of Sales overview each time it was refreshed",
    schedule=[dashboard_asset(SALES_OVERVIEW, service=SERVICE)],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example"],
    params={"export_dir": Param(EXPORT_DIR, type="string")},
    default_args={"poll_interval": 1.0},
) as dag:
    AnalyticsExportWidgetOperator(
        task_id="export_orders_by_channel",
        dashboard=SALES_OVERVIEW,
        widget="Orders by channel",
        output="csv",
        destination="{{ params.export_dir }}/{{ dag_run.run_after | default(logical_date) | ds }}/"
        "orders-by-channel.csv",
    )
