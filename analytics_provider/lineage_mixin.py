"""The OpenLineage methods of every operator, without the lineage code: DAG files import the operators.

The OpenLineage provider calls ``get_openlineage_facets_on_*`` only in a task's process; those calls
import :mod:`analytics_provider.lineage`, which computes what the operator reports.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analytics_provider.lineage import Description, LineageRun


class OpenLineageMixin:
    """Lineage of an operator, for the OpenLineage provider.

    Each operator declares what it reports: ``describe_lineage = LineageFunction("describe_export")``
    (a function of :mod:`analytics_provider.lineage`, imported on the first call) or
    ``staticmethod(your_function)``; a subclass reports what its parent reports. The operators
    note the job and the task's result here as they finish: the provider extracts lineage in a
    forked process, where reading XComs back is not safe.
    """

    lineage_job_id: int | None = None
    lineage_result: Any = None
    describe_lineage: Callable[[LineageRun], Description] | None = None

    def get_openlineage_facets_on_start(self) -> Any:
        from analytics_provider.lineage import START, operator_lineage

        return operator_lineage(self, START)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        from analytics_provider.lineage import COMPLETE, operator_lineage

        return operator_lineage(self, COMPLETE)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        from analytics_provider.lineage import FAIL, operator_lineage

        return operator_lineage(self, FAIL)


class LineageFunction:
    """The function ``name`` of :mod:`analytics_provider.lineage`, imported when first called."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def function(self) -> Callable[[LineageRun], Description]:
        found: Callable[[LineageRun], Description] = getattr(import_module("analytics_provider.lineage"), self.name)
        return found

    def __call__(self, run: LineageRun) -> Description:
        return self.function(run)

    def __repr__(self) -> str:
        return f"LineageFunction({self.name!r})"
