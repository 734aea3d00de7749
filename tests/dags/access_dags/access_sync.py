"""Access synced from a SQLite warehouse (connection ``warehouse_test``): region attributes, then team groups."""

from __future__ import annotations

from airflow.providers.common.compat.sdk import DAG

from analytics_provider.operators.access import (
    AnalyticsSyncGroupMembersOperator,
    AnalyticsSyncUserAttributesOperator,
)

with DAG("access_sync", schedule=None, catchup=False, tags=["test"]):
    regions = AnalyticsSyncUserAttributesOperator(
        task_id="sync_regions",
        sql_conn_id="warehouse_test",
        sql="SELECT email, 'region' AS attribute, region AS value FROM user_access ORDER BY email",
        user_column="email",
        attributes=["region"],
    )
    teams = AnalyticsSyncGroupMembersOperator(
        task_id="sync_teams",
        sql_conn_id="warehouse_test",
        sql="SELECT email, team FROM user_access WHERE team IS NOT NULL",
        user_column="email",
        group_column="team",
        groups=["Sales", "Finance"],
        create_missing_groups=True,
    )
    regions >> teams
