"""Validate the AML branch at its head, have a person review the validation, publish exactly that commit."""

from __future__ import annotations

from airflow.providers.common.compat.sdk import DAG

from analytics_provider.operators import (
    AnalyticsPublishAmlProjectOperator,
    AnalyticsReviewPlanOperator,
    AnalyticsValidateAmlProjectOperator,
)

with DAG(dag_id="reviewed_publish", schedule=None, catchup=False, params={"repository": ""}) as dag:
    validate = AnalyticsValidateAmlProjectOperator(task_id="validate", branch="master",
                                                   repository="{{ params.repository }}", poll_interval=0.1)
    review = AnalyticsReviewPlanOperator(task_id="review", plan=validate.output)
    publish = AnalyticsPublishAmlProjectOperator(task_id="publish", validated=validate.output,
                                                 repository="{{ params.repository }}", poll_interval=0.1)
    validate >> review >> publish
