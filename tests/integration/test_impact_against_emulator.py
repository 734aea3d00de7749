"""find_impacted against the emulator over sockets: the seed's chains, the large workspace's cost,
and reads that are not kept from one call to the next."""

from __future__ import annotations

import pytest

from analytics_provider.exceptions import AnalyticsApiError, AnalyticsLookupError, AnalyticsParameterError
from analytics_provider.hooks.analytics import AnalyticsHook


@pytest.fixture
def hook(analytics_emulator, analytics_connection) -> AnalyticsHook:
    hook = AnalyticsHook(analytics_connection)
    yield hook
    hook.close()


def api_operations(emulator) -> list[str]:
    return [r.operation for r in emulator.requests if r.origin == "api"]


def titles(impact: dict) -> list[str]:
    return [d["title"] for d in impact["dashboards"]]


def test_campaigns_impact_the_boards_that_read_it_only(hook: AnalyticsHook) -> None:
    impact = hook.find_impacted(tables=["marketing.campaigns"])
    assert titles(impact) == ["Marketing performance", "Campaign ROI"]  # the second's query model reads it
    # campaigns: a model in no AML project, found anyway
    assert [m["name"] for m in impact["data_models"]] == ["campaigns", "campaign_roi"]
    assert [d["name"] for d in impact["data_sets"]] == ["marketing", "campaign_roi"]
    assert impact["data_sources"] == [{"id": 1, "name": "Production warehouse",
                                       "why": "table marketing.campaigns -> model campaigns (3) -> data source 1; "
                                              "table marketing.campaigns -> query model campaign_roi (6) (its SQL "
                                              "reads marketing.campaigns) -> data source 1"}]
    assert impact["dashboards"][0]["why"] == (
        "table marketing.campaigns -> model campaigns (3) -> data set marketing (2) -> report 'Campaign performance'"
        " (21) -> widget 'Campaign performance' (201) -> dashboard 'Marketing performance' (2)")


def test_revenue_targets_impact_executive_summary_and_not_the_boards_of_other_models(hook: AnalyticsHook) -> None:
    impact = hook.find_impacted(tables=['"FINANCE".revenue_targets'.lower()])
    assert titles(impact) == ["Executive summary"]  # the sales data set's other reports name other models
    assert sorted(d["name"] for d in impact["data_sets"]) == ["finance_legacy", "sales"]
    assert [r["id"] for r in impact["reports"]] == [31]


def test_names_the_warehouse_compares_alike_and_tables_nothing_reads(hook: AnalyticsHook) -> None:
    impact = hook.find_impacted(tables=["ANALYTICS.Public.ORDERS", "orders", "staging.unused"])
    assert titles(impact) == ["Sales overview", "Regional sales"]  # the second's query model is built on orders
    assert impact["tables"] == [{"table": "ANALYTICS.Public.ORDERS", "data_model_ids": [1]},
                                {"table": "orders", "data_model_ids": [1]},
                                {"table": "staging.unused", "data_model_ids": [], "closest": []}]
    assert impact["notes"] == ["table staging.unused: no data model reads it"]


def test_models_and_data_sets_by_id_or_name(hook: AnalyticsHook, analytics_emulator) -> None:
    assert titles(hook.find_impacted(data_models=["customers"])) == ["Marketing performance"]
    by_id = hook.find_impacted(data_models=[3])
    assert titles(by_id) == ["Marketing performance"]
    assert [s["id"] for s in by_id["data_sources"]] == [1]  # read from the data set that uses it
    assert titles(hook.find_impacted(data_sets=["marketing"])) == ["Marketing performance"]
    assert titles(hook.find_impacted(data_sets=[1])) == ["Sales overview", "Marketing performance",
                                                         "Executive summary"]
    with pytest.raises(AnalyticsLookupError, match="custmers"):
        hook.find_impacted(data_models=["custmers"])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({}, "give tables, data_models or data_sets"),
    ({"tables": "marketing.campaigns"}, "tables must be a list"),
    ({"tables": ["a..b"]}, "schema.table"),
    ({"tables": ["a.b"], "fold": "title"}, "fold must be one of lower, upper"),
    ({"data_models": [None]}, "each of data_models must be a name or an id"),
])
def test_bad_input_is_refused_before_any_request(hook: AnalyticsHook, analytics_emulator, kwargs, message) -> None:
    analytics_emulator.clear_requests()
    with pytest.raises(AnalyticsParameterError, match=message):
        hook.find_impacted(**kwargs)
    assert api_operations(analytics_emulator) == []


def test_reads_are_made_once_per_call_and_anew_by_the_next(hook: AnalyticsHook, analytics_emulator) -> None:
    analytics_emulator.clear_requests()
    hook.find_impacted(tables=["marketing.campaigns", "MARKETING.CAMPAIGNS"], data_models=[3])
    first = api_operations(analytics_emulator)
    assert first.count("list_dashboards") == 1 and first.count("get_data_set") == len(set(
        r.path for r in analytics_emulator.requests if r.operation == "get_data_set"))
    added = analytics_emulator.add_dashboards(["Campaigns, copied"], like=2)
    impact = hook.find_impacted(tables=["marketing.campaigns"])
    assert titles(impact) == ["Marketing performance", "Campaign ROI", "Campaigns, copied"]
    assert impact["dashboards"][2]["id"] == added[0]


