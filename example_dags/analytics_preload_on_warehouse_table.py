"""Refresh the analytics service whenever the warehouse's orders table changes.

Scheduled on the table's asset, which the load task of ``analytics_after_warehouse_load`` lists
in its outlets (any DAG or API call that updates the asset triggers this one): bust the data
source's cache, then preload the dashboards that read the table, so that the first viewer after
the load waits for nothing.
"""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG, Asset, Param

from analytics_provider.operators import AnalyticsBustDataSourceCacheOperator, AnalyticsPreloadDashboardOperator

# the same asset as the load's outlet (assets are matched by name and URI)
WAREHOUSE_ORDERS = Asset(uri="postgres://warehouse:5432/analytics/public/orders")
ORDERS_DASHBOARDS = ["Sales overview", "Marketing performance"]  # by title

with DAG(
    dag_id="analytics_preload_on_warehouse_table",
    description="Bust the cache and preload the dashboards when the orders table is updated",
    schedule=[WAREHOUSE_ORDERS],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example", "assets"],
    params={"data_source_id": Param(1, type="integer", description="the warehouse's data source")},
    default_args={"poll_interval": 1.0},
) as dag:
    bust_cache = AnalyticsBustDataSourceCacheOperator(
        task_id="bust_data_source_cache",
        data_source_id="{{ params.data_source_id }}",
    )

    preload = AnalyticsPreloadDashboardOperator.partial(task_id="preload_dashboard", bust_cache=True).expand(
        dashboard=ORDERS_DASHBOARDS
    )

    bust_cache >> preload
