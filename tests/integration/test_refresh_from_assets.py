"""Refresh what the loads said they wrote: the refresh operator's tables from the run's triggering
asset events (``tables_from_assets``); the lookup errors it names itself in, and what it says when it
refreshes nothing; against the emulator, the operator called directly."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsLookupError, AnalyticsParameterError
from analytics_provider.operators import AnalyticsRefreshImpactedOperator
from analytics_provider.testing.task_instance import FakeTaskInstance

from .test_refresh_earlier_jobs import StateStore


def events(*uris: str) -> dict[str, list[Any]]:
    """Airflow 3's ``triggering_asset_events``: each asset's events, each naming its asset."""
    return {uri: [SimpleNamespace(asset=SimpleNamespace(uri=uri))] for uri in uris}


def refresh(context: dict[str, Any], **kwargs: Any) -> Any:
    operator = AnalyticsRefreshImpactedOperator(task_id="refresh", tables_from_assets=True, dry_run=True, **kwargs)
    return operator.execute({"ti": FakeTaskInstance(), **context})


def api_requests(emulator: Any) -> list[Any]:
    return [r for r in emulator.requests if r.origin == "api"]


def test_the_tables_the_loads_wrote_are_refreshed_and_other_assets_said_and_ignored(
        analytics_emulator, analytics_connection, capsys) -> None:
    result = refresh({"triggering_asset_events": events(
        "postgres://warehouse:5432/analytics/public/orders", "s3://exports/2026-11-28/orders.csv")})
    assert result["tables"] == ["analytics.public.orders"] and result["unmatched_tables"] == []
    assert {d["title"] for d in result["dashboards"]} == {"Sales overview", "Regional sales"}
    assert ("Asset s3://exports/2026-11-28/orders.csv names no warehouse table (not a warehouse table (scheme "
            "'s3')): ignored") in capsys.readouterr().out  # the task's log


@pytest.mark.parametrize(("uri", "model"), [
    ("snowflake://acme-xy12345/ANALYTICS.WEB.SESSIONS", "sessions"),  # OpenLineage's naming, Snowflake's rules
    ("bigquery://acme-prod/web_events/page_views", "page_views"),  # the provider's URI, BigQuery's rules
])
def test_each_warehouses_table_asset_reaches_the_model_its_data_source_names(analytics_emulator, analytics_connection,
                                                                            uri, model) -> None:
    result = refresh({"triggering_asset_events": events(uri)})
    assert [m["name"] for m in result["data_models"]] == [model]


def test_airflow_2_dataset_events_are_read_too(analytics_emulator, analytics_connection) -> None:
    uri = "postgres://warehouse:5432/analytics/marketing/campaigns"
    result = refresh({"triggering_dataset_events": {uri: [SimpleNamespace(dataset=SimpleNamespace(uri=uri))]}})
    assert result["tables"] == ["analytics.marketing.campaigns"]
    assert {d["title"] for d in result["dashboards"]} == {"Marketing performance", "Campaign ROI"}


@pytest.mark.parametrize(("context", "said"), [
    ({}, "the run has no asset events: triggered by hand or on a schedule?"),
    ({"triggering_asset_events": events("s3://exports/orders.csv")}, "1 asset(s): s3://exports/orders.csv"),
])
def test_a_run_whose_events_name_no_table_fails_before_any_request(analytics_emulator, analytics_connection,
                                                                   context, said) -> None:
    with pytest.raises(AnalyticsParameterError, match="refresh: tables_from_assets: the run's triggering asset "
                                                      "events name no warehouse table") as raised:
        refresh(context)
    assert said in str(raised.value) and "nothing would be refreshed" in str(raised.value)
    assert api_requests(analytics_emulator) == []


def test_tables_from_assets_must_be_a_flag_and_may_stand_alone() -> None:
    with pytest.raises(AnalyticsParameterError, match="tables_from_assets"):
        AnalyticsRefreshImpactedOperator(task_id="refresh", tables_from_assets="yes")
    with pytest.raises(AnalyticsParameterError, match="or tables_from_assets=True"):
        AnalyticsRefreshImpactedOperator(task_id="refresh")
    assert AnalyticsRefreshImpactedOperator(task_id="refresh", tables_from_assets=True).tables is None


def test_project_ids_naming_no_project_fail_naming_the_task(analytics_emulator, analytics_connection) -> None:
    """The hook's lookup error (test_impact_against_emulator) with the task's name first, as its other refusals."""
    operator = AnalyticsRefreshImpactedOperator(task_id="refresh", tables=["public.orders"], project_ids=[999])
    with pytest.raises(AnalyticsLookupError, match=r"^refresh: find_impacted: project_ids: no AML project 999 \(GET "
                                                   r"/data_models answered 404\); the dashboards name AML project"):
        operator.execute({"ti": FakeTaskInstance()})


def test_a_plan_without_a_job_succeeds_saying_why(analytics_emulator, analytics_connection, capsys) -> None:
    operator = AnalyticsRefreshImpactedOperator(task_id="refresh", tables=["marketing.campaigns"], bust_cache=False,
                                                dashboards_filter={"include_tags": ["no-such-tag"]})
    result = operator.execute({"ti": FakeTaskInstance(), "outlet_events": {}})
    why = "dashboards_filter left out all 2 impacted dashboard(s), and bust_cache is False"
    assert (result["jobs"], result["nothing_refreshed"]) == ([], why)
    assert analytics_emulator.jobs == []
    assert f"Nothing to refresh: {why}" in capsys.readouterr().out


def test_a_refresh_cleared_after_it_succeeded_busts_and_preloads_anew(analytics_emulator, analytics_connection) -> None:
    """A cleared task (a new load) is not a retry: the jobs of its green try are not followed again."""
    store = StateStore()

    def run() -> Any:
        operator = AnalyticsRefreshImpactedOperator(task_id="refresh", tables=["public.orders"], deferrable=False,
                                                    outlets=[], poll_interval=0.05)
        return operator.execute({"ti": FakeTaskInstance(), "outlet_events": {}, "task_state_store": store})

    first = run()
    second = run()
    operations = [j.operation for j in analytics_emulator.jobs]
    assert first["job_counts"]["succeeded"] == second["job_counts"]["succeeded"] > 1
    assert operations.count("bust_data_source_cache") == 2
    assert {j["job_id"] for j in first["jobs"]}.isdisjoint(j["job_id"] for j in second["jobs"])


STAGING = "postgres://staging-db.internal:5432/analytics_staging/public/orders"


def test_an_asset_of_another_server_is_not_the_production_data_sources_where_its_location_is_given(
        analytics_emulator, analytics_connection) -> None:
    with pytest.raises(AnalyticsParameterError, match="refresh: nothing to refresh: no data model reads any of the 1 "
                                                      "table"):
        refresh({"triggering_asset_events": events(STAGING)},
                data_sources={1: "postgres://warehouse:5432/analytics", 3: None, 4: None})
    assert not [j for j in analytics_emulator.jobs]
    same = refresh({"triggering_asset_events": events("postgres://warehouse:5432/analytics/public/orders")},
                   data_sources={1: "postgres://WAREHOUSE:5432/analytics"})
    assert {d["title"] for d in same["dashboards"]} == {"Sales overview", "Regional sales"}
    assert same["unchecked_tables"] == []


@pytest.mark.parametrize(("asset_database", "matched"), [("Analytics", True), ("analytics", False)])
def test_a_locations_database_with_capitals_is_compared_as_the_assets_is(analytics_emulator, analytics_connection,
                                                                        asset_database, matched) -> None:
    """PostgreSQL stores "Analytics" and analytics apart: a location's database and an asset's path
    are both names as stored, read by the same rule (a capital letter: created quoted)."""
    uri = f"postgres://warehouse:5432/{asset_database}/public/orders"
    result = refresh({"triggering_asset_events": events(uri)}, data_sources={1: "postgres://warehouse:5432/Analytics"},
                     unmatched_tables="warn")
    assert bool(result["dashboards"]) is matched
    assert [t["table"] for t in result["unmatched_tables"]] == ([] if matched else ["analytics.public.orders"])


def test_where_the_server_cannot_be_known_the_match_is_made_and_the_result_says_so(
        analytics_emulator, analytics_connection, capsys) -> None:
    result = refresh({"triggering_asset_events": events(STAGING)})
    assert result["unchecked_tables"] == [{"table": "analytics_staging.public.orders", "data_source_id": "1",
                                           "not_checked": ["database", "server"]}]
    assert ("Table analytics_staging.public.orders matched in data source 1 by its name alone: its database and "
            "server could not be checked (data_sources={1: 'scheme://host:port/database'} says where it reads)"
            ) in capsys.readouterr().out


def test_data_sources_limit_what_a_hand_typed_table_matches(analytics_emulator, analytics_connection) -> None:
    def run(data_sources: Any) -> Any:
        operator = AnalyticsRefreshImpactedOperator(task_id="refresh", tables=["web.sessions"], dry_run=True,
                                                    data_sources=data_sources)
        return operator.execute({"ti": FakeTaskInstance()})

    assert [m["name"] for m in run([3])["data_models"]] == ["sessions"]
    assert [m["name"] for m in run(["snowflake"])["data_models"]] == ["sessions"]
    with pytest.raises(AnalyticsParameterError, match=r"refresh: no data model reads web.sessions \(web.sessions "
                                                      r"is read by data source 3's models, but data_sources="
                                                      r"\[postgresql\] leaves data source 3 out\)"):
        run(["postgresql"])  # why, not "closest: web.sessions"
    with pytest.raises(AnalyticsParameterError, match=r"data_sources=\[99\] leaves data source 3 out"):
        run([99])


def test_a_location_of_another_warehouse_than_its_data_sources_is_refused_before_any_job(
        analytics_emulator, analytics_connection) -> None:
    with pytest.raises(AnalyticsParameterError, match=r"refresh: find_impacted: data_sources: data source 1 is "
                                                      r"postgresql \(its dbtype\), but its location is a snowflake:// "
                                                      r"one; give where it reads as postgres://"):
        refresh({"triggering_asset_events": events("postgres://warehouse:5432/analytics/public/orders")},
                data_sources={1: "snowflake://acme-xy12345/ANALYTICS"})
    assert analytics_emulator.jobs == []


def test_a_table_left_out_by_its_server_says_so(analytics_emulator, analytics_connection) -> None:
    result = refresh({"triggering_asset_events": events(STAGING)}, unmatched_tables="warn",
                     data_sources={1: "postgres://warehouse:5432/analytics", 3: None, 4: None})
    assert result["unmatched_tables"] == [{
        "table": "analytics_staging.public.orders", "closest": ["public.orders"],
        "left_out": "analytics_staging.public.orders is read by data source 1's models, but data source 1 is on "
                    "another server (warehouse:5432, data_sources; the table's: staging-db.internal:5432)"}]


def test_data_sources_are_checked_when_the_dag_is_parsed() -> None:
    with pytest.raises(AnalyticsParameterError, match=r"^refresh: data_sources must be a list of data source ids and "
                                                      r"warehouse types \(bigquery, .*; got 'materialize', neither"):
        AnalyticsRefreshImpactedOperator(task_id="refresh", tables=["public.orders"], data_sources=["materialize"])


def test_where_the_service_says_which_server_a_data_source_reads_it_is_compared(
        analytics_emulator, analytics_connection) -> None:
    """The document says a data source's answer leaves dbconfig out; one that carries it is used."""
    analytics_emulator.world.state.data_sources[1]["dbconfig"] = {"host": "warehouse", "port": "5432",
                                                                  "database": "analytics"}
    with pytest.raises(AnalyticsParameterError, match="refresh: nothing to refresh: no data model reads any"):
        refresh({"triggering_asset_events": events(STAGING)})
    same = refresh({"triggering_asset_events": events("postgres://warehouse:5432/analytics/public/orders")})
    assert same["unchecked_tables"] == [] and [m["name"] for m in same["data_models"]][:1] == ["orders"]


