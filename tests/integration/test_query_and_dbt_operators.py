"""The data-set query and dbt manifest operators against the emulator, over real loopback sockets."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsJobError, AnalyticsParameterError
from analytics_provider.operators import AnalyticsQueryDataSetOperator, AnalyticsUploadDbtManifestOperator
from analytics_provider.operators import query as query_module
from analytics_provider.operators.query import AnalyticsQueryResultTooLargeError
from analytics_provider.testing.task_instance import FakeTaskInstance

REVENUE_BY_REGION = {
    "dimensions": [{"id": "region", "field": "orders.region"}],
    "metrics": [{"id": "revenue", "field": "orders.revenue", "aggregation": "sum"}],
    "order": [{"id": "region", "order": "asc"}],
}


@pytest.fixture
def context() -> dict[str, Any]:
    return {"ti": FakeTaskInstance()}


def expected_revenue_by_region(emulator: Any) -> dict[str, float]:
    """Summed from the emulator's seeded orders table, independently of the query code."""
    table = emulator.world.state.tables["101"]
    region, revenue = table.columns.index("region"), table.columns.index("revenue")
    totals: dict[str, float] = defaultdict(float)
    for row in table.rows:
        totals[row[region]] += row[revenue]
    return {k: round(v, 2) for k, v in sorted(totals.items())}


def query_op(**kwargs: Any) -> AnalyticsQueryDataSetOperator:
    return AnalyticsQueryDataSetOperator(
        task_id="query", data_set_id=1, query=kwargs.pop("query", REVENUE_BY_REGION), poll_interval=0.05, **kwargs
    )


def query_jobs(emulator: Any) -> list[Any]:
    return [j for j in emulator.jobs if j.operation == "submit_data_set_query"]


def test_a_small_result_is_returned_as_records(analytics_emulator, analytics_connection, context):
    result = query_op().execute(context)
    expected = expected_revenue_by_region(analytics_emulator)
    assert result["fields"] == ["region", "revenue"]
    assert {r["region"]: float(r["revenue"]) for r in result["rows"]} == pytest.approx(expected)
    (job,) = query_jobs(analytics_emulator)
    assert result["job_id"] == job.id == context["ti"].xcom["job_id"]


@pytest.mark.parametrize("file_format", ["csv", "json"])
def test_rows_are_written_to_a_file_that_appears_whole(
    analytics_emulator, analytics_connection, context, tmp_path, file_format
):
    destination = tmp_path / "out" / f"revenue.{file_format}"
    result = query_op(destination=str(destination)).execute(context)
    expected = expected_revenue_by_region(analytics_emulator)
    text = destination.read_text(encoding="utf-8")
    if file_format == "csv":
        header, *rows = list(csv.reader(text.splitlines()))
        assert header == ["region", "revenue"]
        records = {r[0]: float(r[1]) for r in rows}
    else:
        records = {r["region"]: float(r["revenue"]) for r in json.loads(text)}
    assert records == pytest.approx(expected)
    assert result["path"] == str(destination) and result["bytes"] == destination.stat().st_size
    assert result["rows"] == len(expected) and result["format"] == file_format
    assert sorted(p.name for p in destination.parent.iterdir()) == [destination.name]  # no temporary file left


