"""Validating the AML project's branch at a commit, and publishing it to production (only the
validated commit, when given one), failing loudly with the compiler's diagnostics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

from analytics_provider.exceptions import AnalyticsJobError, refused
from analytics_provider.lineage_mixin import LineageFunction
from analytics_provider.operators.base import AnalyticsJobOperator

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context


class AnalyticsPublishError(AnalyticsJobError):
    """The publish (or validation) job ended in an error; the text lists every diagnostic on its own line."""


class AnalyticsBranchMovedError(AirflowFailException):
    """The branch is no longer at the validated commit: nothing was published (a retry cannot help)."""


class _AmlJobOperator(AnalyticsJobOperator):
    """What the validate and publish operators share: the job's result, and its diagnostics in a
    checkout (``project_dir``) when it failed."""

    job_name = "AML"

    def on_failure(self, context: Context, job_id: int, status: str, last_error_log: str | None) -> NoReturn:
        try:
            data = self._result_data(job_id)
        except Exception as exc:
            self.log.warning("The %s result could not be read: %s", self.job_name, exc)
            data = {}
        if data.get("status") == "error":
            self._raise_publish_error(job_id, status, data)
        super().on_failure(context, job_id, status, last_error_log)

    def _result_data(self, job_id: int) -> dict[str, Any]:
        result = self.hook.get_job_result(job_id) or {}
        return (result.get("result") or {}).get("data") or {}

    def _diagnostics(self, data: Mapping[str, Any]) -> list[str]:
        from analytics_provider.aml.diagnostics import format_diagnostic

        details = data.get("error_details") or {}
        diagnostics = details.get("diagnostics") or [] if isinstance(details, Mapping) else []
        return [format_diagnostic(d, getattr(self, "project_dir", None)) for d in diagnostics]

    def _raise_publish_error(self, job_id: int, status: str, data: Mapping[str, Any]) -> NoReturn:
        lines = self._diagnostics(data)
        for line in lines:
            self.log.error("%s", line)
        header = f"{self.job_name} job {job_id} failed: {data.get('error_type') or 'error'}"
        details = data.get("error_details")
        if not lines and details:
            lines = [str(details)]
        raise AnalyticsPublishError("\n".join([header, *lines]), job_id=job_id, status=status)


class AnalyticsValidateAmlProjectOperator(_AmlJobOperator):
    """Validate the AML project's branch at one commit (the service's ``submit_validate``) and wait.

    :param branch: the branch to validate (templated).
    :param commit_oid: the commit to validate (templated); default: the branch's head in
        ``repository``, read when the task runs.
    :param repository: the AML project's git repository (a URL or a path ``git ls-remote`` reads;
        default ``project_dir``); needed without ``commit_oid`` (templated).
    :param project_dir: a checkout of the AML project: diagnostics point at line and column
        (templated).

    Returns ``{"job_id", "project", "branch", "commit", "diagnostics"}``: what
    :class:`AnalyticsReviewPlanOperator` shows, and what the publish operator's ``validated`` takes.
    A validation with errors fails the task with every diagnostic.
    """

    job_name = "AML validate"
    describe_lineage = LineageFunction("describe_validate")
    template_fields: Sequence[str] = (*AnalyticsJobOperator.template_fields, "branch", "commit_oid",
                                      "repository", "project_dir")
    ui_color = "#e8f5e9"

    def __init__(
        self,
        *,
        branch: str,
        commit_oid: str | None = None,
        repository: str | None = None,
        project_dir: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if commit_oid is None and not (repository or project_dir):
            raise refused(self.task_id, "commit_oid", commit_oid,
                          "the commit to validate, or given a repository (or project_dir) to read "
                          "the branch's head from")
        self.branch = branch
        self.commit_oid = commit_oid
        self.repository = repository
        self.project_dir = project_dir
        self._reads_head = commit_oid is None

    def check_inputs(self) -> None:
        _check_branch(self.task_id, self.branch)
        if self.commit_oid is not None:
            _check_commit(self.task_id, "commit_oid", self.commit_oid)

    def uses_names(self) -> bool:
        return self._reads_head

    def resolve(self, context: Context) -> None:
        if self._reads_head:
            self.commit_oid = _head(self.task_id, _repository(self), self.branch)
            self.resolved = {"commit_oid": self.commit_oid}

    def submit(self, context: Context) -> dict[str, Any]:
        self.log.info("Validating branch %s at commit %s", self.branch, self.commit_oid)
        return self.hook.validate_aml_project(self.branch, str(self.commit_oid))

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        from analytics_provider.aml.branch import shown

        data = self._result_data(job_id)
        if data.get("status") == "error":
            self._raise_publish_error(job_id, "success", data)
        diagnostics = self._diagnostics(data)
        for line in diagnostics:
            self.log.warning("%s", line)
        repository = _repository(self)
        self.log.info("Branch %s validated at %s: %d diagnostic(s)", self.branch, self.commit_oid, len(diagnostics))
        return {"job_id": job_id, "project": shown(repository) if repository else None, "branch": self.branch,
                "commit": self.commit_oid, "diagnostics": diagnostics}


class AnalyticsPublishAmlProjectOperator(_AmlJobOperator):
    """Publish the AML project to production and wait for the result.

    :param object_mapping: ``{"datasets": {"<data_set_id>": "<dataset uname>"}}`` associates
        deploying objects with orphan reporting objects (templated).
    :param project_dir: a checkout of the AML project; with it, diagnostics point at line and
        column instead of character offsets, and custom charts can be checked first (templated).
    :param lint_custom_charts: check the project's custom chart definitions before publishing
        and refuse to publish when they have errors (needs ``project_dir``).
    :param validated: the result of :class:`AnalyticsValidateAmlProjectOperator` (``validate.output``,
        templated): publish only that commit. Right before publishing, the branch's head is read
        from ``repository``; when the branch moved since, nothing is published and the task fails.
        The branch validated must be the one the service publishes (its production branch): the
        job's ``target_commit`` is checked to be the validated commit.
    :param repository: the AML project's git repository (a URL or a path ``git ls-remote`` reads;
        default ``project_dir``), needed by ``validated`` (templated).

    Returns ``{"job_id", "target_commit", "objects"}`` (the objects created or updated).
    """

    job_name = "AML publish"

    describe_lineage = LineageFunction("describe_publish")
    template_fields: Sequence[str] = (*AnalyticsJobOperator.template_fields, "object_mapping", "project_dir",
                                      "validated", "repository")
    template_fields_renderers: ClassVar[dict[str, str]] = {"object_mapping": "json", "validated": "json"}

    def __init__(
        self,
        *,
        object_mapping: Mapping[str, Any] | None = None,
        project_dir: str | None = None,
        lint_custom_charts: bool = False,
        validated: Mapping[str, Any] | str | None = None,
        repository: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if lint_custom_charts and not project_dir:
            raise refused(self.task_id, "project_dir", project_dir,
                          "the AML project's folder when lint_custom_charts is on")
        if validated is not None and not (repository or project_dir):
            raise refused(self.task_id, "repository", repository,
                          "the AML project's git repository (or a project_dir) when validated is given: "
                          "the branch's head is read from it before publishing")
        self.object_mapping = object_mapping
        self.project_dir = project_dir
        self.lint_custom_charts = lint_custom_charts
        self.validated = validated
        self.repository = repository

    def check_inputs(self) -> None:
        if self.object_mapping is not None and not isinstance(self.object_mapping, Mapping):
            raise refused(self.task_id, "object_mapping", self.object_mapping, "a mapping")
        if self.validated is not None:
            self._validated_commit()
        if self.lint_custom_charts:
            self._lint()

    def _validated_commit(self) -> tuple[str, str]:
        """The validated ``(branch, commit)``; a value that is not a validation's result is refused."""
        validated = self.validated
        if not (isinstance(validated, Mapping) and isinstance(validated.get("branch"), str)
                and isinstance(validated.get("commit"), str)):
            raise refused(self.task_id, "validated", validated,
                          "the result of AnalyticsValidateAmlProjectOperator (a mapping with branch and commit)")
        _check_commit(self.task_id, "validated", validated["commit"])
        return validated["branch"], validated["commit"]

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
        if self.validated is not None:
            branch, commit = self._validated_commit()
            head = _head(self.task_id, _repository(self), branch)
            if not head.startswith(commit):
                raise AnalyticsBranchMovedError(
                    f"{self.task_id}: branch {branch!r} moved since it was validated: validated at {commit}, "
                    f"now at {head}; nothing was published (validate and review the new commit)")
            self.log.info("Branch %s is still at the validated commit %s: publishing it", branch, commit)
        return self.hook.publish_aml_project(self.object_mapping)

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        data = self._result_data(job_id)
        if data.get("status") == "error":
            self._raise_publish_error(job_id, "success", data)
        objects = data.get("objects_status") or []
        for obj in objects:
            self.log.info("%s %s %s (%s)", obj.get("status"), obj.get("type"), obj.get("uname"), obj.get("title"))
        target = data.get("target_commit")
        if self.validated is not None and target:
            branch, commit = self._validated_commit()
            if not str(target).startswith(commit):
                raise AnalyticsPublishError(
                    f"{self.task_id}: AML publish job {job_id} published commit {target}, not the validated "
                    f"{commit} of branch {branch!r} (the branch moved during the publish, or it is not the "
                    "production branch): review what is live now", job_id=job_id, status="success")
        return {"job_id": job_id, "target_commit": target, "objects": objects}


def _check_branch(task_id: str, branch: Any) -> None:
    if not isinstance(branch, str) or not branch.strip() or any(c.isspace() for c in branch):
        raise refused(task_id, "branch", branch, "a branch name (no spaces)")


def _check_commit(task_id: str, parameter: str, commit: Any) -> None:
    from analytics_provider.aml.branch import COMMIT

    if not isinstance(commit, str) or not COMMIT.match(commit):
        raise refused(task_id, parameter, commit, "a commit id (7 to 64 lowercase hexadecimal digits)")


def _repository(task: Any) -> str | None:
    return task.repository or task.project_dir


def _head(task_id: str, repository: str | None, branch: str) -> str:
    """The branch's head; failing to read it fails the task (nothing was sent)."""
    from analytics_provider.aml.branch import BranchHeadError, branch_head

    try:
        return branch_head(str(repository), branch)
    except BranchHeadError as exc:
        raise AirflowException(f"{task_id}: {exc}; nothing was sent") from None
