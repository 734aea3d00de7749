"""The hook of a task: made when first used, its connections closed when the task's run ends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analytics_provider.hooks.analytics import AnalyticsHook


class HookTask:
    """Gives a task ``hook`` (an :class:`AnalyticsHook` on ``analytics_conn_id``) and
    :meth:`closing_hook`, which ``execute`` and ``execute_complete`` run in: a process that runs
    many tasks (``dag.test()``, a test suite) would otherwise keep each task's connections open
    until a garbage collection. The hook stays usable: a later call opens a new connection."""

    analytics_conn_id: str
    _hook_runs = 0

    @cached_property
    def hook(self) -> AnalyticsHook:
        from analytics_provider.hooks.analytics import AnalyticsHook

        return AnalyticsHook(self.analytics_conn_id)

    @contextmanager
    def closing_hook(self) -> Iterator[None]:
        """Close the hook's connections when the outermost of nested runs ends, however it ends
        (a deferral included)."""
        self._hook_runs += 1
        try:
            yield
        finally:
            self._hook_runs -= 1
            close = getattr(self.__dict__.get("hook"), "close", None)  # tests may hand a task a stand-in
            if self._hook_runs == 0 and callable(close):
                close()
