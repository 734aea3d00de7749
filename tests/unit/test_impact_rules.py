"""Refresh by impact without I/O: table names as the warehouse compares them, the walk from inputs
to dashboards (narrow where reports name their models, wide where the API cannot tell), dbt runs."""

from __future__ import annotations

import pytest

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.impact.dbt import built_relations
from analytics_provider.impact.graph import ImpactWalk, field_models, match_tables
from analytics_provider.impact.tables import parse_table


@pytest.mark.parametrize(("given", "model_table"), [
    ("marketing.campaigns", "marketing.campaigns"),
    ("Marketing.Campaigns", "marketing.campaigns"),  # bare names fold
    ('"marketing"."campaigns"', "marketing.campaigns"),  # quoted lower case is the folded name
    ("orders", "public.orders"),  # no schema: the default one
    ("public.orders", "orders"),
    ("analytics.public.orders", "public.orders"),  # a database on one side only
    ("analytics.public.orders", '"analytics"."public"."orders"'),  # dbt's relation_name
    ('"we""ird".t', '"we""ird".t'),
])
def test_names_that_match(given: str, model_table: str) -> None:
    assert parse_table(given).matches(parse_table(model_table))


@pytest.mark.parametrize(("given", "model_table"), [
    ('"Marketing".campaigns', "marketing.campaigns"),  # a quoted capital is another schema
    ("other.public.orders", "analytics.public.orders"),  # two databases that differ
    ("finance.orders", "public.orders"),
    ("orders", "sales.orders"),
])
def test_names_that_differ(given: str, model_table: str) -> None:
    assert not parse_table(given).matches(parse_table(model_table))


def test_upper_folding_and_default_schema() -> None:
    snowflake = {"fold": "upper", "default_schema": "PUBLIC"}
    assert parse_table("orders", **snowflake).matches(parse_table('"PUBLIC"."ORDERS"', **snowflake))
    assert not parse_table("orders", **snowflake).matches(parse_table('"public"."orders"', **snowflake))
    assert parse_table("orders", default_schema="analytics").matches(parse_table("analytics.orders"))


@pytest.mark.parametrize("bad", ["", "a..b", 'a."b', "a.b.c.d", '"open', None, 3])
def test_bad_names_are_refused(bad: object) -> None:
    with pytest.raises(AnalyticsParameterError, match=r"schema\.table"):
        parse_table(bad)


def test_match_tables_reports_tables_nothing_reads() -> None:
    models = [{"id": 1, "table_name": "public.orders"}, {"id": 2, "table_name": None, "sql": "select 1"},
              {"id": 3, "table_name": "PUBLIC.ORDERS"}]
    found = match_tables(["orders", "finance.revenue"], models)
    assert [m["id"] for m in found["orders"]] == [1, 3]
    assert found["finance.revenue"] == []


def report(report_id: int, data_set_id: int, *model_ids: object, title: str = "") -> dict:
    fields = [{"path_hash": {"field_name": "x", "model_id": m}} for m in model_ids]
    return {"id": report_id, "title": title or f"r{report_id}", "data_set_id": data_set_id,
            "viz_setting": {"fields": {"table_fields": fields}}}


def widget(widget_id: str, report_id: object, source_type: str = "QueryReport") -> dict:
    return {"id": widget_id, "source_id": str(report_id), "source_type": source_type, "source_title": f"w{widget_id}"}


SALES = {"id": 1, "uname": "sales", "data_source_id": 7,
         "reports": [report(11, 1, 1), report(31, 1, 4, title="Revenue vs target"), report(40, 1)]}
BOARDS = [
    {"id": 1, "title": "Sales overview", "widgets": [widget("101", 11)]},
    {"id": 3, "title": "Executive summary", "widgets": [widget("301", 31), widget("302", 0, "Text")]},
    {"id": 4, "title": "Unnamed fields", "widgets": [widget("401", 40)]},
]


def walk_from_model(model_id: int, data_sets=(SALES,), boards=BOARDS) -> dict:
    walk = ImpactWalk()
    walk.add_model({"id": model_id, "name": f"m{model_id}", "data_source_id": 7, "table_name": "t"}, "table t")
    walk.uses(model_id, [d["id"] for d in data_sets])
    for data_set in data_sets:
        walk.read_data_set(data_set)
    walk.read_dashboards(boards)
    return walk.impact.as_dict()


def test_a_report_whose_fields_name_other_models_is_not_impacted() -> None:
    impact = walk_from_model(4)
    titles = [d["title"] for d in impact["dashboards"]]
    assert "Sales overview" not in titles  # its report names model 1 only
    assert "Executive summary" in titles
    assert [s["id"] for s in impact["data_sources"]] == [7]
    executive = next(d for d in impact["dashboards"] if d["title"] == "Executive summary")
    assert executive["why"].startswith("table t -> model m4 (4) -> data set sales (1) -> report 'Revenue vs target'")
    assert "302" not in [w["id"] for w in impact["widgets"]]  # text


