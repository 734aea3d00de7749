"""The Python examples of the docs run against the emulator, as written.

Each ``.. code-block:: python`` of the pages below is taken from the ``.rst`` file and run: the
operator examples as tasks of one DAG run through Airflow with no logical date (as a manual
trigger makes it), the quick start's DAG as it stands, the hook examples as plain calls; the
README's operator likewise. Only
what cannot exist here is replaced, visibly: the ``s3://reports/`` bucket becomes a local folder,
``/opt/airflow/checkouts/analytics`` the example AML project, ``/data/exports/`` a temp folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from .conftest import AIRFLOW_VERSION, EXAMPLE_DAGS, dag_bag_of, dag_test, set_waits
from .test_example_dags import run_day

DOCS = Path(__file__).resolve().parents[2] / "docs"
OPERATOR_PAGES = ("bust_cache", "execute_schedule", "export", "preload", "publish", "sensor", "index", "dbt", "query")
BLOCK = re.compile(r"^\.\. code-block:: python\n\n((?:(?: {3}.*)?\n)+)", re.MULTILINE)


def examples(page: str) -> list[str]:
    """The Python examples of ``docs/<page>.rst``, dedented."""
    text = (DOCS / f"{page}.rst").read_text(encoding="utf-8")
    return ["\n".join(line[3:] for line in block.splitlines()) for block in BLOCK.findall(text)]


def localised(code: str, tmp_path: Path) -> str:
    return (
        code.replace("s3://reports/", f"file://{tmp_path}/reports/")
        .replace("s3://finance/", f"file://{tmp_path}/finance/")
        .replace("s3://dbt-artifacts/", f"file://{tmp_path}/dbt-artifacts/")
        .replace("/opt/airflow/checkouts/analytics", str(EXAMPLE_DAGS / "aml_project"))
        .replace("/data/exports/", f"{tmp_path}/exports/")
    )


def run_without_logical_date(dag_file: str, dag_id: str, tmp_path: Path) -> Any:
    """Write a DAG file, load and store it as the dag processor would, run it as a manual trigger."""
    folder = tmp_path / "dags"
    folder.mkdir()
    (folder / f"{dag_id}.py").write_text(dag_file, encoding="utf-8")
    dag = dag_bag_of(folder).get_dag(dag_id)
    set_waits(dag, deferrable=None)
    dag_run = dag_test(dag)
    assert dag_run.logical_date is None or AIRFLOW_VERSION < (3, 0)  # 2.11 gives every run one
    return dag_run


def indented(code: str) -> str:
    return "".join(f"    {line}\n" if line else "\n" for line in code.splitlines())


def states(dag_run: Any) -> dict[str, str]:
    return {ti.task_id: ti.state for ti in dag_run.get_task_instances()}


def test_every_page_here_has_its_examples() -> None:
    counts = {page: len(examples(f"operators/{page}")) for page in OPERATOR_PAGES}
    counts |= {"quickstart": len(examples("quickstart")), "hook": len(examples("hook"))}
    counts |= {"trigger": len(examples("operators/trigger"))}
    assert all(counts.values()), counts


def test_operator_examples_run_as_one_dag(example_dag_bag, analytics_emulator, analytics_connection, tmp_path) -> None:
    dag_file = (
        "import pendulum\nfrom airflow.providers.common.compat.sdk import DAG\n\n"
        'with DAG("doc_operator_examples", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):\n'
    )
    for page in OPERATOR_PAGES:
        for code in examples(f"operators/{page}"):
            dag_file += f"    # docs/operators/{page}.rst\n" + indented(localised(code, tmp_path))
    dag_file += '    AnalyticsExecuteDataAlertOperator(task_id="execute_alert", data_alert_id=1)\n'
    import datetime
    import runpy

    write_manifest = runpy.run_path(str(EXAMPLE_DAGS / "analytics_dbt_post_deploy.py"))["write_manifest"]
    today = datetime.datetime.now(datetime.timezone.utc).date()
    for day in (today, today + datetime.timedelta(days=1)):  # the run's run_after, even across midnight
        target = tmp_path / "dbt-artifacts" / day.isoformat() / "target"
        target.mkdir(parents=True)
        write_manifest(target / "manifest.json", project_name="docs_example")
    dag_run = run_without_logical_date(dag_file, "doc_operator_examples", tmp_path)
    assert dag_run.state == "success", states(dag_run)
    assert set(states(dag_run)) == {
        "bust_cache", "send_daily_report", "export_revenue", "export_revenue_by_id", "preload_sales_overview",
        "publish_aml_project", "send_report", "report_sent", "execute_alert",
        "upload_dbt_manifest", "revenue_by_region",
    }
    (revenue,) = (tmp_path / "finance").rglob("revenue-by-region.csv")
    assert revenue.parent.name == run_day(dag_run)
    (export,) = (tmp_path / "reports").rglob("revenue.xlsx")
    assert export.parent.name == run_day(dag_run)
    from openpyxl import load_workbook

    rows = list(load_workbook(export).active.iter_rows(values_only=True))
    assert len(rows) > 1 and all("EU" in row for row in rows[1:]), rows[:3]
    # the named export (Region EU, Channel not Phone) and the same widget by ids (Region EU)
    (by_id,) = (tmp_path / "reports").rglob("revenue-by-id.xlsx")
    rows_by_id = list(load_workbook(by_id).active.iter_rows(values_only=True))
    assert set(rows[1:]) <= set(rows_by_id[1:]) and len(rows_by_id) > 1


def test_quickstart_dag_runs(example_dag_bag, analytics_emulator, analytics_connection, tmp_path) -> None:
    (code,) = examples("quickstart")
    dag_run = run_without_logical_date(localised(code, tmp_path), "revenue_export", tmp_path)
    assert dag_run.state == "success", states(dag_run)
    (export,) = (tmp_path / "reports").rglob("revenue.xlsx")
    assert export.parent.name == run_day(dag_run)


def test_readme_example_runs(example_dag_bag, analytics_emulator, analytics_connection, tmp_path) -> None:
    """The README's operator, in a DAG run by hand: its destination's date renders on every Airflow."""
    text = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    (code,) = [b for b in re.findall(r"^```python\n(.*?)^```", text, re.M | re.S) if "Operator(" in b]
    dag_file = (
        "import pendulum\nfrom airflow.providers.common.compat.sdk import DAG\n\n"
        'with DAG("readme_example", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):\n'
        + indented(localised(code, tmp_path))
    )
    dag_run = run_without_logical_date(dag_file, "readme_example", tmp_path)
    assert dag_run.state == "success", states(dag_run)
    (export,) = (tmp_path / "reports").rglob("revenue.xlsx")
    assert export.parent.name == run_day(dag_run)


def test_hook_examples_run(analytics_emulator, analytics_connection, tmp_path) -> None:
    from analytics_provider.hooks.analytics import AnalyticsHook

    analytics_emulator.job_duration = 0  # done at the first look: the example's 2 s interval is never slept
    task_example, download_example, query_example = examples("hook")
    namespace: dict[str, Any] = {}
    exec(compile(task_example, "docs/hook.rst", "exec"), namespace)
    job_id = namespace["invite_missing_analysts"].function(["new.analyst@example.com"])
    assert job_id is not None
    assert [j.operation for j in analytics_emulator.jobs] == ["invite_users"]
    namespace = {"hook": AnalyticsHook()}
    (tmp_path / "exports").mkdir()
    exec(compile(localised(download_example, tmp_path), "docs/hook.rst", "exec"), namespace)
    assert Path(namespace["result"]["path"]).parent == tmp_path / "exports"
    assert namespace["result"]["content_type"].startswith("text/csv")
    namespace = {"hook": AnalyticsHook()}
    exec(compile(query_example, "docs/hook.rst", "exec"), namespace)
    answer = namespace["answer"]
    assert answer["fields"] and answer["meta"]["num_rows"] == len(answer["values"]) > 0


def test_trigger_example_is_what_the_trigger_serialises() -> None:
    from analytics_provider.triggers.analytics import AnalyticsJobTrigger

    (code,) = examples("operators/trigger")
    classpath, kwargs = eval(code)
    assert AnalyticsJobTrigger(**kwargs).serialize() == (classpath, kwargs)


@pytest.mark.parametrize("page", ["emulator", "custom_charts", "errors_and_retries", "reviewed_changes"])
def test_pages_kept_by_others_still_parse(page: str) -> None:
    """Every Python block of the page is found (none, or one the pattern misses, fails) and compiles."""
    codes = examples(page)
    directives = (DOCS / f"{page}.rst").read_text(encoding="utf-8").count(".. code-block:: python")
    assert codes and len(codes) == directives, f"docs/{page}.rst: {len(codes)} of {directives} Python blocks found"
    for code in codes:
        compile(code, f"docs/{page}.rst", "exec")
