"""The emulated account and the knobs a test turns: state, jobs, job duration, publish outcome, sizes."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from analytics_provider.testing.emulator.exports import ExportStore
from analytics_provider.testing.emulator.jobs import JobBook
from analytics_provider.testing.emulator.seed import generated_user, seed_state
from analytics_provider.testing.emulator.state import State

ANSWER_SHAPES = {"widget_reports": False, "data_set_reports": True, "listed_widgets": True}
"""What the answers carry that the document allows but does not promise: each widget of a dashboard
its ``query_report`` (off), a data set read with ``include_reports`` its ``reports`` (on), each
dashboard of a list its ``widgets`` (on; the schema lets a list leave them out)."""


class World:
    """Everything the handlers read and change. Hold ``lock`` while touching it.

    ``clock`` is the world's time (Unix seconds): what the handlers and the jobs read, so a test
    that moves a fake clock sees jobs end (``FakeClock.install(monkeypatch, emulator)``).
    """

    def __init__(self, keys: Mapping[int, str], job_duration: float, files_dir: Path,
                 clock: Callable[[], float] = time.time) -> None:
        if job_duration < 0:
            raise ValueError("job_duration must not be negative")
        self.clock = clock
        self.lock = threading.RLock()
        self.keys = dict(keys)
        self.default_job_duration = job_duration
        self.exports = ExportStore(files_dir)
        self.app_url = "http://127.0.0.1"
        self.files_url = "http://127.0.0.1"
        self.state = State()
        self.jobs = JobBook(self.now)
        self.job_duration = job_duration
        self.publish_diagnostics: list[dict[str, Any]] | None = None
        self.export_sizes: dict[str, int] = {}
        self.answer_shapes: dict[str, bool] = dict(ANSWER_SHAPES)
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.state = seed_state(self.keys)
            self.jobs = JobBook(self.now)
            self.job_duration = self.default_job_duration
            self.publish_diagnostics = None
            self.export_sizes = {}
            self.answer_shapes = dict(ANSWER_SHAPES)
            self.exports.clear()

    def now(self) -> float:
        """The time on the world's clock (read anew: a test may swap the clock)."""
        return self.clock()

    def add_dashboards(self, titles: list[str], like: int = 1) -> list[int]:
        """A dashboard per title, each a copy of dashboard ``like`` (its widgets, their titles and
        data, its filters and their options) under new ids; returns their ids."""
        with self.lock:
            state = self.state
            if like not in state.dashboards:
                raise ValueError(f"no dashboard {like!r} to copy; dashboards: {sorted(state.dashboards)}")
            model = state.dashboards[like]
            ids = []
            for title in titles:
                if not isinstance(title, str) or not title.strip():
                    raise ValueError(f"a dashboard title must be a non-empty string, got {title!r}")
                board = copy.deepcopy(model)
                board["id"], board["title"] = state.new_id("Dashboard"), title
                board.pop("uname", None)
                renamed = {}
                for widget_id in model["widget_ids"]:
                    new = renamed[widget_id] = str(state.new_id("DashboardWidget"))
                    state.widgets[new] = {**copy.deepcopy(state.widgets[widget_id]), "id": new,
                                          "dashboard_id": board["id"]}
                    state.tables[new] = state.tables[widget_id]  # the same rows, shared
                board["widget_ids"] = list(renamed.values())
                for dynamic_filter in board["dynamic_filters"]:
                    dynamic_filter["id"] = dynamic_filter["definition"]["id"] = state.new_id("DynamicFilter")
                    for mapping in dynamic_filter["mappings"]:
                        mapping["id"] = state.new_id("DynamicFilterMapping")
                        mapping["viz_conditionable_id"] = int(renamed[str(mapping["viz_conditionable_id"])])
                state.dashboards[board["id"]] = board
                ids.append(board["id"])
            return ids

    def build_workspace(self, **sizes: Any) -> dict[str, Any]:
        """Add a large consistent workspace (see :mod:`~analytics_provider.testing.emulator.workspace`)."""
        from analytics_provider.testing.emulator.workspace import build_workspace

        with self.lock:
            return build_workspace(self.state, **sizes)

    def add_users(self, count: int) -> list[int]:
        """Add ``count`` active users with varied names and roles; returns their ids."""
        if count < 0:
            raise ValueError("count must not be negative")
        with self.lock:
            ids = []
            start = len(self.state.users)
            for index in range(count):
                user_id = self.state.new_id("User")
                self.state.users[user_id] = generated_user(user_id, start + index)
                ids.append(user_id)
            return ids