def test_a_report_whose_fields_name_no_model_is_taken_as_impacted_and_says_so() -> None:
    impact = walk_from_model(4)
    unnamed = next(d for d in impact["dashboards"] if d["title"] == "Unnamed fields")
    assert "do not name their models" in unnamed["why"]


def test_model_ids_as_text_match_model_ids_as_numbers() -> None:
    assert field_models({"fields": {"a": [{"path_hash": {"model_id": "4"}}]}, "filters": [
        {"field_path": {"model_id": 9}}]}) == {"4", "9"}
    assert "Executive summary" in [d["title"] for d in walk_from_model(4, boards=[
        {"id": 3, "title": "Executive summary", "widgets": [widget("301", "31")]}])["dashboards"]]


def test_a_dashboard_filter_on_a_changed_model_impacts_its_widget() -> None:
    board = {"id": 9, "title": "Filtered", "widgets": [widget("901", 11)], "dynamic_filters": [
        {"id": 1, "definition": {"label": "Quarter"}, "mappings": [
            {"viz_conditionable_id": 901, "field_path": {"model_id": 4, "field_name": "quarter"}}]}]}
    impact = walk_from_model(4, boards=[board])
    assert [d["title"] for d in impact["dashboards"]] == ["Filtered"]
    assert "filter 'Quarter'" in impact["dashboards"][0]["why"]


def test_undescribed_widgets_are_impacted_when_anything_is_and_noted() -> None:
    board = {"id": 5, "title": "Canvas", "widgets": [widget("501", "vb", "VizBlock")]}
    impact = walk_from_model(4, boards=[board])
    assert [d["title"] for d in impact["dashboards"]] == ["Canvas"]
    assert any("VizBlock" in n for n in impact["notes"])
    described = {**widget("502", "vb", "VizBlock"), "viz_block_definition": {
        "viz": {"dataset_id": 1, "viz_setting": {"fields": {"x": [{"path_hash": {"model_id": 1}}]}}}}}
    assert walk_from_model(4, boards=[{"id": 6, "title": "Canvas 2", "widgets": [described]}])["dashboards"] == []


def test_a_changed_data_set_impacts_every_report() -> None:
    walk = ImpactWalk()
    walk.add_data_set(SALES, "")
    walk.read_data_set(SALES)
    walk.read_dashboards(BOARDS)
    assert [d["title"] for d in walk.impact.as_dict()["dashboards"]] == [
        "Sales overview", "Executive summary", "Unnamed fields"]


def test_data_sets_without_reports_ask_for_the_widgets_reports() -> None:
    walk = ImpactWalk()
    walk.add_model({"id": 4, "name": "m4"}, "")
    walk.uses(4, [1])
    assert walk.read_data_set({"id": 1, "uname": "sales"}) is False
    assert walk.unknown_reports(BOARDS) == ["11", "31", "40"]
    walk.read_report(report(31, 1, 4))
    walk.read_dashboards(BOARDS)
    assert [d["title"] for d in walk.impact.as_dict()["dashboards"]] == ["Executive summary"]


def test_dbt_run_relations() -> None:
    manifest = {"nodes": {
        "model.p.orders": {"relation_name": '"analytics"."public"."orders"', "config": {"materialized": "table"}},
        "model.p.failed": {"relation_name": '"analytics"."public"."failed"', "config": {}},
        "model.p.eph": {"relation_name": None, "config": {"materialized": "ephemeral"}},
        "seed.p.targets": {"database": "analytics", "schema": "finance", "alias": "revenue_targets", "config": {}},
        "test.p.not_null": {"config": {}},
    }}
    results = {"args": {"which": "build"}, "results": [
        {"unique_id": "model.p.orders", "status": "success"}, {"unique_id": "model.p.failed", "status": "error"},
        {"unique_id": "model.p.eph", "status": "success"}, {"unique_id": "seed.p.targets", "status": "success"},
        {"unique_id": "test.p.not_null", "status": "pass"}, {"unique_id": "model.p.orders", "status": "success"},
    ]}
    run = built_relations(results, manifest)
    assert run.relations == ['"analytics"."public"."orders"', '"analytics"."finance"."revenue_targets"']
    assert run.not_built == ["model.p.failed"]
    gone = built_relations({"args": {"which": "run"}, "results": [{"unique_id": "model.p.gone", "status": "success"}]},
                           manifest)
    assert (gone.relations, gone.unresolved) == ([], ["model.p.gone"])  # named, not refused (test_dbt_artifacts)
    with pytest.raises(AnalyticsParameterError, match=r"run_results\.json"):
        built_relations({"nodes": {}}, manifest)


