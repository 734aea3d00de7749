"""An export's file is an event on the export's stable asset, named by the task or by its widget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.testing.records import asset_table

from .conftest import set_waits
from .test_assets import run_events
from .test_example_dags import run_day

DAG_FILE = Path(__file__).resolve().parent / "asset_dags" / "export_assets.py"


@pytest.fixture(scope="module")
def asset_bag(airflow_db: None) -> Any:
    from .conftest import dag_bag_of

    return dag_bag_of(DAG_FILE)


def test_own_outlet_and_alias_carry_the_file_in_the_extra(asset_bag, analytics_emulator, analytics_connection,
                                                          tmp_path) -> None:
    assert asset_table().get("analytics://exports/finance/revenue.csv") is True  # an outlet: declared
    dag = asset_bag.get_dag("export_assets")
    set_waits(dag, True)
    dag_run = dag.test(run_conf={"folder": str(tmp_path)})
    assert dag_run.state == "success"
    day = run_day(dag_run)
    events = {e["task_id"]: e for e in run_events(dag_run)}
    assert set(events) == {"named_outlet", "default_name"}  # one event each, the outlet's not doubled
    named, default = events["named_outlet"], events["default_name"]
    assert named["uri"] == "analytics://exports/finance/revenue.csv" and named["aliases"] == []
    assert named["extra"]["uri"] == (tmp_path / day / "revenue.csv").as_uri()
    assert default["uri"] == "analytics://exports/widget-102.pdf" and default["aliases"] == ["test-exports"]
    assert default["extra"]["uri"] == (tmp_path / day / "orders.pdf").as_uri()
    jobs = {int(j.params["id"]): j.id for j in analytics_emulator.jobs}
    for event, widget in ((named, 101), (default, 102)):
        assert event["extra"]["date"] == day and event["extra"]["job_id"] == jobs[widget]
        assert event["extra"]["path"] == str(Path(event["extra"]["uri"][len("file://"):]))


@pytest.mark.parametrize("name", ["", " revenue.csv", "a//b.csv", "/abs.csv", "trailing/", 7])
def test_a_bad_asset_name_is_refused_when_the_dag_is_parsed(name: Any) -> None:
    from analytics_provider.operators import AnalyticsExportWidgetOperator

    with pytest.raises(AnalyticsParameterError) as refused:
        AnalyticsExportWidgetOperator(task_id="export", widget_id=101, destination="/tmp/x.csv", asset=name)
    assert str(refused.value).startswith("export: asset must be a non-empty text such as 'revenue-by-region.xlsx'")
