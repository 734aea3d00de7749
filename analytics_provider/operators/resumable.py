"""``ResumableJobMixin`` from ``airflow.providers.common.compat.sdk``, or a stand-in where it is missing.

Airflow 3.3 has the mixin (durable execution); common-compat 1.23 hands it out on every Airflow
version, as a stand-in that submits on every try before 3.3. An older common-compat (installed
with the constraints of Airflow 3.0 to 3.2) has neither: then this module's stand-in behaves as
common-compat's does, so the operators run as they did before durability existed.
"""

from __future__ import annotations

from typing import Any

try:
    from airflow.providers.common.compat.sdk import ResumableJobMixin
except ImportError:  # apache-airflow-providers-common-compat < 1.23

    class ResumableJobMixin:  # type: ignore[no-redef]
        """Submits a new job on every try: there is no task state store to resume from."""

        external_id_key: str = "remote_job_id"

        def __init__(self, *, durable: bool = False, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.durable = False

        def execute_resumable(self, context: Any) -> Any:
            external_id = self.submit_job(context)  # type: ignore[attr-defined]
            self.poll_until_complete(external_id, context)  # type: ignore[attr-defined]
            return self.get_job_result(external_id, context)  # type: ignore[attr-defined]


__all__ = ["ResumableJobMixin"]
