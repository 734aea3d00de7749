"""Two DAGs whose one task calls the service with the provider's retry policy attached."""

from __future__ import annotations

from datetime import timedelta

from airflow.providers.common.compat.sdk import DAG, task

from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.retry_policy import AnalyticsRetryPolicy

for dag_id, conn_id in (("retry_policy_rate_limit", "analytics_default"), ("retry_policy_auth", "analytics_bad_key")):
    with DAG(dag_id, schedule=None, catchup=False):

        @task(retries=3, retry_delay=timedelta(seconds=5), retry_policy=AnalyticsRetryPolicy())
        def who_am_i(conn_id: str = conn_id) -> str:
            # the hook waits out a 429 for at most half a second, then the task's policy decides
            return AnalyticsHook(conn_id, max_retry_time=0.5).get_current_user()["email"]

        who_am_i()
