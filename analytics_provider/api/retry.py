"""Deprecated: the names users import from here live in :mod:`analytics_provider.api.call.retry`
(the API's modules are in groups: wire, call, jobs). Kept so that code written for earlier versions
imports; it warns once."""

from __future__ import annotations

import warnings

from airflow.exceptions import AirflowProviderDeprecationWarning

from analytics_provider.api.call.retry import RetryPolicy, is_retryable, is_transient

__all__ = ["RetryPolicy", "is_retryable", "is_transient"]

warnings.warn(
    "analytics_provider.api.retry is deprecated: import from analytics_provider.api.call.retry",
    AirflowProviderDeprecationWarning,
    stacklevel=2,
)
