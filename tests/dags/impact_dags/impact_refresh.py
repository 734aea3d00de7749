"""DAGs for the refresh-by-impact tests: refresh by tables (run conf), by a dbt run's files."""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG

from analytics_provider.operators import AnalyticsRefreshImpactedOperator

with DAG(
    dag_id="impact_refresh",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    render_template_as_native_obj=True,
    tags=["test"],
) as dag:
    AnalyticsRefreshImpactedOperator(
        task_id="refresh",
        tables="{{ dag_run.conf.get('tables') }}",
        dbt_run_results="{{ dag_run.conf.get('run_results') }}",
        dbt_manifest="{{ dag_run.conf.get('manifest') }}",
        dashboards_filter="{{ dag_run.conf.get('dashboards_filter') }}",
        dry_run="{{ dag_run.conf.get('dry_run', False) }}",
        unmatched_tables="{{ dag_run.conf.get('unmatched_tables', 'fail') }}",
        retries=1,
        retry_delay=pendulum.duration(seconds=0),
        poll_interval=0.1,
    )
