"""What Airflow's metadata database says about a DAG run: which task instances deferred, which
asset events its tasks emitted, which DAGs those queued.

For DAG tests and the demo: on Airflow 3 a task instance that deferred keeps the id of its
trigger row, whether the trigger ran in a triggerer or inline under ``dag.test()``; Airflow 2.11
deletes the row once the trigger fires (and ``dag.test()`` writes none when it runs the trigger
itself), so :func:`deferrals` finds nothing there afterwards.
Assets are Airflow 2.11's datasets (``dataset`` tables); the records read either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Deferral:
    task_id: str
    map_index: int
    trigger_classpath: str

    @property
    def label(self) -> str:
        """``task_id``, or ``task_id[map_index]`` for a mapped task instance."""
        return f"{self.task_id}[{self.map_index}]" if self.map_index >= 0 else self.task_id

    def __str__(self) -> str:
        return f"{self.label} -> {self.trigger_classpath.rsplit('.', 1)[-1]}"


def deferrals(dag_id: str, run_id: str | None = None) -> list[Deferral]:
    """The task instances of a run (default: the DAG's latest) that deferred to a trigger."""
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.trigger import Trigger
    from airflow.utils.session import create_session

    with create_session() as session:
        if run_id is None:
            latest = session.query(DagRun.run_id).filter(DagRun.dag_id == dag_id).order_by(DagRun.id.desc()).first()
            if latest is None:
                return []
            run_id = latest[0]
        rows = (
            session.query(TaskInstance.task_id, TaskInstance.map_index, Trigger.classpath)
            .join(Trigger, TaskInstance.trigger_id == Trigger.id)
            .filter(TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id)
            .order_by(TaskInstance.task_id, TaskInstance.map_index)
            .all()
        )
    return [Deferral(task_id, map_index, classpath) for task_id, map_index, classpath in rows]


@dataclass(frozen=True)
class AssetEventRecord:
    """An asset event as Airflow stored it: the asset's URI, the extra, the task, the aliases."""

    uri: str
    extra: dict[str, Any]
    task_id: str | None
    aliases: list[str] = field(default_factory=list)


def asset_events(dag_id: str, run_id: str) -> list[AssetEventRecord]:
    """The asset events the tasks of a DAG run emitted."""
    from airflow.utils.session import create_session
    from sqlalchemy import select

    models = _asset_models()
    with create_session() as session:
        query = select(models.event).where(models.event.source_dag_id == dag_id, models.event.source_run_id == run_id)
        return [
            AssetEventRecord(
                uri=getattr(event, models.prefix).uri,
                extra=dict(event.extra or {}),
                task_id=event.source_task_id,
                aliases=sorted(alias.name for alias in event.source_aliases),
            )
            for event in session.scalars(query)
        ]


def queued_asset_uris(target_dag_id: str) -> set[str]:
    """The assets whose events wait in the queue of a DAG scheduled on them."""
    from airflow.utils.session import create_session
    from sqlalchemy import select

    models = _asset_models()
    asset_id = getattr(models.queue, f"{models.prefix}_id")
    with create_session() as session:
        query = (
            select(models.asset.uri)
            .join(models.queue, asset_id == models.asset.id)
            .where(models.queue.target_dag_id == target_dag_id)
        )
        return set(session.scalars(query))


def asset_table() -> dict[str, bool]:
    """Every row of Airflow's asset table: its URI, and whether the asset is active (declared by a
    DAG; on Airflow 2.11, not orphaned)."""
    from airflow.utils.session import create_session
    from sqlalchemy import select

    models = _asset_models()
    with create_session() as session:
        if models.prefix == "dataset":
            return {a.uri: not a.is_orphaned for a in session.scalars(select(models.asset))}
        from airflow.models.asset import AssetActive

        active = set(session.execute(select(AssetActive.name, AssetActive.uri)).all())
        return {a.uri: (a.name, a.uri) in active for a in session.scalars(select(models.asset))}


@dataclass(frozen=True)
class _AssetModels:
    asset: Any
    event: Any
    queue: Any
    prefix: str  # "asset", or "dataset" on Airflow 2.11 (asset_id / dataset_id, event.asset / event.dataset)


def _asset_models() -> _AssetModels:
    try:
        from airflow.models.asset import AssetDagRunQueue, AssetEvent, AssetModel
    except ImportError:  # Airflow 2.11
        from airflow.models.dataset import DatasetDagRunQueue, DatasetEvent, DatasetModel

        return _AssetModels(DatasetModel, DatasetEvent, DatasetDagRunQueue, "dataset")
    return _AssetModels(AssetModel, AssetEvent, AssetDagRunQueue, "asset")
