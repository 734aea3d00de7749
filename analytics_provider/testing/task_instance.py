"""A stand-in for the task instance in an operator's context, for tests that call ``execute`` directly."""

from __future__ import annotations

from typing import Any


class FakeTaskInstance:
    """What the job operators use of ``context["ti"]``: XCom pushes (kept in ``xcom``) and the try."""

    def __init__(self, try_number: int = 1) -> None:
        self.xcom: dict[str, Any] = {}
        self.stats_tags: dict[str, str] = {}  # read by Airflow 3.3's ResumableJobMixin
        self.try_number = try_number

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcom[key] = value
