"""The operations' handlers: one function per operation of the table, registered by name."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from analytics_provider.api.wire.operations import OPERATIONS, Operation
from analytics_provider.testing.emulator.jobs import Job
from analytics_provider.testing.emulator.state import Json, State, find
from analytics_provider.testing.emulator.world import World


@dataclass
class Reply:
    """An answer other than "the operation's status with this JSON body"."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Call:
    """One authorised, checked request: typed query options and the body without its wrapper."""

    op: Operation
    path: dict[str, str]
    query: dict[str, Any]
    body: Any
    user: Json
    world: World
    now: float
    headers: Mapping[str, str] = field(default_factory=dict)  # names in lower case

    @property
    def state(self) -> State:
        return self.world.state

    def find(self, model: str, param: str = "id") -> Json:
        """The resource the path names, or a 404."""
        return find(self.state, model, self.path[param])

    def find_any(self, model: str, param: str = "id") -> Json:
        """The resource the path names even when soft-deleted (users keep their record), or a 404."""
        return find(self.state, model, self.path[param], include_deleted=True)

    def submit_job(
        self,
        params: dict[str, Any],
        *,
        result_type: str,
        result_data: Any = None,
        failure: tuple[str, str, Any] | None = None,
        source: dict[str, Any] | None = None,
        notes: tuple[str, ...] = (),
    ) -> Job:
        """Submit a job for this operation (or its ``already_existed`` twin)."""
        return self.world.jobs.submit(
            self.op.name, self.user["id"], params, duration=self.world.job_duration, result_type=result_type,
            result_data=result_data, failure=failure, source=source, notes=notes, now=self.now,
        )

    def start_job(self, params: dict[str, Any], **kwargs: Any) -> Json:
        """Submit a job and answer its AsyncResult ``{job: {id, status}}``."""
        return self.submit_job(params, **kwargs).async_result(self.now)


Handler = Callable[[Call], Any]
HANDLERS: dict[str, Handler] = {}
_MODULES = ("users", "content", "delivery", "attributes", "work", "queries", "catalog")


def handles(name: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of operation ``name``."""
    if name not in OPERATIONS:
        raise KeyError(f"no operation {name!r} in the operations table")

    def register(func: Handler) -> Handler:
        HANDLERS[name] = func
        return func

    return register


def load_handlers() -> dict[str, Handler]:
    """Every handler; fails loudly when an operation of the table has none."""
    for module in _MODULES:
        importlib.import_module(f"{__name__}.{module}")
    missing = sorted(set(OPERATIONS) - set(HANDLERS))
    if missing:
        raise RuntimeError(f"operations without a handler: {', '.join(missing)}")
    return HANDLERS


def public(record: Json) -> Json:
    """A stored record without its private fields (those starting with ``_``)."""
    return {k: v for k, v in record.items() if not k.startswith("_")}