def test_every_page_is_fetched_and_written(analytics_emulator, analytics_connection, context, tmp_path, monkeypatch):
    monkeypatch.setattr(query_module, "PAGE_SIZE", 2)
    destination = tmp_path / "revenue.csv"
    result = query_op(destination=str(destination)).execute(context)
    expected = expected_revenue_by_region(analytics_emulator)
    rows = list(csv.reader(destination.read_text().splitlines()))[1:]
    assert [r[0] for r in rows] == list(expected)  # every page, in order
    pages = [job.params["query"]["page"] for job in query_jobs(analytics_emulator)]
    assert pages == list(range(1, len(pages) + 1)) and len(pages) == -(-len(expected) // 2)
    assert all(job.params["query"]["page_size"] == 2 for job in query_jobs(analytics_emulator))
    assert result["rows"] == len(expected)


def test_a_query_naming_its_page_gets_that_page_only(analytics_emulator, analytics_connection, context):
    result = query_op(query={**REVENUE_BY_REGION, "page": 2, "page_size": 2}).execute(context)
    assert [r["region"] for r in result["rows"]] == list(expected_revenue_by_region(analytics_emulator))[2:4]
    assert len(query_jobs(analytics_emulator)) == 1


def test_a_failure_on_a_later_page_leaves_no_file(
    analytics_emulator, analytics_connection, context, tmp_path, monkeypatch
):
    monkeypatch.setattr(query_module, "PAGE_SIZE", 2)
    op = query_op(destination=str(tmp_path / "revenue.json"))
    fetch = op.fetch_page

    def fail_on_page_2(ctx: Any, page: int) -> Any:
        if page == 2:
            raise AnalyticsJobError("page 2 failed", job_id=0, status="failure")
        return fetch(ctx, page)

    op.fetch_page = fail_on_page_2  # type: ignore[method-assign]
    with pytest.raises(AnalyticsJobError, match="page 2 failed"):
        op.execute(context)
    assert list(tmp_path.iterdir()) == []


def test_more_rows_than_the_limit_fail_naming_the_limit(analytics_emulator, analytics_connection, context, monkeypatch):
    monkeypatch.setattr(query_module, "PAGE_SIZE", 2)
    count = len(expected_revenue_by_region(analytics_emulator))
    limit = f"gives {count} rows, more than max_return_rows={count - 1}"
    with pytest.raises(AnalyticsQueryResultTooLargeError, match=limit) as too_large:
        query_op(max_return_rows=count - 1).execute(context)
    from airflow.providers.common.compat.sdk import AirflowFailException

    assert isinstance(too_large.value, AirflowFailException)  # no retry: another try gets as many rows
    assert len(query_jobs(analytics_emulator)) == 1  # the total was known from the first page


def test_a_cached_answer_needs_no_job(analytics_emulator, analytics_connection, context):
    first = query_op().execute(context)
    second = query_op().execute({"ti": FakeTaskInstance()})
    assert second["job_id"] is None and second["rows"] == first["rows"]
    assert len(query_jobs(analytics_emulator)) == 1


def test_a_failed_query_job_fails_with_its_error(analytics_emulator, analytics_connection, context):
    analytics_emulator.fail_next_job("submit_data_set_query", "Query timed out after 300 s")
    with pytest.raises(AnalyticsJobError, match="Query timed out after 300 s"):
        query_op(query={**REVENUE_BY_REGION, "bust_cache": True}).execute(context)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"metrics": [{"field": "orders.revenue", "aggregation": "total"}]}, r"metrics\[0\]\.aggregation"),
        ({"dimensions": [{"id": "r"}]}, r"dimensions\[0\]\.field"),
        ("not a query", "query"),
    ],
)
def test_a_bad_query_is_refused_before_any_request(analytics_emulator, analytics_connection, query, message):
    with pytest.raises(AnalyticsParameterError, match=message):
        query_op(query=query)
    op = query_op(query="{{ params.q }}")
    op.query = query  # as rendered
    with pytest.raises(AnalyticsParameterError, match=message):
        op.execute({"ti": FakeTaskInstance()})
    assert [r for r in analytics_emulator.requests if r.origin == "api"] == []


def test_the_file_format_comes_from_the_destination_or_is_asked_for():
    assert query_op(destination="/x/revenue.json").file_format is None  # decided once rendered
    with pytest.raises(AnalyticsParameterError, match="file_format is needed"):
        query_op(destination="/x/revenue.txt")
    with pytest.raises(AnalyticsParameterError, match="file_format must be one of csv, json; got 'xlsx'"):
        query_op(destination="/x/revenue.csv", file_format="xlsx")


# -- dbt manifests ---------------------------------------------------------------------------------


def manifest(path: Path, models: int = 3) -> Path:
    nodes = {f"model.shop.m{i}": {"name": f"m{i}", "resource_type": "model"} for i in range(models)}
    path.write_text(json.dumps({"metadata": {"dbt_schema_version": "v12"}, "nodes": nodes}))
    return path


