"""What the operators that make the service follow code or data share: plan, log, apply."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseOperator

from analytics_provider.exceptions import AnalyticsParameterError, refused
from analytics_provider.hook_task import HookTask
from analytics_provider.lineage_mixin import OpenLineageMixin

if TYPE_CHECKING:
    from analytics_provider.plans.plan import Plan


class AsCodeOperator(HookTask, OpenLineageMixin, BaseOperator):
    """Base of the access syncs and the deliveries: a plan, logged as a table and returned as
    XCom (with ``dry_run`` and ``applied``), then applied unless ``dry_run``.

    ``dry_run`` is kept as ``is_dry_run``: ``dry_run()`` is a method of Airflow's ``BaseOperator``.
    ``lineage_targets`` are the service's objects written (``("groups", 7)``), for the lineage.

    :param max_deletes: refuse a plan that removes more than this many (default: no bound).
    :param allow_delete_all: allow a plan that removes everything of its scope, or removes while
        the input declares nothing (an empty query result, files emptied): refused otherwise.
    :param max_xcom_bytes: a dry run's saved plan larger than this (default 256 KiB, about a
        thousand changes) is stored by reference: written to ``plan_storage`` and named in the XCom
        with its size and SHA-256, beside what it does (``what``, ``counts``).
    :param plan_storage: the folder (a path, or an object-storage URL that every worker reaches)
        of the saved plans stored by reference; default: ``[common.io] xcom_objectstorage_path``
        when set, else ``$AIRFLOW_HOME/analytics_provider/plans`` (one machine only).
    """

    template_fields: Sequence[str] = ("analytics_conn_id",)

    def __init__(
        self,
        *,
        analytics_conn_id: str = "analytics_default",
        dry_run: bool = False,
        max_deletes: int | None = None,
        allow_delete_all: bool = False,
        max_xcom_bytes: int | None = None,
        plan_storage: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.max_xcom_bytes = max_xcom_bytes
        self.plan_storage = plan_storage
        if max_xcom_bytes is not None and (isinstance(max_xcom_bytes, bool) or not isinstance(max_xcom_bytes, int)
                                           or max_xcom_bytes < 1):
            raise refused(self.task_id, "max_xcom_bytes", max_xcom_bytes, "a number of bytes (1 or more) or None")
        self.analytics_conn_id = analytics_conn_id
        self.is_dry_run = dry_run
        self.max_deletes = max_deletes
        self.allow_delete_all = allow_delete_all
        self.lineage_targets: list[tuple[str, int]] = []
        self.check_flags(dry_run=dry_run, allow_delete_all=allow_delete_all)
        if max_deletes is not None and (isinstance(max_deletes, bool) or not isinstance(max_deletes, int)
                                        or max_deletes < 0):
            raise refused(self.task_id, "max_deletes", max_deletes, "a number of removals (0 or more) or None")

    def check_flags(self, **flags: Any) -> None:
        for name, flag in flags.items():
            if not isinstance(flag, bool):
                raise refused(self.task_id, name, flag, "True or False")

    def saved_changes(self, plan: Any, also: str = "") -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The saved plan ``plan=`` names (a dry run's result, or its ``saved``) and its changes, logged
        before any is applied; refused, naming the task, when ``plan`` holds no saved plan."""
        from analytics_provider.plans.by_reference import resolved

        saved = resolved(plan.get("saved", plan) if isinstance(plan, dict) else plan, self.task_id)
        changes = saved.get("changes") if isinstance(saved, dict) else None
        if not isinstance(changes, list):
            raise refused(self.task_id, "plan", plan,
                          f"a saved plan: the result of a task with dry_run=True (plan_task.output){also}")
        self.log.info("Applying the saved plan exactly (%d change(s)):\n%s", len(changes),
                      "\n".join(f"{c.get('action')}  {c.get('subject')}  {c.get('target')}" for c in changes))
        return saved, changes

    def kept_small(self, saved: dict[str, Any]) -> dict[str, Any]:
        """The saved plan for the XCom: itself, or past ``max_xcom_bytes`` its reference (the plan
        written to the plan storage: :mod:`~analytics_provider.plans.by_reference`)."""
        from analytics_provider.plans.by_reference import MAX_XCOM_BYTES, by_reference, is_reference

        kept = by_reference(saved, self.plan_storage or default_plan_storage(), self.max_xcom_bytes or MAX_XCOM_BYTES)
        if is_reference(kept):
            self.log.info("The saved plan (%d bytes) is stored by reference at %s (sha256 %s)", kept["bytes"],
                          kept["location"], kept["sha256"])
        return kept

    def saved_result(self, saved: dict[str, Any], changes: list[dict[str, Any]], applied: int) -> dict[str, Any]:
        """What an applied saved plan returns (and reports to lineage): its changes without their writes."""
        self.log.info("Applied %d change(s) of the saved plan", applied)
        result = {key: saved.get(key) for key in ("what", "counts", "left")}
        result.update(changes=[{k: v for k, v in c.items() if k != "write"} for c in changes],
                      dry_run=False, applied=applied, saved_plan=saved.get("sha256"))
        self.lineage_result = result
        return result

    def log_and_apply(self, plan: Plan, apply: Callable[[], int]) -> dict[str, Any]:
        """Log the plan, then (unless a dry run, or nothing to do) apply it; the task's result. A
        destructive plan without consent is refused, dry run or not (:meth:`Plan.refusal`)."""
        mode = "dry run: nothing is written" if self.is_dry_run else "applying it now"
        self.log.info("Plan (%s)\n%s", mode, plan.table())
        refusal = plan.refusal(self.max_deletes, self.allow_delete_all)
        if refusal:
            raise AnalyticsParameterError(f"{self.task_id}: {refusal}")
        result = {**plan.to_xcom(), "dry_run": self.is_dry_run, "applied": 0}
        self.lineage_result = result
        if self.is_dry_run or plan.is_empty:
            return result
        result["applied"] = apply()  # a failure part-way says what was applied (SyncApplyError)
        self.log.info("Applied %d change(s): %s", result["applied"], plan.summary())
        return result


def default_plan_storage() -> str:
    """``[common.io] xcom_objectstorage_path`` when set (Airflow's object-storage XCom), else a folder
    under ``$AIRFLOW_HOME``."""
    from airflow.providers.common.compat.sdk import conf

    shared = conf.get("common.io", "xcom_objectstorage_path", fallback="")
    home = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
    return shared.rstrip("/") + "/analytics_provider/plans" if shared else os.path.join(home, "analytics_provider",
                                                                                       "plans")
