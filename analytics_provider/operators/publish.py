"""Publishing the AML project to production, failing loudly with the compiler's diagnostics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from airflow.providers.common.compat.sdk import AirflowException

from analytics_provider.exceptions import AnalyticsJobError, refused
from analytics_provider.lineage_mixin import LineageFunction
from analytics_provider.operators.base import AnalyticsJobOperator

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context


class AnalyticsPublishError(AnalyticsJobError):
    """The publish job ended in an error; the text lists every diagnostic on its own line."""


class AnalyticsPublishAmlProjectOperator(AnalyticsJobOperator):
    """Publish the AML project to production and wait for the result.

    :param object_mapping: ``{"datasets": {"<data_set_id>": "<dataset uname>"}}`` associates
        deploying objects with orphan reporting objects (templated).
    :param project_dir: a checkout of the AML project; with it, diagnostics point at line and
        column instead of character offsets, and custom charts can be checked first (templated).
    :param lint_custom_charts: check the project's custom chart definitions before publishing
        and refuse to publish when they have errors (needs ``project_dir``).

    Returns ``{"job_id", "target_commit", "objects"}`` (the objects created or updated).
    """

    describe_lineage = LineageFunction("describe_publish")
    template_fields: Sequence[str] = (*AnalyticsJobOperator.template_fields, "object_mapping", "project_dir")
    template_fields_renderers: ClassVar[dict[str, str]] = {"object_mapping": "json"}

    def __init__(
        self,
        *,
        object_mapping: Mapping[str, Any] | None = None,
        project_dir: str | None = None,
        lint_custom_charts: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if lint_custom_charts and not project_dir:
            raise refused(self.task_id, "project_dir", project_dir,
                          "the AML project's folder when lint_custom_charts is on")
        self.object_mapping = object_mapping
        self.project_dir = project_dir
        self.lint_custom_charts = lint_custom_charts

    def check_inputs(self) -> None:
        if self.object_mapping is not None and not isinstance(self.object_mapping, Mapping):
            raise refused(self.task_id, "object_mapping", self.object_mapping, "a mapping")
        if self.lint_custom_charts:
            self._lint()

    def _lint(self) -> None:
        from analytics_provider.aml import lint_paths

        diagnostics = lint_paths([self.project_dir or "."])
        for diagnostic in diagnostics:
            (self.log.error if diagnostic.is_error else self.log.warning)("%s", diagnostic.format())
        errors = [d for d in diagnostics if d.is_error]
        if errors:
            raise AirflowException(
                f"custom chart check found {len(errors)} error(s); not publishing:\n"
                + "\n".join(d.format() for d in errors)
            )
        self.log.info("Custom charts checked: no errors")

    def submit(self, context: Context) -> dict[str, Any]:
        return self.hook.publish_aml_project(self.object_mapping)

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        data = self._result_data(job_id)
        if data.get("status") == "error":
            self._raise_publish_error(job_id, "success", data)
        objects = data.get("objects_status") or []
        for obj in objects:
            self.log.info("%s %s %s (%s)", obj.get("status"), obj.get("type"), obj.get("uname"), obj.get("title"))
        return {"job_id": job_id, "target_commit": data.get("target_commit"), "objects": objects}

    def on_failure(self, context: Context, job_id: int, status: str, last_error_log: str | None) -> NoReturn:
        try:
            data = self._result_data(job_id)
        except Exception as exc:
            self.log.warning("The publish result could not be read: %s", exc)
            data = {}
        if data.get("status") == "error":
            self._raise_publish_error(job_id, status, data)
        super().on_failure(context, job_id, status, last_error_log)

    def _result_data(self, job_id: int) -> dict[str, Any]:
        result = self.hook.get_job_result(job_id) or {}
        return (result.get("result") or {}).get("data") or {}

    def _raise_publish_error(self, job_id: int, status: str, data: Mapping[str, Any]) -> NoReturn:
        from analytics_provider.aml.diagnostics import format_diagnostic

        details = data.get("error_details") or {}
        diagnostics = details.get("diagnostics") or [] if isinstance(details, Mapping) else []
        lines = [format_diagnostic(d, self.project_dir) for d in diagnostics]
        for line in lines:
            self.log.error("%s", line)
        header = f"AML publish job {job_id} failed: {data.get('error_type') or 'error'}"
        if not lines and details:
            lines = [str(details)]
        raise AnalyticsPublishError("\n".join([header, *lines]), job_id=job_id, status=status)