# -- dashboards_filter and switches that would go green doing nothing (a second attack on #43) --

def test_an_include_title_no_dashboard_has_fails_naming_the_closest_before_any_job(
        analytics_emulator, analytics_connection) -> None:
    operator = AnalyticsRefreshImpactedOperator(task_id="refresh", tables=["public.orders"],
                                                dashboards_filter={"include_titles": ["Sales overveiw", "Regional *"]})
    analytics_emulator.clear_requests()
    with pytest.raises(AnalyticsParameterError, match=r"^refresh: dashboards_filter\['include_titles'\]: no dashboard "
                                                      r"is titled 'Sales overveiw' \(closest: 'Sales overview'\)"):
        operator.execute({"ti": FakeTaskInstance()})
    assert [r.operation for r in api_requests(analytics_emulator)] == ["list_dashboards_metadata"]  # no job


def test_an_exclude_title_no_dashboard_has_is_only_logged(analytics_emulator, analytics_connection, capsys) -> None:
    result = AnalyticsRefreshImpactedOperator(
        task_id="refresh", tables=["public.orders"], dry_run=True,
        dashboards_filter={"exclude_titles": ["Regional sails"]}).execute({"ti": FakeTaskInstance()})
    assert {d["title"] for d in result["dashboards"]} == {"Sales overview", "Regional sales"}
    assert ("dashboards_filter['exclude_titles']: no dashboard is titled 'Regional sails' (closest: 'Regional "
            "sales'): it leaves out nothing") in capsys.readouterr().out
