"""Refresh what the loads said they wrote: scheduled on the warehouse tables' assets.

Each load DAG lists the tables it writes in its tasks' outlets, as assets named the way Airflow's
providers name tables (``postgres://host:port/db/schema/table``, ``bigquery://project/dataset/table``,
OpenLineage's names for Snowflake, Redshift and Databricks). This DAG is scheduled on those assets;
when a load updates one, its refresh reads the run's triggering asset events
(``tables_from_assets=True``) and refreshes exactly the dashboards that read the tables named, no
table list kept by hand here. A table no data model reads fails the task, naming the closest
model tables (``unmatched_tables``); an asset that names no table is logged and ignored.

Here the load is ``analytics_after_warehouse_load``'s ``load_warehouse`` task (its outlet is the
orders table). That DAG refreshes the same table itself, and its refresh is the one whose
dashboards' freshness events schedule ``analytics_export_when_dashboard_fresh``: so this one emits
none (``outlets=[]``); drop that line in your own, where this DAG is the only refresh.
"""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG, Asset

from analytics_provider.operators import AnalyticsRefreshImpactedOperator

# the tables the load DAGs write: the same assets as their outlets (assets are matched by URI)
LOADED_TABLES = [Asset(uri="postgres://warehouse:5432/analytics/public/orders")]

with DAG(
    dag_id="analytics_refresh_what_loads_wrote",
    description="Refresh the dashboards that read the tables the loads wrote (from their asset events)",
    schedule=LOADED_TABLES,  # any of them updated: a run (Asset expressions, a | b, work too)
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example", "assets"],
    default_args={"retries": 1, "retry_delay": pendulum.duration(seconds=30)},
) as dag:
    AnalyticsRefreshImpactedOperator(
        task_id="refresh_what_loads_wrote",
        tables_from_assets=True,
        warehouse_namespace="postgres://warehouse:5432",
        poll_interval=1.0,
        outlets=[],  # see above: analytics_after_warehouse_load's refresh emits the dashboards' events
    )
