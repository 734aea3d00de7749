"""The e2e's own DAGs, beside the examples: a worker-side wait to kill a worker under, and a fan-out."""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from analytics_provider.operators import AnalyticsExportWidgetOperator

FAN_OUT = 200
START = pendulum.datetime(2026, 1, 1, tz="UTC")

with DAG(dag_id="e2e_worker_wait", schedule=None, start_date=START, catchup=False, tags=["e2e"],
         params={"folder": "/tmp"}) as worker_wait:
    AnalyticsExportWidgetOperator(
        task_id="export", widget_id=101, output="csv", deferrable=False, poll_interval=1.0,
        retries=2, retry_delay=pendulum.duration(seconds=1),
        destination="{{ params.folder }}/worker-wait.csv",
    )

with DAG(dag_id="e2e_fan_out", schedule=None, start_date=START, catchup=False, tags=["e2e"],
         params={"folder": "/tmp"}, max_active_tasks=64) as fan_out:
    AnalyticsExportWidgetOperator.partial(
        task_id="export", widget_id=101, output="csv", poll_interval=2.0, retries=2,
        retry_delay=pendulum.duration(seconds=5),
    ).expand(destination=[f"{{{{ params.folder }}}}/fan-out/{i:03d}.csv" for i in range(FAN_OUT)])