def upload_jobs(emulator: Any) -> list[Any]:
    return [j for j in emulator.jobs if j.operation == "upload_dbt_manifests"]


def dbt_op(**kwargs: Any) -> AnalyticsUploadDbtManifestOperator:
    return AnalyticsUploadDbtManifestOperator(task_id="upload", poll_interval=0.05, **kwargs)


def test_local_manifests_are_uploaded_and_synced(analytics_emulator, analytics_connection, context, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = manifest(tmp_path / "a" / "manifest.json"), manifest(tmp_path / "b" / "manifest.json", 5)
    result = dbt_op(manifests=[str(first), f"file://{second}"], data_source_name="Production warehouse").execute(
        context
    )
    (job,) = upload_jobs(analytics_emulator)
    assert job.params["files"] == [["manifest.json", first.stat().st_size], ["manifest.json", second.stat().st_size]]
    assert job.params["data_source_id"] == 1
    assert result == {
        "job_id": job.id,
        "status": "success",
        "data_source_name": "Production warehouse",
        "manifests": [str(first), f"file://{second}"],
    }


@pytest.fixture
def memory_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """``memory://`` as an object store (fsspec's in-memory filesystem), as a provider would register one."""
    import fsspec

    try:
        from airflow.sdk.io import fs as registry  # Airflow 3.1 and later
    except ImportError:  # Airflow 3.0
        import airflow.io as registry  # type: ignore[no-redef]

    monkeypatch.setitem(registry._register_filesystems(), "memory", lambda conn_id: fsspec.filesystem("memory"))


def test_a_manifest_in_object_storage_is_streamed_from_there(
    analytics_emulator, analytics_connection, context, memory_store
):
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    remote = ObjectStoragePath("memory://dbt-artifacts/prod/target/manifest.json")
    body = json.dumps({"metadata": {}, "nodes": {f"model.x.m{i}": {} for i in range(200)}}).encode()
    with remote.open("wb") as out:
        out.write(body)
    dbt_op(manifests=str(remote)).execute(context)
    (job,) = upload_jobs(analytics_emulator)
    assert job.params["files"] == [["manifest.json", len(body)]]


def test_a_malformed_manifest_fails_the_task_with_the_services_message(
    analytics_emulator, analytics_connection, context, tmp_path
):
    broken = tmp_path / "manifest.json"
    broken.write_text('{"metadata": {"dbt_schema_version": ')
    with pytest.raises(AnalyticsJobError, match=r"Malformed manifest\(s\): manifest.json") as failure:
        dbt_op(manifests=[str(broken)]).execute(context)
    assert failure.value.job_id == upload_jobs(analytics_emulator)[0].id


@pytest.mark.parametrize(
    ("manifests", "message"),
    [
        ([], "1 to 5 manifest.json files; got 0"),
        ([f"/m{i}.json" for i in range(6)], "1 to 5 manifest.json files; got 6"),
        ([""], r"manifests\[0\] must be a path or URL"),
        (42, "manifests must be a path or URL"),
    ],
)
def test_bad_manifest_lists_are_refused_when_the_dag_is_parsed(manifests, message):
    with pytest.raises(AnalyticsParameterError, match=message):
        dbt_op(manifests=manifests)


def test_a_missing_local_manifest_is_refused_before_any_request(
    analytics_emulator, analytics_connection, context, tmp_path
):
    with pytest.raises(AnalyticsParameterError, match=r"manifests\[1\] is not a file: .*missing.json"):
        dbt_op(manifests=[str(manifest(tmp_path / "manifest.json")), str(tmp_path / "missing.json")]).execute(context)
    assert [r for r in analytics_emulator.requests if r.origin == "api"] == []


def test_an_unknown_data_source_fails_with_the_services_answer(
    analytics_emulator, analytics_connection, context, tmp_path
):
    from analytics_provider.exceptions import AnalyticsApiError

    with pytest.raises(AnalyticsApiError, match="404"):
        dbt_op(manifests=[str(manifest(tmp_path / "manifest.json"))], data_source_name="Nope").execute(context)
    assert upload_jobs(analytics_emulator) == []
