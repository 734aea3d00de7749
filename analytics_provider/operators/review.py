"""A person's approval of an upstream plan (or AML validation) before it is applied, on Airflow's
human-in-the-loop ``ApprovalOperator`` (Airflow 3.1 and later).

Importing this module loads Airflow's ``hitl`` module (about 25 ms), so it is kept out of the other
operators' modules: only a DAG file that uses the review step pays for it.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from analytics_provider.exceptions import AnalyticsParameterError, refused
from analytics_provider.lineage_mixin import LineageFunction, OpenLineageMixin

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context, TaskGroup

NEEDS_HITL = (
    "AnalyticsReviewPlanOperator needs Airflow 3.1 or later (human-in-the-loop tasks: "
    "airflow.providers.standard.operators.hitl, {why}). Without a review step, save the plan and apply "
    "exactly it: the plan task's result passed as plan= to the apply task (or `python -m "
    "analytics_provider.manage plan PATH --out PLAN.json`, then `manage apply --plan PLAN.json`): "
    "see the docs page 'Reviewed changes'"
)

try:
    from airflow.providers.standard.operators.hitl import ApprovalOperator, HITLOperator
except Exception as exc:  # Airflow 2.11 and 3.0: no module, or the provider refuses (AirflowOptionalProvider...)
    _MISSING: str | None = f"{type(exc).__name__}: {exc}"
    from airflow.providers.common.compat.sdk import BaseOperator as ApprovalOperator  # type: ignore[assignment]
    _TAKES_RESPONSE_TIMEOUT = True
else:
    _MISSING = None
    # The standard provider before 1.13 (Airflow 3.1's constraints) bounds the wait by execution_timeout.
    _TAKES_RESPONSE_TIMEOUT = "response_timeout" in inspect.signature(HITLOperator.__init__).parameters


SHOWN_DIGEST = "shown_digest"
"""The XCom key of the digest of the saved plan a waiting review shows."""


class AnalyticsReviewPlanOperator(OpenLineageMixin, ApprovalOperator):
    """Ask a person to approve the upstream plan before the apply task runs.

    :param plan: the upstream task's result (``plan_task.output``, templated): a plan of an access
        sync or of the deliveries (dry run or saved), or an AML validation's result.
    :param max_rows: rows of the plan the request shows (the total is always said).
    :param fail_on_reject: fail this task on a reject or a time-out (default: skip the apply).
    :param response_timeout: how long to wait for an answer (a ``timedelta``); then the answer is
        "Reject". With the standard provider before 1.13 it is passed on as ``execution_timeout``.
    :param assigned_users: who may answer (``{"id": ..., "name": ...}``, one or a list); default:
        whoever may edit the DAG's runs.
    :param notifiers: Airflow notifiers called when the request is made (Slack, e-mail...).
    :param subject: the request's headline (templated); default: what the plan does, in counts.

    A plan that changes nothing is not put to anyone: the task succeeds at once and says so. The
    result is Airflow's answer (``chosen_options``, ``responded_by_user``...) with ``reviewed`` and,
    for a saved plan, the ``digest`` of the plan shown (the request's body shows it too): the apply
    task given this result as ``approved`` refuses a plan whose content differs.
    Any other keyword goes to :class:`~airflow.providers.standard.operators.hitl.ApprovalOperator`.
    """

    template_fields: Sequence[str] = ("subject", "body", "plan")
    template_fields_renderers: ClassVar[dict[str, str]] = {"plan": "json", "body": "md"}
    ui_color = "#fff8e1"
    describe_lineage = LineageFunction("describe_review")

    def __init__(
        self,
        *,
        plan: Any,
        max_rows: int | None = None,
        subject: str | None = None,
        fail_on_reject: bool = False,
        **kwargs: Any,
    ) -> None:
        task_id = kwargs.get("task_id", "?")
        if _MISSING is not None:
            raise AnalyticsParameterError(f"{task_id}: " + NEEDS_HITL.format(why=_MISSING))
        from analytics_provider.review_text import REVIEW_ROWS

        for name in ("body", "defaults", "options"):
            if name in kwargs:
                raise refused(task_id, name, kwargs[name], "left out: the review sets it (the plan is the body, "
                                                           "a time-out answers Reject)")
        if max_rows is None:
            max_rows = REVIEW_ROWS
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
            raise refused(task_id, "max_rows", max_rows, "a number of rows (1 or more)")
        if not isinstance(fail_on_reject, bool):
            raise refused(task_id, "fail_on_reject", fail_on_reject, "True or False")
        if not _TAKES_RESPONSE_TIMEOUT and "response_timeout" in kwargs:
            kwargs["execution_timeout"] = kwargs.pop("response_timeout")
        super().__init__(subject=subject or "", body=None, defaults=[ApprovalOperator.REJECT],
                         fail_on_reject=fail_on_reject, **kwargs)
        self.plan = plan
        self.max_rows = max_rows

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        """Render, then keep the real plan apart: the rendered ``plan`` field, which Airflow shows in
        its UI and keeps in its database, holds it with every address masked (a webhook's token: the
        writes of a saved plan carry the real ones); the task reads the real one (its digest)."""
        super().render_template_fields(context, jinja_env)
        from analytics_provider.deliveries.shown import masked_fields

        self.real_plan = self.plan
        self.plan = masked_fields(self.plan)

    def execute(self, context: Context) -> Any:
        from analytics_provider import review_text

        plan = getattr(self, "real_plan", self.plan)
        if not (review_text.is_plan(plan) or review_text.is_validation(plan)):
            raise refused(self.task_id, "plan", plan, "the result of a plan task (an access sync or the deliveries "
                                                      "with dry_run=True), or of an AML validation")
        shown = review_text.saved_digest(plan)
        plan = self._read_by_reference(plan)
        problem = review_text.disagreement(plan)
        if problem:
            raise refused(self.task_id, "plan", problem, "a plan whose counts and rows are those of the writes its "
                                                         "saved plan sends (planned again, not edited)")
        if not review_text.needs_review(plan):
            self.log.info("The plan changes nothing: no review needed, nothing put to anyone")
            return {"chosen_options": [self.APPROVE], "params_input": {}, "responded_by_user": None,
                    "reviewed": False, "digest": shown}
        self.subject = self.subject or review_text.subject(plan)
        self.body = review_text.body(plan, self.max_rows)
        if shown is not None:
            context["ti"].xcom_push(key=SHOWN_DIGEST, value=shown)  # kept while the task waits
        self.log.info("Asking for a review: %s\n%s", self.subject, self.body)
        return super().execute(context)

    def _read_by_reference(self, plan: Any) -> Any:
        """``plan`` with the saved plan it names by reference read back (checked as the apply checks it),
        so that whether to ask, and what is shown, come from the writes the apply will send: the XCom's
        counts and rows alone, edited to nothing, let a stored plan pass unasked."""
        from analytics_provider.plans.by_reference import is_reference, resolved

        if isinstance(plan, Mapping) and is_reference(plan.get("saved")):
            return {**plan, "saved": resolved(plan["saved"], self.task_id)}
        return plan

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        answer = super().execute_complete(context, event)
        shown = context["ti"].xcom_pull(task_ids=self.task_id, key=SHOWN_DIGEST, map_indexes=context["ti"].map_index)
        return {**answer, "reviewed": True, "digest": shown}


def plan_review_apply(group_id: str, operator: type[Any], *, review: Mapping[str, Any] | None = None,
                      **arguments: Any) -> TaskGroup:
    """The three tasks of a reviewed change, in a task group ``group_id``: ``plan`` (``operator``
    with ``arguments`` and ``dry_run=True``), ``review`` (:class:`AnalyticsReviewPlanOperator` of
    that plan, with the ``review`` arguments: ``assigned_users``, ``response_timeout``,
    ``notifiers``...), and ``apply`` (``operator`` applying exactly the reviewed plan: ``plan=``, with
    the review's answer as ``approved=``, and the same ``max_deletes``, ``allow_delete_all`` and
    ``plan_storage``, and for an access sync the same ``groups``, ``group_ids`` or ``attributes``,
    which bound every write of the plan).
    ``operator`` is one that takes a saved plan (:class:`AnalyticsApplyDeliveriesOperator`,
    :class:`AnalyticsSyncGroupMembersOperator`)."""
    from airflow.providers.common.compat.sdk import TaskGroup

    if not getattr(operator, "takes_saved_plan", False):
        raise refused(group_id, "operator", getattr(operator, "__name__", operator),
                      "an operator that applies a saved plan (AnalyticsApplyDeliveriesOperator, "
                      "AnalyticsSyncGroupMembersOperator)")
    for name in ("task_id", "dry_run", "plan"):
        if name in arguments:
            raise refused(group_id, name, arguments[name], "left out: plan_review_apply sets it")
    held = {k: arguments[k] for k in ("analytics_conn_id", "max_deletes", "allow_delete_all", "plan_storage", "groups",
                                      "group_ids", "attributes") if k in arguments}
    with TaskGroup(group_id) as group:
        plan = operator(task_id="plan", dry_run=True, **arguments)
        asked = AnalyticsReviewPlanOperator(task_id="review", plan=plan.output, **dict(review or {}))
        apply = operator(task_id="apply", plan=plan.output, approved=asked.output, **held)
        plan >> asked >> apply
    return group
