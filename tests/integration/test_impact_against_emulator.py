"""find_impacted against the emulator over sockets: the seed's chains, the large workspace's cost,
and reads that are not kept from one call to the next."""

from __future__ import annotations

import pytest

from analytics_provider.exceptions import AnalyticsApiError, AnalyticsLookupError, AnalyticsParameterError
from analytics_provider.hooks.analytics import AnalyticsHook
from analytics_provider.hooks.impact_reads import MAX_SOURCE_SETS
from analytics_provider.impact.scope import source_scope


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
    impact = hook.find_impacted(tables=["Public.ORDERS", "orders", "staging.unused"])
    assert titles(impact) == ["Sales overview", "Regional sales"]  # the second's query model is built on orders
    assert impact["tables"] == [{"table": "Public.ORDERS", "data_model_ids": [1]},
                                {"table": "orders", "data_model_ids": [1]},
                                {"table": "staging.unused", "data_model_ids": [], "closest": []}]
    assert [n for n in impact["notes"] if n.startswith("table ")] == ["table staging.unused: no data model reads it"]


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
    # each impacted data set once, the seed's two read to find its model that is in no project, and at most
    # MAX_SOURCE_SETS more to learn which data sources the widgets read (the list does not carry their reports)
    # (some of which are impacted: each data set is read once)
    paths = [r.path for r in analytics_emulator.requests if r.operation == "get_data_set"]
    assert len(paths) == len(set(paths)) <= len(impact["data_sets"]) + 2 + MAX_SOURCE_SETS
    (note,) = [n for n in impact["notes"] if n.startswith("the data sources of 2996 widget(s) of dashboard(s) ")]
    assert "(and 995 more) are not known" in note and "searched the models of data source(s) 1, 3, 4, 1000" in note
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
    # the data sets the dashboards' filters name: their data source's models, in a project or not
    assert titles(hook.find_impacted(tables=["marketing.campaigns"])) == ["Marketing performance", "Campaign ROI"]
    with analytics_emulator.world.lock:
        for board in analytics_emulator.world.state.dashboards.values():
            board["dynamic_filters"] = []
    with pytest.raises(AnalyticsLookupError, match=r"no data model could be found, so nothing can be matched: GET "
                                                   r"/dashboards/list_metadata answered 404, so no AML project is "
                                                   r"known, and no data source is known from the dashboards' widgets "
                                                   r"\(7 of them do not say which they read\); give data_sources "
                                                   r"\(.*\) or project_ids"):
        hook.find_impacted(tables=["marketing.campaigns"])
    assert titles(hook.find_impacted(tables=["marketing.campaigns"], data_sources=source_scope([1], "t"))) == [
        "Marketing performance", "Campaign ROI"]
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


# -- matching that a user's misspelling or another warehouse's run must not pass (found by an attack on #43) --

def test_unparsable_sql_names_a_table_only_with_every_part_given(hook: AnalyticsHook, analytics_emulator) -> None:
    with analytics_emulator.world.lock:  # a template tag sqlglot cannot read
        analytics_emulator.world.state.data_models[6]["sql"] = (
            "select channel, spend from marketing.campaigns {% if is_prod %} where live {% endif %}")
    misspelt = hook.find_impacted(tables=["markting.campaigns"])
    assert titles(misspelt) == []  # the last part alone does not name it
    assert misspelt["tables"] == [{"table": "markting.campaigns", "data_model_ids": [],
                                   "closest": ["marketing.campaigns"]}]
    (note,) = [n for n in misspelt["notes"] if "could not be parsed" in n]
    assert note.endswith("it names none of the tables given (every part of each, by its data source's rules)")
    for spelt in ("marketing.campaigns", '"marketing"."campaigns"', "MARKETING.Campaigns"):  # PostgreSQL's rules
        assert titles(hook.find_impacted(tables=[spelt])) == ["Marketing performance", "Campaign ROI"], spelt
    assert titles(hook.find_impacted(tables=['"Marketing".campaigns'])) == []  # quoted: not folded


