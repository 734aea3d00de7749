"""What the operators that make the service follow code or data share: plan, log, apply."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseOperator

from analytics_provider.exceptions import AnalyticsParameterError, refused
from analytics_provider.hook_task import HookTask
from analytics_provider.lineage_mixin import OpenLineageMixin
from analytics_provider.operators.analytics import is_templated

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
        thousand changes; at most 16 MiB) is stored by reference: written to ``plan_storage`` and named in the XCom
        with its size and SHA-256, beside what it does (``what``, ``counts``).
    :param plan_storage: the folder (an absolute path, an object-storage URL that every worker
        reaches, or an ``ObjectStoragePath``) of the saved plans stored by reference, and of the
        records of the saved plans applied (a plan is applied once: ``applied-<digest>.json``),
        checked when the DAG is parsed; default: ``[common.io] xcom_objectstorage_path`` when set,
        else ``$AIRFLOW_HOME/analytics_provider/plans`` (one machine only). Both hold for a saved
        plan applied with ``plan=`` as for one made by the task. It also holds the apply locks
        (``lock-<kind>-<scope>.json``), taken by every apply: of a saved plan, and of the plan a
        task just made (docs/reviewed_changes.rst says which locks).
    :param approved: with ``plan=``: the review's result (``review_task.output``, templated) or the
        digest it approved; a saved plan whose content differs is refused, and so is a review's
        result whose answer is not Approve. ``plan_review_apply`` passes it.
    """

    template_fields: Sequence[str] = ("analytics_conn_id", "approved")

    def __init__(
        self,
        *,
        analytics_conn_id: str = "analytics_default",
        dry_run: bool = False,
        max_deletes: int | None = None,
        allow_delete_all: bool = False,
        max_xcom_bytes: int | None = None,
        plan_storage: Any = None,
        approved: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.max_xcom_bytes = None
        if max_xcom_bytes is not None:
            from analytics_provider.api.call.limits import task_setting  # (5 ms of import: given only)

            self.max_xcom_bytes = task_setting(max_xcom_bytes, "max_xcom_bytes", self.task_id)
        self.plan_storage = plan_storage
        if plan_storage is not None:
            from analytics_provider.plans.by_reference import STORAGE_FORMS, storage_problem

            problem = storage_problem(plan_storage)
            if problem is not None:
                raise refused(self.task_id, "plan_storage", plan_storage, f"{STORAGE_FORMS} ({problem})")
        self.analytics_conn_id = analytics_conn_id
        self.approved = approved
        self.is_dry_run = dry_run
        self.max_deletes = max_deletes
        self.allow_delete_all = allow_delete_all
        self.lineage_targets: list[tuple[str, int]] = []
        self.check_flags(dry_run=dry_run, allow_delete_all=allow_delete_all)
        if max_deletes is not None and (isinstance(max_deletes, bool) or not isinstance(max_deletes, int)
                                        or max_deletes < 0):
            raise refused(self.task_id, "max_deletes", max_deletes, "a number of removals (0 or more) or None")

    def check_storage_at_start(self) -> None:
        """Refuse, at the start of the task and before any request, a ``file://`` plan storage whose
        folder is not there on this worker: an URL's folder is not made (a path's is), so the plan
        task would read the service and then fail to store its plan, and the apply task to record
        what it applied. Not at parse: the DAG processor may not be the machine that runs the task,
        and parsing makes no folder."""
        storage = self.plan_storage
        if storage is None or is_templated(storage):
            return
        if hasattr(storage, "protocol"):
            folder = storage.path if storage.protocol in ("file", "local") else None
        else:
            text = str(storage)
            folder = text[len("file://"):] if text.lower().startswith("file://") else None
        if folder and not os.path.isdir(folder):
            from analytics_provider.plans.by_reference import STORAGE_FORMS

            raise refused(self.task_id, "plan_storage", storage,
                          f"{STORAGE_FORMS}; the folder {folder} of this file:// URL is not there on this worker (an "
                          f"URL's folder is not made: make it, or give the path {folder}, whose folder is made)")

    def check_flags(self, **flags: Any) -> None:
        for name, flag in flags.items():
            if not isinstance(flag, bool):
                raise refused(self.task_id, name, flag, "True or False")

    def check_saved_plan(self, plan: Any) -> None:
        """At parse, when ``plan=`` is a saved plan itself (not a task's output): refuse what
        ``max_deletes`` and ``allow_delete_all`` do not consent to, and a bad ``approved``."""
        if isinstance(self.approved, (str, dict)) and not is_templated(self.approved):
            approved_digest(self.task_id, self.approved)
        saved = plan.get("saved", plan) if isinstance(plan, dict) else None
        if isinstance(saved, dict) and isinstance(saved.get("changes"), list):
            from analytics_provider.plans.saved import SavedPlanError, consented

            try:
                consented(saved, self.task_id, self.consent())
            except SavedPlanError as exc:
                raise AnalyticsParameterError(str(exc)) from None

    def consent(self, context: Any = None) -> Any:
        """What this task consents to beside the saved plan: its approved digest and removals; with
        the task's ``context``, the records of applied plans (in ``plan_storage``) it is held to."""
        from analytics_provider.plans.once import AppliedPlans, default_plan_storage
        from analytics_provider.plans.saved import Consent

        approved = None if self.approved is None else approved_digest(self.task_id, self.approved)
        once = None
        if context is not None:
            once = AppliedPlans(self.plan_storage or default_plan_storage(), self.who(context))
        return Consent(approved, self.max_deletes, self.allow_delete_all, once=once)

    def who(self, context: Any) -> str:
        """This task's try, as a record of an applied plan names it."""
        ti = context.get("ti")
        index = getattr(ti, "map_index", -1)
        said = [f"task {self.task_id}" + (f"[{index}]" if isinstance(index, int) and index >= 0 else "")]
        for label, value in (("DAG", getattr(ti, "dag_id", None) or getattr(context.get("dag"), "dag_id", None)),
                             ("run", getattr(ti, "run_id", None) or context.get("run_id")),
                             ("try", getattr(ti, "try_number", None))):
            if value is not None:
                said.append(f"{label} {value}")
        return ", ".join(said)

    def saved_changes(self, plan: Any, also: str = "") -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The saved plan ``plan=`` names (a dry run's result, or its ``saved``) and its changes, logged
        before anything is checked; refused, naming the task, when ``plan`` holds no saved plan."""
        from analytics_provider.plans.by_reference import resolved

        saved = resolved(plan.get("saved", plan) if isinstance(plan, dict) else plan, self.task_id)
        changes = saved.get("changes") if isinstance(saved, dict) else None
        if not isinstance(changes, list):
            raise refused(self.task_id, "plan", plan,
                          f"a saved plan: the result of a task with dry_run=True (plan_task.output){also}")
        self.log.info("The saved plan (%d change(s)), checked before anything is written:\n%s", len(changes),
                      "\n".join(f"{c.get('action')}  {c.get('subject')}  {c.get('target')}" for c in changes))
        return saved, changes

    def kept_small(self, saved: dict[str, Any]) -> dict[str, Any]:
        """The saved plan for the XCom: itself, or past ``max_xcom_bytes`` its reference (the plan
        written to the plan storage: :mod:`~analytics_provider.plans.by_reference`)."""
        from analytics_provider.plans.by_reference import MAX_XCOM_BYTES, by_reference, is_reference
        from analytics_provider.plans.once import default_plan_storage

        kept = by_reference(saved, self.plan_storage or default_plan_storage(), self.max_xcom_bytes or MAX_XCOM_BYTES,
                            self.task_id)
        if is_reference(kept):
            self.log.info("The saved plan (%d bytes) is stored by reference at %s (sha256 %s)", kept["bytes"],
                          kept["location"], kept["sha256"])
        return kept

    def applying(self) -> None:
        """Logged once the saved plan passed every check, saying what vouches for it."""
        vouched = ("its content is the one the review approved (approved=)" if self.approved is not None else
                   "no review vouches for it (no approved=): it is applied as the plan= value holds it")
        self.log.info("Applying the saved plan exactly: %s; every write is within %s; nothing it touches changed "
                      "since; it is recorded as applied (once)", vouched, self.writes_bounded_by())

    def writes_bounded_by(self) -> str:
        """What every write of a saved plan was checked against, for the log."""
        return "the plan's own scope"

    def saved_result(self, saved: dict[str, Any], changes: list[dict[str, Any]], applied: int) -> dict[str, Any]:
        """What an applied saved plan returns (and reports to lineage): its changes without their writes."""
        self.log.info("Applied %d change(s) of the saved plan", applied)
        result = {key: saved.get(key) for key in ("what", "counts", "left")}
        from analytics_provider.plans.saved import digest

        result.update(changes=[{k: v for k, v in c.items() if k != "write"} for c in changes],
                      dry_run=False, applied=applied, saved_plan=digest(saved))
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


APPROVE = "Approve"
"""The option of Airflow's ``ApprovalOperator`` that approves (``ApprovalOperator.APPROVE``)."""


def approved_digest(task_id: str, approved: Any) -> str:
    """The digest ``approved`` gives: the review's result's ``digest`` when its answer is Approve (an
    answer that chose anything else approves nothing, whatever digest it carries), or the digest
    itself."""
    if isinstance(approved, dict) and approved.get("chosen_options") != [APPROVE]:
        raise refused(task_id, "approved", approved, f"the result of a review answered {APPROVE!r} "
                                                     "(chosen_options); this answer approves nothing: nothing was "
                                                     "written")
    found = approved.get("digest") if isinstance(approved, dict) else approved
    if not isinstance(found, str) or len(found) != 64 or any(c not in "0123456789abcdef" for c in found.lower()):
        raise refused(task_id, "approved", approved, "the review task's output (review_task.output), or the "
                                                     "64 hex digits of the digest it approved")
    return found.lower()
