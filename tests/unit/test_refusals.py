"""One refusal style for every bad operator argument: ``AnalyticsParameterError`` naming the task,
the parameter, what is allowed and the value, raised before any request."""

from __future__ import annotations

from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.operators import (
    AnalyticsExportWidgetOperator,
    AnalyticsPreloadDashboardOperator,
    AnalyticsPublishAmlProjectOperator,
    AnalyticsQueryDataSetOperator,
    AnalyticsUploadDbtManifestOperator,
)

EXPORT = {"widget_id": 101, "destination": "/tmp/out.csv"}
QUERY = {"data_set_id": 1, "query": {"metrics": [{"field": "orders.revenue", "aggregation": "sum"}]}}
BAD_CONDITION = [{"dynamic_filter_id": 1, "condition": {"operator": "is_like", "values": ["EU"]}}]

# (operator, arguments, the parameter the refusal names, the value it shows)
CASES: list[tuple[type, dict[str, Any], str, str]] = [
    (AnalyticsExportWidgetOperator, {**EXPORT, "output": "docx"}, "output", "'docx'"),
    (AnalyticsExportWidgetOperator, {**EXPORT, "poll_interval": -1}, "poll_interval", "-1"),
    (AnalyticsExportWidgetOperator, {**EXPORT, "timeout": 0}, "timeout", "0"),
    (AnalyticsExportWidgetOperator, {**EXPORT, "max_outage": -5}, "max_outage", "-5"),
    (AnalyticsExportWidgetOperator, {**EXPORT, "dashboard_filter_conditions": BAD_CONDITION}, "operator",
     "'is_like'"),
    (AnalyticsPreloadDashboardOperator, {"dashboard_id": 1, "dashboard_filter_conditions": BAD_CONDITION},
     "operator", "'is_like'"),
    (AnalyticsQueryDataSetOperator, {**QUERY, "max_return_rows": 0}, "max_return_rows", "0"),
    (AnalyticsQueryDataSetOperator, {**QUERY, "destination": "/tmp/rows.xml"}, "file_format", "'/tmp/rows.xml'"),
    (AnalyticsQueryDataSetOperator, {**QUERY, "destination": "/tmp/r.csv", "file_format": "xml"}, "file_format",
     "'xml'"),
    (AnalyticsPublishAmlProjectOperator, {"lint_custom_charts": True}, "project_dir", "None"),
    (AnalyticsUploadDbtManifestOperator, {"manifests": []}, "manifests", ""),
]


@pytest.mark.parametrize(("operator", "arguments", "parameter", "value"), CASES,
                         ids=[f"{op.__name__}-{param}" for op, _, param, _ in CASES])
def test_a_bad_argument_is_refused_naming_task_parameter_and_value(
    operator: type, arguments: dict[str, Any], parameter: str, value: str
) -> None:
    with pytest.raises(AnalyticsParameterError) as refusal:
        operator(task_id="the_task", **arguments)
    text = str(refusal.value)
    assert text.startswith("the_task: ") and parameter in text and value in text, text
    assert "must" in text or "is needed" in text or "one of" in text, text


def test_a_rendered_bad_argument_is_refused_in_the_same_style_before_any_request() -> None:
    task = AnalyticsPreloadDashboardOperator(task_id="the_task", dashboard_id=1, bust_cache="{{ params.bust }}")
    task.bust_cache = "sometimes"  # as rendered
    with pytest.raises(AnalyticsParameterError, match=r"^the_task: bust_cache must be true or false; got 'sometimes'"):
        task.check_inputs()
