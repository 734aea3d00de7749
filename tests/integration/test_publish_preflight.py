"""The publish operator checks custom charts first: a broken chart stops the publish, a clean one goes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowException

from analytics_provider.operators import AnalyticsPublishAmlProjectOperator
from analytics_provider.testing.task_instance import FakeTaskInstance

CORPUS = Path(__file__).resolve().parents[1] / "aml" / "corpus"


def publish_task(project_dir: Path) -> AnalyticsPublishAmlProjectOperator:
    return AnalyticsPublishAmlProjectOperator(
        task_id="publish", project_dir=str(project_dir), lint_custom_charts=True, poll_interval=0.05
    )


def publishes(emulator: Any) -> list[Any]:
    return [r for r in emulator.requests if r.operation == "publish_aml_project"]


def test_a_broken_chart_stops_the_publish_with_the_diagnostic_in_the_log(
    analytics_emulator, analytics_connection, tmp_path, capsys
) -> None:
    shutil.copytree(CORPUS / "valid" / "dashboard_project", tmp_path / "charts")
    shutil.copy(CORPUS / "invalid" / "data_not_values.chart.aml", tmp_path / "charts" / "broken.chart.aml")
    with pytest.raises(AirflowException, match="custom chart check found 1 error") as raised:
        publish_task(tmp_path).execute({"ti": FakeTaskInstance()})
    line = f"{tmp_path / 'charts' / 'broken.chart.aml'}:6:13: CC404"
    assert line in str(raised.value)
    assert line in capsys.readouterr().out  # the task log
    assert publishes(analytics_emulator) == []  # nothing was sent


def test_a_clean_project_is_checked_then_published(analytics_emulator, analytics_connection, tmp_path) -> None:
    shutil.copytree(CORPUS / "valid" / "dashboard_project", tmp_path / "charts")
    result = publish_task(tmp_path).execute({"ti": FakeTaskInstance()})
    assert result["target_commit"] and result["objects"]
    assert len(publishes(analytics_emulator)) == 1


def test_lint_needs_a_project_dir() -> None:
    with pytest.raises(ValueError, match=r"^publish: project_dir must be the AML project.s folder when lint"):
        AnalyticsPublishAmlProjectOperator(task_id="publish", lint_custom_charts=True)


def test_a_project_with_charts_of_every_kind_is_published(analytics_emulator, analytics_connection, tmp_path) -> None:
    # Vega-Lite 5 and 6 (layers, facets, boxplot, arcs, selections, joinaggregate and window over
    # measures, nulls) and Vega (signals, the service's sankey transform), each compiled when
    # vl-convert is installed: none may stop the publish.
    shutil.copytree(CORPUS / "valid" / "dashboard_project", tmp_path / "charts")
    kinds = sorted((CORPUS / "valid").glob("vg*_*.chart.aml"))
    assert {p.name.split("_")[0] for p in kinds} == {"vgl", "vg"}
    for chart in kinds:
        shutil.copy(chart, tmp_path / "charts" / chart.name)
    result = publish_task(tmp_path).execute({"ti": FakeTaskInstance()})
    assert result["target_commit"]
    assert len(publishes(analytics_emulator)) == 1
