"""OpenLineage events of the example DAGs, as the OpenLineage provider emits them from ``dag.test()``.

The provider's listener runs for real (forking per event, as in a deployment) and writes the
events through OpenLineage's file transport (configured in ``conftest``); the tests read them back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from .conftest import EXAMPLE_DAGS, OPENLINEAGE_EVENTS
from .test_example_dags import DIAGNOSTIC, run_dag, task_states

pytest.importorskip("airflow.providers.openlineage", reason="the openlineage extra is not installed")


@pytest.fixture(scope="module", autouse=True)
def events_emitted_from_forks() -> Iterator[None]:
    """The provider's default here: each event emitted from a child forked for it (on Airflow 3,
    ``conftest`` has the other DAG tests emit from a thread). The provider reads its settings afresh
    under pytest."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD", "False")
        yield


FACET_SCHEMA = EXAMPLE_DAGS.parent / "docs" / "_static" / "lineage" / "AnalyticsPublishRunFacet.json"
SOURCE_KINDS = {"Dashboard": "dashboards", "QueryReport": "query_reports"}
OBJECT_KINDS = {"Dataset": "data_sets", "Dashboard": "dashboards"}


def task_events(events: list[dict[str, Any]], dag_id: str, task_id: str, event_type: str) -> list[dict[str, Any]]:
    return [e for e in events if e["job"]["name"] == f"{dag_id}.{task_id}" and e["eventType"] == event_type]


def check_publish_facet(facet: dict[str, Any]) -> None:
    """The facet matches the JSON schema the docs publish for it."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(FACET_SCHEMA.read_text())
    jsonschema.validate(facet, schema)
    assert facet["_schemaURL"] == schema["$id"]


def names(datasets: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(d["namespace"], d["name"]) for d in datasets]


def service_namespace(emulator: Any) -> str:
    """The emulator's namespace as the docs define it: analytics://host:port."""
    return "analytics://" + urlsplit(emulator.base_url).netloc


def job_id_of(emulator: Any, operation: str) -> int:
    (job,) = [j for j in emulator.jobs if j.operation == operation]
    return job.id


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_after_load_reports_the_table_the_dashboard_and_the_exported_file(
    example_dag_bag, analytics_emulator, analytics_connection, openlineage_events, tmp_path, deferrable
):
    dag_id = "analytics_after_warehouse_load"
    dag_run = run_dag(example_dag_bag, dag_id, deferrable, {"export_dir": str(tmp_path)})
    assert dag_run.state == "success", task_states(dag_run)
    events, ns = openlineage_events(), service_namespace(analytics_emulator)
    (csv,) = tmp_path.rglob("*.csv")

    (refresh,) = task_events(events, dag_id, "refresh_impacted", "COMPLETE")
    assert names(refresh["inputs"]) == [("postgres://warehouse:5432", "analytics.public.orders")]
    assert names(refresh["outputs"]) == [(ns, "dashboards/1"), (ns, "dashboards/4")]

    start, *resumed = task_events(events, dag_id, "export_widget", "START")  # a deferred task starts twice
    assert len(resumed) == (1 if deferrable else 0)
    assert names(start["inputs"]) == []  # named by title: the widget's id is known once resolved
    assert names(start["outputs"]) == [("file", str(csv))]  # the rendered destination, before the job

    (export,) = task_events(events, dag_id, "export_widget", "COMPLETE")
    dashboard_id = analytics_emulator.world.state.widgets["101"]["dashboard_id"]
    assert names(export["inputs"]) == [(ns, "dashboard_widgets/101"), (ns, f"dashboards/{dashboard_id}")]
    (output,) = export["outputs"]
    assert (output["namespace"], output["name"]) == ("file", str(csv))
    assert output["outputFacets"]["outputStatistics"]["size"] == csv.stat().st_size
    job_id = job_id_of(analytics_emulator, "submit_widget_export")
    assert export["run"]["facets"]["externalQuery"]["externalQueryId"] == str(job_id)
    assert analytics_emulator.api_key not in OPENLINEAGE_EVENTS.read_text()


