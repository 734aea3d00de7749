"""After a deploy: publish the AML project; on success preload key dashboards and send a schedule.

If the project does not compile, the publish task fails and its log lists every diagnostic as
``file:line:column: category code: message`` (line and column when ``project_dir`` holds a
checkout of the project). With ``lint_custom_charts`` the custom chart definitions are checked
before anything is published.
"""

from __future__ import annotations

from pathlib import Path

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param

from analytics_provider.operators import (
    AnalyticsExecuteDataScheduleOperator,
    AnalyticsPreloadDashboardOperator,
    AnalyticsPublishAmlProjectOperator,
)

PROJECT_DIR = str(Path(__file__).parent / "aml_project")
KEY_DASHBOARDS = ["Sales overview", "Marketing performance"]  # by title

with DAG(
    dag_id="analytics_post_deploy_publish",
    description="Publish the AML project to production, then warm up and announce",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example"],
    params={
        "project_dir": Param(PROJECT_DIR, type="string", description="checkout of the AML project"),
        "data_schedule_id": Param(1, type="integer", description="schedule announcing the release"),
    },
    default_args={"poll_interval": 1.0},
) as dag:
    publish = AnalyticsPublishAmlProjectOperator(
        task_id="publish_aml_project",
        project_dir="{{ params.project_dir }}",
        lint_custom_charts=True,
    )

    preload = AnalyticsPreloadDashboardOperator.partial(task_id="preload_key_dashboard").expand(
        dashboard=KEY_DASHBOARDS
    )

    announce = AnalyticsExecuteDataScheduleOperator(
        task_id="send_release_schedule",
        data_schedule_id="{{ params.data_schedule_id }}",
    )

    publish >> [preload, announce]
