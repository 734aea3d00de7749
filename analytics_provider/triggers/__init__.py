"""Triggers of the analytics provider."""

from __future__ import annotations

from analytics_provider.triggers.analytics import AnalyticsJobTrigger

__all__ = ["AnalyticsJobTrigger"]