def test_scheduled_exports_report_each_file_by_its_own_name(
    example_dag_bag, analytics_emulator, analytics_connection, openlineage_events, tmp_path
):
    dag_id = "analytics_scheduled_exports"
    dag_run = run_dag(example_dag_bag, dag_id, True, {"export_root": f"file://{tmp_path}"})
    assert dag_run.state == "success", task_states(dag_run)
    exports = task_events(openlineage_events(), dag_id, "export_widget", "COMPLETE")
    files = {str(p): p.stat().st_size for p in tmp_path.rglob("*.*")}
    reported = {d["name"]: d["outputFacets"]["outputStatistics"]["size"] for e in exports for d in e["outputs"]}
    assert len(files) == 6 and reported == files
    assert {d["namespace"] for e in exports for d in e["outputs"]} == {"file"}


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_publish_reports_the_project_at_its_commit_and_the_objects_it_published(
    example_dag_bag, analytics_emulator, analytics_connection, openlineage_events, deferrable
):
    dag_id = "analytics_post_deploy_publish"
    project_dir = str(EXAMPLE_DAGS / "aml_project")  # explicit: an earlier run may have left its own
    dag_run = run_dag(example_dag_bag, dag_id, deferrable, {"project_dir": project_dir})
    assert dag_run.state == "success", task_states(dag_run)
    events, ns = openlineage_events(), service_namespace(analytics_emulator)
    (job,) = [j for j in analytics_emulator.jobs if j.operation == "publish_aml_project"]

    (publish,) = task_events(events, dag_id, "publish_aml_project", "COMPLETE")
    assert names(publish["inputs"]) == [("file", str(EXAMPLE_DAGS / "aml_project"))]
    project, *objects = publish["outputs"]
    assert (project["namespace"], project["name"]) == (ns, "aml_projects/production")
    assert project["facets"]["version"]["datasetVersion"] == job.result_data["target_commit"]
    published = [(ns, f"{OBJECT_KINDS[o['type']]}/{o['id']}") for o in job.result_data["objects_status"]]
    assert names(objects) == published and published
    facet = publish["run"]["facets"]["analyticsPublish"]
    assert facet["status"] == "success" and facet["targetCommit"] == job.result_data["target_commit"]
    assert facet["jobId"] == job.id and facet["diagnostics"] == []
    check_publish_facet(facet)

    (schedule,) = task_events(events, dag_id, "send_release_schedule", "COMPLETE")
    source = analytics_emulator.world.state.data_schedules[1]
    assert names(schedule["inputs"]) == [(ns, f"{SOURCE_KINDS[source['source_type']]}/{source['source_id']}")]
    assert names(schedule["outputs"]) == [(ns, "data_schedules/1")]

    preloads = task_events(events, dag_id, "preload_key_dashboard", "COMPLETE")
    assert sorted(n for e in preloads for n in names(e["outputs"])) == [(ns, "dashboards/1"), (ns, "dashboards/2")]


def test_failed_publish_carries_the_diagnostics_in_its_error_facets(
    example_dag_bag, analytics_emulator, analytics_connection, openlineage_events, tmp_path
):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "orders.model.aml").write_text("}\n")
    analytics_emulator.set_publish_diagnostics([DIAGNOSTIC])
    dag_id = "analytics_post_deploy_publish"
    dag_run = run_dag(example_dag_bag, dag_id, True, {"project_dir": str(tmp_path)})
    assert dag_run.state == "failed"
    (failed,) = task_events(openlineage_events(), dag_id, "publish_aml_project", "FAIL")
    facets = failed["run"]["facets"]
    line = "models/orders.model.aml:1:1: error 1001: Unexpected token '}'"
    publish = facets["analyticsPublish"]
    assert publish["status"] == "error" and publish["errorType"] == "syntax_error"
    assert [d["text"] for d in publish["diagnostics"]] == [line]
    assert publish["diagnostics"][0]["code"] == DIAGNOSTIC["code"]
    check_publish_facet(publish)
    assert line in facets["errorMessage"]["message"]
    (project,) = failed["outputs"]
    assert project["name"] == "aml_projects/production"
    assert names(failed["inputs"]) == [("file", str(tmp_path))]


def test_revenue_check_reports_the_data_set_and_the_file(
    example_dag_bag, analytics_emulator, analytics_connection, openlineage_events, tmp_path
):
    from .test_data_platform_dags import revenue_conf, warehouse_from

    warehouse = warehouse_from(analytics_emulator, tmp_path / "warehouse.sqlite")
    dag_id = "analytics_revenue_check"
    dag_run = run_dag(example_dag_bag, dag_id, True, revenue_conf(tmp_path, warehouse))
    assert dag_run.state == "success", task_states(dag_run)
    events, ns = openlineage_events(), service_namespace(analytics_emulator)
    (returned,) = task_events(events, dag_id, "service_revenue", "COMPLETE")
    assert names(returned["inputs"]) == [(ns, "data_sets/1")] and returned["outputs"] == []
    (written,) = task_events(events, dag_id, "revenue_by_region", "COMPLETE")
    (csv_file,) = tmp_path.rglob("revenue-by-region.csv")
    assert names(written["inputs"]) == [(ns, "data_sets/1")]
    (output,) = written["outputs"]
    assert (output["namespace"], output["name"]) == ("file", str(csv_file))
    statistics = output["outputFacets"]["outputStatistics"]
    assert statistics["size"] == csv_file.stat().st_size
    assert statistics["rowCount"] == len(csv_file.read_text().splitlines()) - 1


