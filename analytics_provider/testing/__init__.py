"""Testing helpers: a local emulator of the service's HTTP API, and its pytest fixtures.

Importing this package is cheap: the emulator loads only when ``AnalyticsEmulator`` is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analytics_provider.testing.emulator.app import AnalyticsEmulator

__all__ = ["AnalyticsEmulator"]


def __getattr__(name: str) -> Any:
    if name == "AnalyticsEmulator":
        from analytics_provider.testing.emulator.app import AnalyticsEmulator

        return AnalyticsEmulator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