def test_a_dbt_run_of_another_warehouse_matches_only_its_warehouses_models(hook: AnalyticsHook) -> None:
    snowflake = "ANALYTICS.marketing.campaigns"  # what dbt-snowflake writes; the seed's campaigns is PostgreSQL's
    impact = hook.find_impacted(tables=[snowflake, "ANALYTICS.WEB.SESSIONS"],
                                warehouses={snowflake: "snowflake", "ANALYTICS.WEB.SESSIONS": "snowflake"})
    assert {t["table"]: t["data_model_ids"] for t in impact["tables"]} == {snowflake: [],
                                                                           "ANALYTICS.WEB.SESSIONS": [7]}
    assert [s["id"] for s in impact["data_sources"]] == [3]
    postgres = hook.find_impacted(tables=['"analytics"."marketing"."campaigns"'],
                                  warehouses={'"analytics"."marketing"."campaigns"': "postgres"})
    assert titles(postgres) == ["Marketing performance", "Campaign ROI"]
    assert ('data source 1: none of its models names a database, so the database of '
            '"analytics"."marketing"."campaigns" could not be checked: matched on schema and table'
            ) in postgres["notes"]
    unknown = hook.find_impacted(tables=[snowflake], warehouses={snowflake: "materialize"})
    assert titles(unknown) == ["Marketing performance", "Campaign ROI"]  # by name, and said
    assert ("the warehouse of materialize is not one whose names are known: its tables are matched by name in "
            "every data source") in unknown["notes"]
    unsaid = hook.find_impacted(tables=[snowflake], warehouses={snowflake: None})
    assert any(n.startswith("the dbt run does not say its adapter") for n in unsaid["notes"])


def test_a_database_given_must_be_one_its_data_source_names(hook: AnalyticsHook, analytics_emulator) -> None:
    with analytics_emulator.world.lock:  # a Snowflake model named without its database, beside SESSIONS (ANALYTICS)
        state = analytics_emulator.world.state
        state.data_models[9] = {**state.data_models[7], "id": 9, "name": "events", "table_name": "WEB.EVENTS"}
        next(d for d in state.data_sets.values() if 7 in d["model_ids"])["model_ids"].append(9)
    relations = {"RAW.WEB.EVENTS": "snowflake", "ANALYTCS.WEB.EVENTS": "snowflake", "analytics.web.events": "snowflake"}
    impact = hook.find_impacted(tables=list(relations), warehouses=relations)
    assert {t["table"]: t["data_model_ids"] for t in impact["tables"]} == {
        "RAW.WEB.EVENTS": [], "ANALYTCS.WEB.EVENTS": [], "analytics.web.events": [9]}
    unchecked = hook.find_impacted(tables=["anlaytics.marketing.campaigns"])  # the seed's PostgreSQL models name
    assert titles(unchecked) == ["Marketing performance", "Campaign ROI"]  # no database: it cannot be checked,
    assert ("data source 1: none of its models names a database, so the database of anlaytics.marketing.campaigns "
            "could not be checked: matched on schema and table") in unchecked["notes"]  # and it is said


def test_an_unreadable_data_source_is_compared_by_postgresqls_rules_and_said(
        hook: AnalyticsHook, analytics_emulator) -> None:
    with analytics_emulator.world.lock:
        del analytics_emulator.world.state.data_sources[3]["dbtype"]
    impact = hook.find_impacted(tables=['"ANALYTICS"."WEB"."SESSIONS"'])
    assert ("data source 3: its warehouse is not known (its answer has no dbtype): its models' tables are compared "
            "by PostgreSQL's rules (lower case, schema public) and with tables of any warehouse; give "
            "fold/default_schema if they differ") in impact["notes"]


def test_a_report_with_a_field_on_no_model_is_impacted_when_its_data_set_is(
        hook: AnalyticsHook, analytics_emulator) -> None:
    with analytics_emulator.world.lock:  # customers' report shows a data set metric computed from orders
        fields = analytics_emulator.world.state.query_reports[22]["viz_setting"]["fields"]["table_fields"]
        fields.append({"path_hash": {"field_name": "revenue_per_signup", "model_id": None, "is_metric": True}})
    impact = hook.find_impacted(tables=["public.orders"])
    assert "Marketing performance" in titles(impact)
    (why,) = [r["why"] for r in impact["reports"] if r["id"] == 22]
    assert why.endswith("(its field(s) revenue_per_signup name no model, so may read the changed one: taken as "
                        "impacted)")
    with analytics_emulator.world.lock:  # an ad-hoc field naming orders by name instead
        fields.pop()
        analytics_emulator.world.state.query_reports[22]["viz_setting"]["adhoc_fields"] = [
            {"name": "rev", "sql": "sum({{ #orders.revenue }})", "type": "number"}]
    adhoc = hook.find_impacted(tables=["public.orders"])
    assert next(r["why"] for r in adhoc["reports"] if r["id"] == 22).startswith("table public.orders -> model orders")


def test_a_real_duckdb_build_refreshes_no_postgresql_dashboard(hook: AnalyticsHook, analytics_emulator,
                                                               tmp_path) -> None:
    import gzip
    import json
    from pathlib import Path

    from analytics_provider.impact.dbt import built_relations

    built = Path(__file__).resolve().parent.parent / "dbt_artifacts" / "duckdb-build"
    run = built_relations(json.loads((built / "run_results.json").read_text()),
                          json.loads(gzip.decompress((built / "manifest.json.gz").read_bytes())))
    assert run.adapter == "duckdb"
    warehouses = dict.fromkeys(run.relations, run.adapter)
    impact = hook.find_impacted(tables=run.relations, warehouses=warehouses)
    assert (titles(impact), impact["data_models"]) == ([], [])  # the seed's tables are PostgreSQL's
    with analytics_emulator.world.lock:
        analytics_emulator.world.state.data_sources[1]["dbtype"] = "duckdb"
    assert titles(hook.find_impacted(tables=run.relations, warehouses=warehouses)) == [
        "Sales overview", "Marketing performance", "Executive summary", "Regional sales", "Campaign ROI"]