def test_dbt_upload_reports_the_manifest_and_the_data_source(
    example_dag_bag, analytics_emulator, analytics_connection, openlineage_events, tmp_path
):
    dag_id = "analytics_dbt_post_deploy"
    dag_run = run_dag(example_dag_bag, dag_id, True, {"dbt_project_dir": str(tmp_path)})
    assert dag_run.state == "success", task_states(dag_run)
    events, ns = openlineage_events(), service_namespace(analytics_emulator)
    (upload,) = task_events(events, dag_id, "upload_dbt_manifest", "COMPLETE")
    assert names(upload["inputs"]) == [("file", str(tmp_path / "target" / "manifest.json"))]
    assert names(upload["outputs"]) == [(ns, "data_sources/Production warehouse")]
    job_id = job_id_of(analytics_emulator, "upload_dbt_manifests")
    assert upload["run"]["facets"]["externalQuery"]["externalQueryId"] == str(job_id)


def test_preload_on_the_table_reports_the_data_source_and_the_dashboards(
    example_dag_bag, analytics_emulator, analytics_connection, openlineage_events
):
    dag_id = "analytics_preload_on_warehouse_table"
    dag_run = run_dag(example_dag_bag, dag_id, True, {"data_source_id": 1})
    assert dag_run.state == "success", task_states(dag_run)
    events, ns = openlineage_events(), service_namespace(analytics_emulator)
    (bust,) = task_events(events, dag_id, "bust_data_source_cache", "COMPLETE")
    assert names(bust["outputs"]) == [(ns, "data_sources/1")]
    preloads = task_events(events, dag_id, "preload_dashboard", "COMPLETE")
    assert sorted(n for e in preloads for n in names(e["outputs"])) == [(ns, "dashboards/1"), (ns, "dashboards/2")]


def test_access_sync_reports_the_query_tables_as_inputs_and_the_synced_objects_as_outputs(
    example_dag_bag, analytics_emulator, analytics_connection, openlineage_events
):
    dag_id = "analytics_access_sync"
    dag_run = run_dag(example_dag_bag, dag_id, False, {})
    assert dag_run.state == "success", task_states(dag_run)
    events, ns = openlineage_events(), service_namespace(analytics_emulator)
    warehouse = json.loads(os.environ["AIRFLOW_CONN_ANALYTICS_WAREHOUSE"])["host"]
    (regions,) = task_events(events, dag_id, "sync_regions", "COMPLETE")
    assert names(regions["inputs"]) == [(f"sqlite://{warehouse}", "analytics_user_access")]
    assert names(regions["outputs"]) == [(ns, "user_attributes/3")]
    (teams,) = task_events(events, dag_id, "sync_teams", "COMPLETE")
    assert names(teams["inputs"]) == [(f"sqlite://{warehouse}", "analytics_user_access")]
    finance = max(analytics_emulator.world.state.groups)  # created by this run
    assert names(teams["outputs"]) == [(ns, "groups/1"), (ns, f"groups/{finance}")]  # Sales, Finance


def test_deliveries_report_the_files_as_inputs_and_the_schedules_and_alerts_as_outputs(
    example_dag_bag, analytics_emulator, analytics_connection, openlineage_events
):
    dag_id = "analytics_deliveries_on_deploy"
    dag_run = run_dag(example_dag_bag, dag_id, False, {})
    assert dag_run.state == "success", task_states(dag_run)
    events, ns = openlineage_events(), service_namespace(analytics_emulator)
    (applied,) = task_events(events, dag_id, "apply_deliveries", "COMPLETE")
    assert names(applied["inputs"]) == [("file", str(EXAMPLE_DAGS / "deliveries" / "sales.yml"))]
    schedule = max(analytics_emulator.world.state.data_schedules)
    alert = max(analytics_emulator.world.state.data_alerts)
    assert names(applied["outputs"]) == [(ns, f"data_schedules/{schedule}"), (ns, f"data_alerts/{alert}")]
