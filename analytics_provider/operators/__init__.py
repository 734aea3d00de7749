"""Operators that start the service's jobs and wait for them, and that sync access (imported lazily:
DAG files stay fast)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "AnalyticsJobOperator": "base",
    "AnalyticsExportWidgetOperator": "analytics",
    "AnalyticsPreloadDashboardOperator": "analytics",
    "AnalyticsBustDataSourceCacheOperator": "analytics",
    "AnalyticsExecuteDataScheduleOperator": "analytics",
    "AnalyticsPublishAmlProjectOperator": "publish",
    "AnalyticsValidateAmlProjectOperator": "publish",
    "AnalyticsQueryDataSetOperator": "query",
    "AnalyticsUploadDbtManifestOperator": "dbt",
    "AnalyticsSyncUserAttributesOperator": "access",
    "AnalyticsSyncGroupMembersOperator": "access",
    "AnalyticsApplyDeliveriesOperator": "deliveries",
    "AnalyticsRefreshImpactedOperator": "refresh",
    "AnalyticsReviewPlanOperator": "review",
    "plan_review_apply": "review",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
