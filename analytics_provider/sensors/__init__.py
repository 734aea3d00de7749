"""Sensors of the analytics provider."""

from __future__ import annotations

from analytics_provider.sensors.analytics import AnalyticsJobSensor

__all__ = ["AnalyticsJobSensor"]
