"""What a job cost (``include_data_source_stats``) and a failure's bounded story, against the emulator."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsJobError, AnalyticsParameterError
from analytics_provider.job_tasks import MAX_ERROR_LINES
from analytics_provider.operators import (
    AnalyticsBustDataSourceCacheOperator,
    AnalyticsExportWidgetOperator,
    AnalyticsPreloadDashboardOperator,
)
from analytics_provider.testing.task_instance import FakeTaskInstance

FINAL_ERROR = "BigQuery: Query exceeded resource limits (the decisive error)"


@pytest.fixture
def context() -> dict[str, Any]:
    return {"ti": FakeTaskInstance()}


def bust(**kwargs: Any) -> AnalyticsBustDataSourceCacheOperator:
    return AnalyticsBustDataSourceCacheOperator(task_id="bust", data_source_id=1, poll_interval=0.05, **kwargs)


def test_a_failure_shows_the_last_error_lines_and_how_many_were_left_out(analytics_emulator, analytics_connection,
                                                                         context):
    rejected = [f"row {i} rejected: value too long for column 'region'" for i in range(2000)]
    analytics_emulator.fail_next_job("bust_data_source_cache", FINAL_ERROR, error_lines=rejected)
    with pytest.raises(AnalyticsJobError) as failed:
        bust().execute(context)
    message = str(failed.value)
    print(f"\n{message}")
    lines = message.splitlines()
    assert lines[0].endswith("ended with status 'failure'") and lines[1] == f"last error: {FINAL_ERROR}"
    assert lines[2] == f"  (1981 earlier ERROR lines left out; the last {MAX_ERROR_LINES} follow)"
    assert lines[-1].endswith(f"ERROR {FINAL_ERROR}")  # the decisive line, last, as the job logged it
    assert [line.split("ERROR ", 1)[1] for line in lines[3:-1]] == rejected[-(MAX_ERROR_LINES - 1):]
    assert "[cut:" not in message


def test_long_error_lines_are_shown_as_many_as_fit_the_last_one_always(analytics_emulator, analytics_connection,
                                                                       context):
    long_lines = [f"stack frame {i}: " + "x" * 3000 for i in range(30)]
    analytics_emulator.fail_next_job("bust_data_source_cache", FINAL_ERROR, error_lines=long_lines)
    with pytest.raises(AnalyticsJobError) as failed:
        bust().execute(context)
    message = str(failed.value)
    assert message.rstrip().endswith(f"ERROR {FINAL_ERROR}") and "[cut:" not in message.splitlines()[-1]
    assert "earlier ERROR lines left out" in message and len(message) <= 4000


def test_a_few_error_lines_are_all_shown(analytics_emulator, analytics_connection, context):
    analytics_emulator.fail_next_job("bust_data_source_cache", FINAL_ERROR, error_lines=["first", "second"])
    with pytest.raises(AnalyticsJobError) as failed:
        bust().execute(context)
    assert [line.split("ERROR ", 1)[1] for line in str(failed.value).splitlines()[2:]] == ["first", "second",
                                                                                            FINAL_ERROR]
    assert "left out" not in str(failed.value)


def test_an_export_reports_what_its_job_cost(analytics_emulator, analytics_connection, context, tmp_path, capsys,
                                             caplog):
    op = AnalyticsExportWidgetOperator(task_id="export", widget_id=101, destination=str(tmp_path / "out.csv"),
                                       poll_interval=0.05, include_data_source_stats=True)
    with caplog.at_level(logging.INFO):
        result = op.execute(context)
    (job,) = analytics_emulator.jobs
    cost = str(round(job.duration * 1_000_000))
    assert result["data_source_stats"] == [{"id": f"emu-job-{job.id}-q1", "cost": cost, "cost_unit": "B"}]
    assert result["path"] == str(tmp_path / "out.csv")
    # the task log: logging on Airflow 2 (which also echoes it to stdout), structlog on 3: once in each place
    said = [[line for line in logged.splitlines() if "execution in the data source" in line]
            for logged in (caplog.text, capsys.readouterr().out)]
    assert [len(lines) for lines in said] in ([1, 0], [0, 1], [1, 1]), said
    expected = f"Job {job.id} cost {int(cost):,} B (1 execution in the data source)"
    assert all(expected in line for lines in said for line in lines)
    asked = [r for r in analytics_emulator.requests if r.operation == "get_job" and r.query.get(
        "include_data_source_stats")]
    assert len(asked) == 1


def test_without_the_option_nothing_more_is_read(analytics_emulator, analytics_connection, context):
    result = bust().execute(context)
    assert "data_source_stats" not in result
    assert not [r for r in analytics_emulator.requests if r.query.get("include_data_source_stats")]


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_a_bad_include_data_source_stats_is_refused_when_the_dag_is_parsed(value):
    with pytest.raises(AnalyticsParameterError, match=r"^preload: include_data_source_stats must be True or False"):
        AnalyticsPreloadDashboardOperator(task_id="preload", dashboard_id=1, include_data_source_stats=value)
