"""Every try of a deferred task starts from ``execute``, on Airflow 3.0 too.

Airflow 3.0 keeps a deferred task's ``next_method`` and ``next_kwargs`` when its try fails, so the
next try is resumed with the previous try's trigger event instead of running ``execute`` (3.1 and
later clear them). A job that failed would then fail every retry without being submitted again,
and a wait ended by an outage would end every retry the same way. The trigger's event names the
try that deferred (``try_number``); a resume with another try's event runs ``execute`` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context


class FreshRetryMixin:
    """Resume at the deferral's method only on the try that deferred."""

    def resume_execution(self, next_method: str, next_kwargs: dict[str, Any] | None, context: Context) -> Any:
        event = (next_kwargs or {}).get("event")
        deferred_on = event.get("try_number") if isinstance(event, Mapping) else None
        try_number = context["ti"].try_number
        if deferred_on is not None and deferred_on != try_number:
            self.log.info(  # type: ignore[attr-defined]
                "Try %s was handed the trigger event of try %s (Airflow 3.0 keeps it); starting afresh",
                try_number,
                deferred_on,
            )
            return self.execute(context)  # type: ignore[attr-defined]
        return super().resume_execution(next_method, next_kwargs, context)  # type: ignore[misc]
