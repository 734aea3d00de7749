"""Which Airflow this is, for the few places where 2.11 and 3 differ and common-compat has nothing.

Everything that only moved is imported through ``airflow.providers.common.compat``; these flags
are for behaviour that differs (an ``Asset`` has a name only on Airflow 3).
"""

from __future__ import annotations

from packaging.version import Version


def _airflow_version() -> tuple[int, int, int]:
    from airflow import __version__

    return Version(Version(__version__).base_version).release[:3]  # type: ignore[return-value]


AIRFLOW_V_3_0_PLUS: bool = _airflow_version() >= (3, 0, 0)
AIRFLOW_V_3_3_PLUS: bool = _airflow_version() >= (3, 3, 0)
"""``dag.test()`` parks a human-in-the-loop task in ``awaiting_input`` and waits for its answer."""
