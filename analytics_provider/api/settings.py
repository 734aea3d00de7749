"""Deprecated: the names users import from here live in :mod:`analytics_provider.api.call.settings`
(the API's modules are in groups: wire, call, jobs). Kept so that code written for earlier versions
imports; it warns once."""

from __future__ import annotations

import warnings

from airflow.exceptions import AirflowProviderDeprecationWarning

from analytics_provider.api.call.settings import ConnectionConfigError, ConnectionSettings

__all__ = ["ConnectionConfigError", "ConnectionSettings"]

warnings.warn(
    "analytics_provider.api.settings is deprecated: import from analytics_provider.api.call.settings",
    AirflowProviderDeprecationWarning,
    stacklevel=2,
)
