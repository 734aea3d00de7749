"""Exports announcing their files on stable assets: one on its own outlet, one through an alias."""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG, AssetAlias

from analytics_provider.assets import export_asset
from analytics_provider.operators import AnalyticsExportWidgetOperator

with DAG(
    dag_id="export_assets",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["test"],
) as dag:
    AnalyticsExportWidgetOperator(
        task_id="named_outlet",
        widget_id=101,
        destination="{{ dag_run.conf['folder'] }}/{{ dag_run.run_after | default(logical_date) | ds }}/revenue.csv",
        asset="finance/revenue.csv",
        outlets=[export_asset("finance/revenue.csv")],
    )
    AnalyticsExportWidgetOperator(
        task_id="default_name",
        widget_id=102,
        output="pdf",
        destination="{{ dag_run.conf['folder'] }}/{{ dag_run.run_after | default(logical_date) | ds }}/orders.pdf",
        outlets=[AssetAlias("test-exports")],
    )
