"""``ResumableJobMixin`` (durable execution) wherever Airflow has it, and a stand-in where it has not.

common-compat 1.23 hands out the mixin on every Airflow: the real one on 3.3, a stand-in that
submits on every try before. Older common-compat releases (what each Airflow's constraints file
pins; 1.23 also needs Python 3.11) have no mixin at all: then Airflow 3.3's own mixin is taken
from ``airflow.sdk`` (the one import that common-compat does not cover there), and before 3.3 this
module's stand-in, which behaves as common-compat's does (the operators run as they did before
durability existed).
"""

from __future__ import annotations

from typing import Any

try:
    from airflow.providers.common.compat.sdk import ResumableJobMixin
except ImportError:  # apache-airflow-providers-common-compat < 1.23 (Python 3.10)
    try:
        from airflow.sdk import ResumableJobMixin  # type: ignore[no-redef,unused-ignore]
    except ImportError:  # Airflow < 3.3: no task state store to resume from

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
