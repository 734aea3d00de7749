"""The access operators refuse what they cannot run, when the DAG is parsed: task, parameter, allowed values."""

from __future__ import annotations

from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.operators import AnalyticsSyncGroupMembersOperator, AnalyticsSyncUserAttributesOperator


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "sync: sql or rows must be one of the two (not both); got {'sql': None, 'rows': None}"),
        ({"sql": "SELECT 1", "rows": [], "sql_conn_id": "w"}, "sync: sql or rows must be one of the two (not both)"),
        ({"sql": "SELECT 1"}, "sync: sql_conn_id must be the connection of the database sql runs on; got None"),
        ({"rows": [], "dry_run": "yes"}, "sync: dry_run must be True or False; got 'yes'"),
        ({"rows": [], "delete_missing": 1}, "sync: delete_missing must be True or False; got 1"),
        ({"rows": [], "invite_role": "viewer"},
         "sync: invite_role must be one of user, explorer, analyst, admin, growth_admin, it_admin or None; "
         "got 'viewer'"),
        ({"rows": [], "max_deletes": -1}, "sync: max_deletes must be a number of removals (0 or more) or None; got -1"),
        ({"rows": [], "allow_delete_all": "yes"}, "sync: allow_delete_all must be True or False; got 'yes'"),
    ],
    ids=["neither", "both", "no-connection", "dry-run", "delete-missing", "role", "max-deletes", "allow-delete-all"],
)
def test_wrong_arguments_are_refused_at_parse_time(kwargs: dict[str, Any], message: str) -> None:
    for operator in (AnalyticsSyncUserAttributesOperator, AnalyticsSyncGroupMembersOperator):
        with pytest.raises(AnalyticsParameterError) as refused:
            operator(task_id="sync", **kwargs)
        assert str(refused.value).startswith(message)


def test_delete_missing_needs_what_the_task_manages_named_at_parse_time() -> None:
    with pytest.raises(AnalyticsParameterError, match=r"^sync: attributes must be the attributes this task manages"):
        AnalyticsSyncUserAttributesOperator(task_id="sync", rows=[], delete_missing=True)
    with pytest.raises(AnalyticsParameterError, match=r"^sync: groups must be the groups this task manages"):
        AnalyticsSyncGroupMembersOperator(task_id="sync", rows=[], delete_missing=True)
    AnalyticsSyncGroupMembersOperator(task_id="sync", rows=[], delete_missing=True, group_ids=[2])


def test_rows_that_are_not_a_list_are_refused_before_any_request() -> None:
    task = AnalyticsSyncUserAttributesOperator(task_id="sync", rows={"user": 1})
    with pytest.raises(AnalyticsParameterError, match=r"^sync: rows must be a list of rows .*; got dict$"):
        task.execute({})


def test_the_dry_run_flag_leaves_airflows_own_dry_run_method_alone() -> None:
    # Airflow 2.11 and 3.1+ have BaseOperator.dry_run(); an instance attribute would hide it
    task = AnalyticsSyncGroupMembersOperator(task_id="sync", rows=[], dry_run=True)
    assert task.is_dry_run is True and "dry_run" not in vars(task)
