"""Access follows the warehouse: each user's regions as the ``region`` attribute, teams as groups.

The warehouse keeps who may see what (``analytics_user_access``: one row per user and region,
with the user's team). After each load this DAG makes the service hold the same: the plan is
logged as a table and returned as XCom, then applied; a second run with the same table writes
nothing. Removing what the table no longer holds is opt-in (``delete_missing``, with the attributes
or groups the task manages named: ``attributes=``, ``groups=``); set
``dry_run=True`` to see the plan without writing.

Connections: ``analytics_default`` (the service, or the emulator) and ``analytics_warehouse``, any
SQL database Airflow has a hook for (PostgreSQL, Snowflake, BigQuery, SQLite...). The first task
stands in for your load: it writes a few rows naming the emulator's users.
"""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG
from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator

from analytics_provider.operators import AnalyticsSyncGroupMembersOperator, AnalyticsSyncUserAttributesOperator

WAREHOUSE = "analytics_warehouse"

with DAG(
    dag_id="analytics_access_sync",
    description="Sync region attributes and team groups from the warehouse",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example", "access"],
) as dag:
    load_user_access = SQLExecuteQueryOperator(  # stands in for your load
        task_id="load_user_access",
        conn_id=WAREHOUSE,
        sql=[
            "CREATE TABLE IF NOT EXISTS analytics_user_access (email VARCHAR(200), region VARCHAR(50), "
            "team VARCHAR(100))",
            "DELETE FROM analytics_user_access",
            "INSERT INTO analytics_user_access (email, region, team) VALUES "
            "('maya.chen@example.com', 'EU', 'Sales'), ('lucas.meyer@example.com', 'US', 'Sales'), "
            "('lucas.meyer@example.com', 'LATAM', 'Sales'), ('priya.raman@example.com', 'APAC', 'Finance')",
        ],
    )

    sync_regions = AnalyticsSyncUserAttributesOperator(
        task_id="sync_regions",
        sql_conn_id=WAREHOUSE,
        sql="SELECT email, 'region' AS attribute, region FROM analytics_user_access",
        user_column="email",
        value_column="region",
        attributes=["region"],  # only this attribute is managed here
        delete_missing=False,
    )

    sync_teams = AnalyticsSyncGroupMembersOperator(
        task_id="sync_teams",
        sql_conn_id=WAREHOUSE,
        sql="SELECT DISTINCT email, team FROM analytics_user_access WHERE team IS NOT NULL",
        user_column="email",
        group_column="team",
        create_missing_groups=True,
    )

    load_user_access >> sync_regions >> sync_teams
