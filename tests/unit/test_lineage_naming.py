"""How files and the service's objects are named for OpenLineage and for Airflow assets.

File names are checked against the naming classes of the OpenLineage client itself
(``openlineage.client.naming.dataset``), the reference for the conventions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from analytics_provider.lineage import operator_lineage, service_namespace
from analytics_provider.locations import StorageLocation

naming = pytest.importorskip("openlineage.client.naming.dataset", reason="the openlineage extra is not installed")


@pytest.mark.parametrize(
    ("location", "reference"),
    [
        ("/data/exports/revenue.csv", naming.LocalFileSystem(path="/data/exports/revenue.csv")),
        ("file:///data/exports/revenue.csv", naming.LocalFileSystem(path="/data/exports/revenue.csv")),
        ("s3://reports/2026/revenue.xlsx", naming.S3(bucket_name="reports", object_key="2026/revenue.xlsx")),
        ("s3://aws_reports@reports/daily/a.pdf", naming.S3(bucket_name="reports", object_key="daily/a.pdf")),
        ("s3a://reports/a.csv", naming.S3(bucket_name="reports", object_key="a.csv")),
        ("gs://bucket/x/y.csv", naming.GCS(bucket_name="bucket", object_key="x/y.csv")),
        ("gcs://google_cloud_default@bucket/y.csv", naming.GCS(bucket_name="bucket", object_key="y.csv")),
        (
            "hdfs://namenode:8020/exports/a.csv",
            naming.HDFS(namenode_host="namenode", namenode_port="8020", path="/exports/a.csv"),
        ),
        (
            "abfss://reports@account.dfs.core.windows.net/daily/a.csv",
            naming.ABFSS(container="reports", service="account", path="daily/a.csv"),
        ),
    ],
)
def test_files_are_named_as_the_openlineage_client_names_them(location, reference):
    assert StorageLocation.parse(location).openlineage_name() == (reference.get_namespace(), reference.get_name())


def test_relative_and_home_paths_become_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert StorageLocation.parse("out/a.csv").openlineage_name() == ("file", str(tmp_path / "out" / "a.csv"))
    assert StorageLocation.parse("~/a.csv").path == os.path.expanduser("~/a.csv")


@pytest.mark.parametrize(
    ("location", "uri"),
    [
        ("/data/a b.csv", "file:///data/a b.csv"),
        ("file:///data/a.csv", "file:///data/a.csv"),
        ("s3://aws_reports@reports/daily/a.pdf", "s3://reports/daily/a.pdf"),
        ("gs://bucket/y.csv", "gs://bucket/y.csv"),
    ],
)
def test_asset_uris_name_the_file_not_the_connection(location, uri):
    assert StorageLocation.parse(location).uri == uri


def test_asset_uri_of_a_local_file_is_what_airflow_normalises_it_to(tmp_path):
    from airflow.providers.common.compat.sdk import Asset

    path = tmp_path / "w.csv"
    uri = StorageLocation.parse(str(path)).uri
    assert Asset(uri=uri).uri == uri == path.as_uri()


@pytest.mark.parametrize(
    ("base_url", "namespace"),
    [
        ("https://eu.holistics.io/api/v2", "analytics://eu.holistics.io"),
        ("https://secure.holistics.io/api/v2/", "analytics://secure.holistics.io"),
        ("http://127.0.0.1:8080/api/v2", "analytics://127.0.0.1:8080"),
        ("https://proxy.example.com/holistics/api/v2", "analytics://proxy.example.com/holistics"),
    ],
)
def test_one_namespace_per_service_address(base_url, namespace):
    assert service_namespace(base_url) == namespace


def test_each_region_has_its_own_namespace():
    from analytics_provider.api.call.settings import REGION_BASE_URLS

    namespaces = {service_namespace(url) for url in REGION_BASE_URLS.values()}
    assert len(namespaces) == len(REGION_BASE_URLS)


def region_connection(monkeypatch: pytest.MonkeyPatch, region: str) -> None:
    connection = {"conn_type": "analytics", "password": "k", "extra": {"region": region}}
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(connection))


def test_start_lineage_of_an_export_to_object_storage_needs_no_request(monkeypatch):
    """Before the job: the widget as input, the rendered destination as output; nothing is asked."""
    from analytics_provider.operators import AnalyticsExportWidgetOperator

    region_connection(monkeypatch, "us")
    op = AnalyticsExportWidgetOperator(task_id="e", widget_id=7, destination="s3://aws@bucket/d/w.csv")
    monkeypatch.setattr(type(op.hook), "call", lambda *a, **k: pytest.fail("no request at start"))
    lineage = op.get_openlineage_facets_on_start()
    assert [(d.namespace, d.name) for d in lineage.inputs] == [("analytics://us.holistics.io", "dashboard_widgets/7")]
    assert [(d.namespace, d.name) for d in lineage.outputs] == [("s3://bucket", "d/w.csv")]
    assert lineage.run_facets == {}


def test_a_folder_destination_is_reported_only_once_the_file_has_its_name(monkeypatch):
    from analytics_provider.operators import AnalyticsExportWidgetOperator

    region_connection(monkeypatch, "eu")
    op = AnalyticsExportWidgetOperator(task_id="e", widget_id=7, destination="/exports/")
    assert op.get_openlineage_facets_on_start().outputs == []


def test_a_subclass_reports_what_its_parent_reports_and_other_classes_nothing(monkeypatch):
    from analytics_provider.operators import AnalyticsBustDataSourceCacheOperator
    from analytics_provider.operators.base import AnalyticsJobOperator

    class MyBust(AnalyticsBustDataSourceCacheOperator):
        pass

    region_connection(monkeypatch, "apac")
    lineage = MyBust(task_id="b", data_source_id=3).get_openlineage_facets_on_start()
    assert [(d.namespace, d.name) for d in lineage.outputs] == [("analytics://secure.holistics.io", "data_sources/3")]
    assert operator_lineage(AnalyticsJobOperator(task_id="j"), "start") is None


def test_a_failed_lookup_leaves_the_input_out_and_never_fails(monkeypatch, caplog):
    from analytics_provider.exceptions import AnalyticsApiError
    from analytics_provider.operators import AnalyticsExecuteDataScheduleOperator

    region_connection(monkeypatch, "eu")
    op = AnalyticsExecuteDataScheduleOperator(task_id="s", data_schedule_id=4)

    def not_found(*args, **kwargs):
        raise AnalyticsApiError("no such schedule", status=404, error_type="RecordNotFound")

    monkeypatch.setattr(type(op.hook), "call", not_found)
    op.lineage_job_id = 12
    lineage = op.get_openlineage_facets_on_complete(None)
    assert lineage.inputs == []
    assert [(d.name) for d in lineage.outputs] == ["data_schedules/4"]
    assert lineage.run_facets["externalQuery"].externalQueryId == "12"
    assert "could not be read" in caplog.text


def test_the_lineage_module_imports_no_openlineage_at_import_time():
    """Nor do the operators import the lineage module: DAG files import them, and only a task's
    process asks for facets (``tests/dags/test_example_dags.py`` holds the rest of what they leave out)."""
    import subprocess
    import sys

    code = (  # Airflow itself reads every provider's get_provider_info; what do our modules add?
        "import sys\n"
        "try:\n    import airflow.sdk\n"
        "except ImportError:  # Airflow 2.11\n    import airflow\n"
        "before = set(sys.modules)\n"
        "import analytics_provider.assets, analytics_provider.operators as operators, analytics_provider.sensors\n"
        "for name in operators.__all__: getattr(operators, name)  # each operator's module\n"
        "lineage = 'analytics_provider.lineage'\n"
        "print(sorted(m for m in set(sys.modules) - before if 'openlineage' in m or m == lineage))\n"
        "import analytics_provider.lineage\n"
        "print(sorted(m for m in set(sys.modules) - before if 'openlineage' in m))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path.home())
    assert out.stdout.strip().splitlines()[-2:] == ["[]", "[]"]