@pytest.mark.parametrize("bad", [["snowflake"], {"a.b": 3}, "snowflake"])
def test_bad_warehouses_are_refused_before_any_request(hook: AnalyticsHook, analytics_emulator, bad: object) -> None:
    analytics_emulator.clear_requests()
    with pytest.raises(AnalyticsParameterError, match="find_impacted: warehouses must map a table to its warehouse"):
        hook.find_impacted(tables=["a.b"], warehouses=bad)  # type: ignore[arg-type]
    assert api_operations(analytics_emulator) == []


# -- models no AML project reaches (found by a second attack on #43) --

def move_campaigns_to_data_source_2(emulator) -> None:
    """The legacy model campaigns and its data set marketing on data source 2, which no AML model uses."""
    with emulator.world.lock:
        emulator.world.state.data_models[3]["data_source_id"] = 2
        emulator.world.state.data_sets[2]["data_source_id"] = 2
        for report in emulator.world.state.query_reports.values():
            if report["data_set_id"] == 2:
                report["data_source_id"] = 2


def test_a_legacy_model_on_a_data_source_no_aml_model_uses_is_matched(hook: AnalyticsHook, analytics_emulator) -> None:
    move_campaigns_to_data_source_2(analytics_emulator)
    impact = hook.find_impacted(tables=["marketing.campaigns"])  # the list names data set 2 in a filter's mapping
    assert titles(impact) == ["Marketing performance", "Campaign ROI"]  # the data source the dashboards read
    assert [s["id"] for s in impact["data_sources"]] == [2, 1]
    with analytics_emulator.world.lock:  # no filter: the widgets' reports say it
        analytics_emulator.world.state.dashboards[2]["dynamic_filters"] = []
    analytics_emulator.set_answer_shapes(widget_reports=True)
    assert titles(hook.find_impacted(tables=["marketing.campaigns"])) == ["Marketing performance", "Campaign ROI"]


def test_widgets_whose_data_sources_are_not_known_are_noted(hook: AnalyticsHook, analytics_emulator) -> None:
    move_campaigns_to_data_source_2(analytics_emulator)
    with analytics_emulator.world.lock:  # nothing in the list says Marketing performance reads data source 2
        analytics_emulator.world.state.dashboards[2]["dynamic_filters"] = []
    impact = hook.find_impacted(tables=["marketing.campaigns"])
    assert titles(impact) == ["Campaign ROI"]
    assert ("the data sources of 1 widget(s) of dashboard(s) 'Marketing performance' (2) are not known (the "
            "dashboards' list does not carry their reports): searched the models of data source(s) 1, 3, 4 only; a "
            "model on another data source is matched when data_sources names it") in impact["notes"]
    assert titles(hook.find_impacted(tables=["marketing.campaigns"], data_sources=source_scope([1, 2], "t"))) == [
        "Marketing performance", "Campaign ROI"]  # a data source named is searched


@pytest.mark.parametrize(("source", "dbtype", "model", "table_name", "sql", "given"), [
    (3, "snowflake", 7, "SESSIONS", None, "ANALYTICS.WEB.SESSIONS"),
    (3, "databricks", 7, "sessions", None, "main.web.sessions"),
    (1, "postgresql", 6, None, "select channel, spend from campaigns", "marketing.campaigns"),
    (1, "redshift", 6, None, "select channel, spend from campaigns", "analytics.marketing.campaigns"),
], ids=["snowflake-table", "databricks-table", "postgres-sql", "redshift-sql"])
def test_a_model_naming_its_table_without_a_schema_is_matched_on_the_table_with_a_note(
        hook: AnalyticsHook, analytics_emulator, source, dbtype, model, table_name, sql, given) -> None:
    with analytics_emulator.world.lock:  # the connection's schema, which the API does not give
        analytics_emulator.world.state.data_sources[source]["dbtype"] = dbtype
        analytics_emulator.world.state.data_models[model].update(table_name=table_name, **({"sql": sql} if sql else {}))
    impact = hook.find_impacted(tables=[given])
    assert model in [m["id"] for m in impact["data_models"]]
    (note,) = [n for n in impact["notes"] if "without a schema" in n]
    assert note.startswith(f"data source {source}: ") and given in note
    assert "the API does not say its default schema: matched on the table name" in note
