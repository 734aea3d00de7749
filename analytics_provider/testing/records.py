"""What Airflow's metadata database says about a DAG run: which task instances deferred.

For DAG tests and the demo: a task instance that deferred keeps the id of its trigger row (on
every Airflow 3 version), whether the trigger ran in a triggerer or inline under ``dag.test()``.
"""

from __future__ import annotations

from dataclasses import dataclass


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