def test_large_workspace_cost(hook: AnalyticsHook, analytics_emulator) -> None:
    from analytics_provider.testing.emulator.workspace import table_of

    analytics_emulator.set_rate_limit(quota=10**6)
    analytics_emulator.build_workspace(dashboards=1000, widgets=4000, models=200, data_sets=60)
    analytics_emulator.clear_requests()
    impact = hook.find_impacted(tables=[table_of(i * 20 + 3) for i in range(10)])
    operations = api_operations(analytics_emulator)
    assert impact["dashboards"] and len(impact["data_models"]) == 10
    assert operations.count("list_dashboards") == 11  # 1,003 dashboards, 100 a page
    assert operations.count("get_dependants") == 10 + 6  # each changed model, each data source once (three seeded)
    # each impacted data set once, and the seed's two read to find its model that is in no project
    assert operations.count("get_data_set") == len(impact["data_sets"]) + 2
    assert "get_query_report" not in operations and "get_dashboard_widget" not in operations
    every_report = {w["id"] for w in impact["widgets"]}
    assert len(every_report) == len(impact["widgets"])


@pytest.mark.parametrize(("shapes", "report_reads"), [
    ({"data_set_reports": False, "widget_reports": True}, 0),  # the widgets carry their reports
    ({"data_set_reports": False, "widget_reports": False}, 7),  # each widget's report read once
], ids=["widgets-carry-reports", "nothing-carries-reports"])
def test_answers_without_the_data_sets_reports(hook: AnalyticsHook, analytics_emulator, shapes, report_reads) -> None:
    analytics_emulator.set_answer_shapes(**shapes)
    analytics_emulator.clear_requests()
    impact = hook.find_impacted(tables=["finance.revenue_targets"])
    assert titles(impact) == ["Executive summary"]
    assert api_operations(analytics_emulator).count("get_query_report") == report_reads


def test_no_project_known_is_an_error_not_nothing_to_refresh(hook: AnalyticsHook, analytics_emulator) -> None:
    analytics_emulator.inject("list_dashboards_metadata", status=404, times=10)
    with pytest.raises(AnalyticsLookupError, match=r"no data model could be found, so nothing can be matched: GET "
                                                   r"/dashboards/list_metadata answered 404.*give project_ids"):
        hook.find_impacted(tables=["marketing.campaigns"])
    assert titles(hook.find_impacted(tables=["finance.revenue_targets"], project_ids=[1])) == ["Executive summary"]


def test_dashboards_listed_without_widgets_are_read_alone(hook: AnalyticsHook, analytics_emulator) -> None:
    analytics_emulator.set_answer_shapes(listed_widgets=False)
    analytics_emulator.clear_requests()
    impact = hook.find_impacted(tables=["finance.revenue_targets"])
    assert titles(impact) == ["Executive summary"]
    assert api_operations(analytics_emulator).count("get_dashboard") == 5  # each listed board, once
    assert ("dashboard 'Executive summary' (3): the list did not carry its widgets; read alone") in impact["notes"]


def test_a_project_that_does_not_exist_is_named_with_those_that_do(hook: AnalyticsHook, analytics_emulator) -> None:
    with pytest.raises(AnalyticsLookupError, match=r"^find_impacted: project_ids: no AML project 999 \(GET "
                                                   r"/data_models answered 404\); the dashboards name AML "
                                                   r"project\(s\) 1$"):
        hook.find_impacted(tables=["public.orders"], project_ids=[1, 999])
    analytics_emulator.clear_requests()
    with pytest.raises(AnalyticsParameterError, match=r"project_ids must name at least one AML project"):
        hook.find_impacted(tables=["public.orders"], project_ids=[])  # not "no dashboard names a project"
    assert [r for r in analytics_emulator.requests if r.origin == "api"] == []


def test_a_dashboard_deleted_between_the_list_and_its_read_is_skipped_with_a_note(
        hook: AnalyticsHook, analytics_emulator) -> None:
    analytics_emulator.set_answer_shapes(listed_widgets=False)
    analytics_emulator.inject("get_dashboard", status=404, after=1)  # the second board read alone: 2
    impact = hook.find_impacted(tables=["marketing.campaigns"])
    assert titles(impact) == ["Campaign ROI"]  # Marketing performance is gone: nothing to preload
    assert ("dashboard 'Marketing performance' (2): deleted since it was listed (its read answered 404): skipped"
            in impact["notes"])
    analytics_emulator.inject("get_dashboard", status=403)
    with pytest.raises(AnalyticsApiError, match="403"):  # not a deletion: the key may not read it
        hook.find_impacted(tables=["marketing.campaigns"])


def test_sql_that_cannot_be_parsed_is_taken_as_impacted_where_it_names_the_table(
        hook: AnalyticsHook, analytics_emulator) -> None:
    with analytics_emulator.world.lock:
        analytics_emulator.world.state.data_models[6]["sql"] = "select channel, spend from marketing.campaigns where ("
    impact = hook.find_impacted(tables=["marketing.campaigns"])
    assert titles(impact) == ["Marketing performance", "Campaign ROI"]
    (note,) = [n for n in impact["notes"] if "could not be parsed" in n]
    assert note.startswith("query model campaign_roi (6): its SQL could not be parsed (")
    assert note.endswith("it names marketing.campaigns: taken as impacted")


def test_a_snowflake_query_model_is_read_in_its_dialect(hook: AnalyticsHook, analytics_emulator) -> None:
    with analytics_emulator.world.lock:  # QUALIFY is Snowflake's: a generic parser would not read it this way
        analytics_emulator.world.state.data_models[6].update(data_source_id=3, sql=(
            "select channel from WEB.SESSIONS qualify row_number() over (partition by channel order by day) = 1"))
    impact = hook.find_impacted(tables=["web.sessions"], fold="upper")
    assert [m["id"] for m in impact["data_models"]] == [7, 6]  # the Snowflake table model, and the query model
    assert "query model campaign_roi (6) (its SQL reads WEB.SESSIONS)" in impact["data_models"][1]["why"]
