"""On deploy: make the service's data schedules and alerts what ``deliveries/`` declares.

The files beside this DAG (``deliveries/*.yml``) are checked when the DAG is parsed: a wrong
destination type, a bad crontab or an unknown field is an import error of this DAG, at its file
and line. On each run the plan is logged first (the first task writes nothing), then applied;
a second run with the same files writes nothing. Resources whose key no file declares any more
are listed and kept; set ``prune=True`` to delete them. The files' scope (``sales``) is in the
titles they make (``[managed: sales/weekly-sales]``): schedules and alerts of other scopes, or made
by hand in the service, are never touched. Outside Airflow (in CI): ``python -m analytics_provider.manage
check|plan|apply example_dags/deliveries``.
"""

from __future__ import annotations

import pendulum
from airflow.providers.common.compat.sdk import DAG

from analytics_provider.operators import AnalyticsApplyDeliveriesOperator

with DAG(
    dag_id="analytics_deliveries_on_deploy",
    description="Apply the delivery files (data schedules and alerts as code)",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example", "deliveries"],
) as dag:
    plan = AnalyticsApplyDeliveriesOperator(task_id="plan_deliveries", path="deliveries", scope="sales",
                                            dry_run=True)
    apply = AnalyticsApplyDeliveriesOperator(task_id="apply_deliveries", path="deliveries", scope="sales",
                                             prune=False)
    plan >> apply
