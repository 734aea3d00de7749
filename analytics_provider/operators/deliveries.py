"""The operator that applies delivery files: data schedules and data alerts as code."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analytics_provider.exceptions import AnalyticsParameterError, refused
from analytics_provider.lineage_mixin import LineageFunction
from analytics_provider.operators.analytics import is_templated
from analytics_provider.operators.as_code import AsCodeOperator

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from analytics_provider.deliveries.check import Declared


class AnalyticsApplyDeliveriesOperator(AsCodeOperator):
    """Make the service's data schedules and data alerts what the delivery files declare.

    :param path: a delivery file, or a folder of them (``*.yml``, ``*.yaml``), relative to the
        DAG file's folder unless absolute (templated).
    :param scope: the name these files' resources carry in their titles (``[managed:
        sales/weekly-sales]``); resources of other scopes are never touched. Needed by ``prune``.
        Resources made without a scope (before scopes) are adopted by the first scope declaring
        their key, and never pruned.
    :param prune: delete the resources of the scope whose key no file declares any more (off:
        they are reported and left as they are). Resources the files never managed are never
        touched.
    :param dry_run: plan and log, write nothing. The result then holds the plan to apply later as it
        is (``saved``): a review shows it, and an apply task takes it as ``plan``.
    :param plan: apply exactly this saved plan (templated: ``plan_task.output``, the result of a
        task with ``dry_run=True``, or a plan saved by ``manage plan --out``) instead of planning:
        the files are not read; the resources it touches are read again first and, if any changed
        since it was made, nothing is written ("stale plan: plan again"). Not with ``path``.
    :param analytics_conn_id: the ``analytics`` connection (templated).

    The files are checked when the DAG is parsed (a finding is an import error of the DAG, at its
    file and line), and again with the service's answers before anything is written (the
    dashboards, reports and widgets they name must exist). The files are never rendered: the
    service's own placeholders (``{{$today}}``) reach it as written. The result (XCom): the plan's
    counts and changes, and ``applied``.
    """

    template_fields: Sequence[str] = (*AsCodeOperator.template_fields, "path", "plan")
    ui_color = "#fff3e0"
    takes_saved_plan = True

    def __init__(
        self,
        *,
        path: str | None = None,
        scope: str | None = None,
        prune: bool = False,
        plan: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.path = path
        self.scope = scope
        self.prune = prune
        self.plan = plan
        self.check_flags(prune=prune)
        if plan is not None:
            given = {name: value for name, value in (("path", path), ("scope", scope), ("prune", prune),
                                                     ("dry_run", self.is_dry_run)) if value not in (None, False)}
            if given:
                raise refused(self.task_id, ", ".join(given), given,
                              "left out with plan= (the saved plan holds what it applies)")
            self.check_saved_plan(plan)
            return
        from analytics_provider.deliveries.check import scope_problem  # what the checks need: loaded when one is made

        problem = scope_problem(scope) or (prune and scope is None and
                                           "a name with prune=True (the name these files' resources carry)")
        if problem:
            raise refused(self.task_id, "scope", scope, problem)
        if not isinstance(path, str) or not path:
            raise refused(self.task_id, "path", path, "a delivery file or a folder of them")
        if not is_templated(path):
            self.declared()  # parse time: a finding is the DAG's import error

    def resolved_path(self) -> Path:
        path = Path(str(self.path))
        if path.is_absolute():
            return path
        dag_file = getattr(getattr(self, "dag", None), "fileloc", None)
        return (Path(dag_file).parent / path) if dag_file else path

    def declared(self) -> list[Declared]:
        """The files' objects; findings refused with every one at its file and line."""
        path = self.resolved_path()
        if not path.exists():
            raise refused(self.task_id, "path", str(path), "a delivery file or a folder of them that exists")
        from analytics_provider.deliveries.check import check
        from analytics_provider.deliveries.files import load

        declared, found = check(load(path))
        _refuse(self.task_id, found)
        return declared

    def execute(self, context: Context) -> dict[str, Any]:
        from analytics_provider.deliveries.check import check_references
        from analytics_provider.deliveries.plan import plan_deliveries, targets
        from analytics_provider.deliveries.saved import apply_deliveries, save_deliveries

        self.check_storage_at_start()
        if self.plan is not None:
            return self._apply_saved(context)
        with self.closing_hook():
            declared = self.declared()
            titles: dict[tuple[str, int], str] = {}
            _refuse(self.task_id, check_references(declared, self.hook, titles))
            seen: dict[tuple[str, int], Any] = {}
            plan = plan_deliveries(self.hook, declared, scope=self.scope, prune=self.prune, seen=seen,
                                   titles=titles)
            self.lineage_targets = targets(plan)
            created: list[tuple[str, int]] = []

            def apply() -> int:
                try:
                    return apply_deliveries(self.hook, plan, seen, self.task_id, scope=self.scope, prune=self.prune,
                                            created=created, once=self.consent(context).once)
                finally:
                    self.lineage_targets += created

            result = self.log_and_apply(plan, apply)
            if self.is_dry_run:
                result["saved"] = self.kept_small(save_deliveries(self.hook, plan, seen, scope=self.scope,
                                                                  prune=self.prune))
            return result

    def _apply_saved(self, context: Context) -> dict[str, Any]:
        """Apply the saved plan exactly (or nothing: stale, edited, another version's)."""
        from analytics_provider.deliveries.saved import apply_saved_deliveries

        saved, changes = self.saved_changes(self.plan, also=", or a plan saved by manage plan --out")
        created: list[tuple[str, int]] = []
        self.lineage_targets = [(c["write"]["kind"], c["write"]["id"]) for c in changes
                                if isinstance(c.get("write"), dict) and c["write"].get("id") is not None]
        with self.closing_hook():
            try:
                applied = apply_saved_deliveries(self.hook, saved, self.task_id, created, self.consent(context),
                                                 self.applying)
            finally:
                self.lineage_targets += created
        return self.saved_result(saved, changes, applied)

    def writes_bounded_by(self) -> str:
        return "the plan's scope (data schedules and alerts carrying its marker)"

    describe_lineage = LineageFunction("describe_deliveries")


def _refuse(task_id: str, found: Sequence[Any]) -> None:
    if found:
        raise AnalyticsParameterError(
            f"{task_id}: {len(found)} finding(s) in the delivery files (nothing was written):\n"
            + "\n".join(d.format() for d in found)
        )