def test_jobs_are_handed_out_busts_first_within_the_fan_out_and_never_twice() -> None:
    from analytics_provider.impact.refresh import next_actions, plan_actions

    actions = plan_actions([{"id": 1}, {"id": 2}], [{"id": d} for d in range(10, 16)], bust_cache=True, preload=True)
    assert [a["kind"] for a in actions] == ["bust", "bust"] + ["preload"] * 6
    book: dict = {}
    assert next_actions(actions, book, 5) == actions[:2]  # no preload while a bust may still run
    book.update({"bust:1": {"job_id": 1, "status": "running"}, "bust:2": {"job_id": 2, "status": "success"}})
    assert next_actions(actions, book, 5) == []
    book["bust:1"]["status"] = "success"
    assert next_actions(actions, book, 3) == actions[2:5]
    book.update({f"preload:{d}": {"job_id": d, "status": "queued"} for d in (10, 11, 12)})
    assert next_actions(actions, book, 3) == []  # three pending: the fan-out is full
    book["preload:10"]["status"] = "success"
    assert next_actions(actions, book, 3) == [actions[5]]


def test_a_preload_waits_for_its_own_data_sources_bust_and_a_failed_bust_holds_it_back() -> None:
    from analytics_provider.impact.refresh import blocked, next_actions, plan_actions

    boards = [{"id": 10, "data_source_ids": ["1"]}, {"id": 11, "data_source_ids": ["2"]},
              {"id": 12, "data_source_ids": None}]  # 12: what it reads is not known, so it waits for every bust
    actions = plan_actions([{"id": 1}, {"id": 2}], boards, bust_cache=True, preload=True)
    assert [a.get("after") for a in actions[2:]] == [[1], [2], [1, 2]]
    book = {"bust:1": {"job_id": 1, "status": "failure"}, "bust:2": {"job_id": 2, "status": "success"}}
    assert next_actions(actions, book, 5) == [actions[3]]  # only the dashboard on the good bust's data source
    assert blocked(actions, book) == {"preload:10": ["bust:1"], "preload:12": ["bust:1"]}
    assert next_actions(plan_actions([{"id": 1}], boards, bust_cache=False, preload=True), {}, 5) == [
        {"kind": "preload", "id": d, "after": [], "bust_cache": True} for d in (10, 11, 12)]  # no bust asked:
    # nothing to wait for, and each preload ignores its widgets' cache (attack on #43: else it refreshed nothing)


def test_a_retry_keeps_every_job_but_the_failed_ones() -> None:
    from analytics_provider.impact.refresh import resumable

    book = {"bust:1": {"job_id": 1, "status": "success"}, "preload:2": {"job_id": 2, "status": "failure"},
            "preload:3": {"job_id": 3, "status": "running"}, "preload:4": {"job_id": 4, "status": "cancelled"}}
    assert sorted(resumable(book)) == ["bust:1", "preload:3"]


@pytest.mark.parametrize(("rules", "kept"), [
    ({}, ["Sales overview", "Old sales", "Marketing"]),
    ({"exclude_titles": ["old *"]}, ["Sales overview", "Marketing"]),
    ({"include_tags": ["Certified"]}, ["Sales overview"]),
    ({"include_titles": ["*sales*"], "exclude_tags": ["deprecated"]}, ["Sales overview"]),
])
def test_dashboards_filter(rules: dict, kept: list) -> None:
    from analytics_provider.impact.refresh import check_dashboards_filter, keeps

    boards = [{"title": "Sales overview", "tags": ["certified"]}, {"title": "Old sales", "tags": ["deprecated"]},
              {"title": "Marketing", "tags": []}]
    assert [b["title"] for b in boards if keeps(b, check_dashboards_filter(rules))] == kept


@pytest.mark.parametrize("bad", [{"titles": ["x"]}, {"include_tags": "certified"}, {"exclude_titles": [""]}, ["x"]])
def test_a_bad_dashboards_filter_is_refused(bad: object) -> None:
    from analytics_provider.impact.refresh import check_dashboards_filter

    with pytest.raises(AnalyticsParameterError, match="dashboards_filter"):
        check_dashboards_filter(bad)


def test_a_dashboards_asset_names_the_service_and_the_dashboard() -> None:
    from analytics_provider.assets import dashboard_asset_uri

    assert dashboard_asset_uri("eu", 2) == "analytics://eu.holistics.io/dashboards/2"
    assert dashboard_asset_uri("us.holistics.io", "7") == "analytics://us.holistics.io/dashboards/7"
    assert dashboard_asset_uri("http://127.0.0.1:8123/api/v2", 2) == "analytics://127.0.0.1:8123/dashboards/2"
    with pytest.raises(ValueError, match="dashboard id"):
        dashboard_asset_uri("eu", "Sales overview")
