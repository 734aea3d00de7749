"""Apache Airflow provider for the analytics service's public API v2."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
