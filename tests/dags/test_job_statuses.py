"""Jobs as the service reports them, through Airflow itself (``dag.test()``): a job that waits on
its flow (``flow_pending``) is waited on, on the worker and in the triggerer; what it cost goes
into the task's result and its OpenLineage run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import EXAMPLE_DAGS, deferred_tasks, set_waits

DAG_FILE = Path(__file__).resolve().parent / "job_dags" / "job_statuses.py"
MODES = pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
STATS_SCHEMA = "AnalyticsDataSourceStatsRunFacet.json"
# in reads of the job, not seconds: however slowly a busy machine reads, the wait sees each status
FLOW_PENDING = [("queued", 1), ("flow_pending", 3), ("running", 1), ("success", 0)]


@pytest.fixture(scope="module")
def bag(airflow_db: None) -> Any:
    from .conftest import dag_bag_of

    return dag_bag_of(DAG_FILE)


def run(bag: Any, tmp_path: Path, deferrable: bool, **task_settings: Any) -> tuple[Any, Path]:
    dag = bag.get_dag("job_statuses_export")
    set_waits(dag, deferrable)
    for name, value in {"include_data_source_stats": False, **task_settings}.items():
        setattr(dag.task_dict["export"], name, value)
    destination = tmp_path / "export.csv"
    return dag.test(run_conf={"destination": str(destination)}), destination


@MODES
def test_an_export_whose_job_waits_on_its_flow_ends_green(bag, analytics_emulator, analytics_connection, tmp_path,
                                                          deferrable):
    analytics_emulator.script_next_job("submit_widget_export", FLOW_PENDING, by_reads=True)
    dag_run, destination = run(bag, tmp_path, deferrable)
    assert dag_run.state == "success"
    assert destination.read_bytes().startswith(b"month,region,")
    (job,) = analytics_emulator.jobs
    assert job.answered == ["queued", "flow_pending", "flow_pending", "flow_pending", "running", "success"]
    assert deferred_tasks(dag_run) == (["export"] if deferrable else [])


@MODES
def test_an_export_reports_what_its_job_cost_in_its_result_and_lineage(
    bag, analytics_emulator, analytics_connection, openlineage_events, tmp_path, deferrable
):
    pytest.importorskip("airflow.providers.openlineage", reason="the openlineage extra is not installed")
    jsonschema = pytest.importorskip("jsonschema")
    dag_run, destination = run(bag, tmp_path, deferrable, include_data_source_stats=True)
    assert dag_run.state == "success"
    (job,) = analytics_emulator.jobs
    stats = [{"id": f"emu-job-{job.id}-q1", "cost": str(round(job.duration * 1_000_000)), "cost_unit": "B"}]
    (ti,) = dag_run.get_task_instances()
    result = ti.xcom_pull(task_ids="export")
    print(f"\nresult: {result}")
    assert result["data_source_stats"] == stats and result["path"] == str(destination)
    (complete,) = [e for e in openlineage_events()
                   if e["job"]["name"] == "job_statuses_export.export" and e["eventType"] == "COMPLETE"]
    facet = complete["run"]["facets"]["analyticsDataSourceStats"]
    print(f"facet: {json.dumps(facet)}")
    assert facet["jobId"] == job.id and facet["stats"] == stats
    schema = json.loads((EXAMPLE_DAGS.parent / "docs" / "_static" / "lineage" / STATS_SCHEMA).read_text())
    jsonschema.validate(facet, schema)
    assert facet["_schemaURL"] == schema["$id"]
