"""How tables are matched to models where an attack on #43 found holes: CTEs named like tables,
BigQuery's wildcard tables, SQL that cannot be parsed, databases given on one side only, a dbt
run's warehouse, and reports whose fields name no model."""

from __future__ import annotations

import pytest

from analytics_provider.impact.dbt import built_relations
from analytics_provider.impact.graph import ImpactWalk, TableMatcher, match_sql_models
from analytics_provider.impact.sql import names_in_text, tables_read
from analytics_provider.impact.tables import parse_table


@pytest.mark.parametrize(("sql", "read"), [
    ("with orders as (select * from public.orders) select * from orders", ["public.orders"]),
    ("with orders as (select * from orders where status = 'x') select * from orders", ["orders"]),
    ("with x as (select * from campaigns), campaigns as (select 1) select * from x", ["campaigns"]),
    ("with a as (select * from public.orders), orders as (select * from a) select * from orders", ["public.orders"]),
    ("with recursive t as (select 1 n union all select n + 1 from t) select * from t", []),
    ("select * from (with c as (select 1) select * from c) s join c on true", ["c"]),  # c out of its scope
    ("select c.channel from {{ #campaigns AS c }}", []),  # an AML model, with AS
])
def test_a_cte_hides_a_table_only_in_its_scope(sql: str, read: list[str]) -> None:
    assert tables_read(sql, "postgresql") == read


def test_bigquery_wildcard_tables_match_the_tables_they_stand_for() -> None:
    (read,) = tables_read("select * from `acme-prod.web_events.events_*` where _TABLE_SUFFIX > '2024'", "bigquery")
    wildcard = parse_table(read, dbtype="bigquery")
    assert wildcard.matches(parse_table("`acme-prod`.`web_events`.`events_20240101`", dbtype="bigquery"))
    assert wildcard.matches(parse_table("web_events.events_", dbtype="bigquery"))
    assert not wildcard.matches(parse_table("web_events.sessions_20240101", dbtype="bigquery"))
    assert not wildcard.matches(parse_table("other.events_20240101", dbtype="bigquery"))
    assert str(wildcard) == "acme-prod.web_events.events_*"
    assert not parse_table('"events_*"', dbtype="postgresql").prefix  # a * is a character elsewhere


def test_a_query_model_on_a_wildcard_table_is_impacted_by_a_table_it_stands_for() -> None:
    model = {"id": 9, "name": "events", "data_source_id": 4, "table_name": None,
             "sql": "select count(*) from `acme-prod.web_events.events_*`"}
    matcher = TableMatcher(["`acme-prod`.`web_events`.`events_20240101`"], dbtypes={"4": "bigquery"})
    found = match_sql_models(matcher, [model], lambda _: "bigquery")
    assert found == {"`acme-prod`.`web_events`.`events_20240101`": [
        (model, 'its SQL reads "acme-prod"."web_events"."events_*"')]}


def test_text_of_unparsable_sql_gives_each_dotted_name_outside_comments_and_templates() -> None:
    sql = ("select r.region, {{ #targets.amount }} from finance.revenue_targets r -- staging.old\n"
           "{% if prod %} join \"Sales\" . \"Or\"\"ders\" o {% endif %} /* x.y */ join acme-prod.d.t")
    assert names_in_text(sql) == ["select", "r", "r.region", "NULL", "from", "finance", "finance.revenue_targets",
                                  "join", '"Sales"', '"Sales"."Or""ders"', "o", "acme", "prod", "prod.d",
                                  "prod.d.t"]
    assert "acme-prod.d.t" in names_in_text(sql, hyphens=True)


@pytest.mark.parametrize(("table", "matched"), [
    ("finance.revenue_targets", True),
    ("FINANCE.Revenue_Targets", True),  # PostgreSQL folds bare names
    ("fnance.revenue_targets", False),  # the schema given is not the one written
    ("staging.revenue_targets", False),
    ("revenue_targets", False),  # public.revenue_targets
    ('"Finance".revenue_targets', False),
])
def test_unparsable_sql_names_a_table_only_with_every_part_given(table: str, matched: bool) -> None:
    model = {"id": 6, "name": "targets", "data_source_id": 1, "table_name": None,
             "sql": "select region from finance.revenue_targets {% if is_prod %} where x {% endif %}"}
    matcher = TableMatcher([table], dbtypes={"1": "postgresql"})
    found = match_sql_models(matcher, [model], lambda _: "postgresql")
    assert bool(found[table]) is matched
    (note,) = matcher.notes
    assert note.startswith("query model targets (6): its SQL could not be parsed (")
    assert note.endswith(f"it names {table}: taken as impacted" if matched else "it names none of the tables given "
                         "(every part of each, by its data source's rules)")


MODELS = [{"id": 1, "table_name": "public.orders", "data_source_id": 1},
          {"id": 7, "table_name": "ANALYTICS.WEB.SESSIONS", "data_source_id": 3},
          {"id": 9, "table_name": "WEB.ORDERS", "data_source_id": 3}]
DBTYPES = {"1": "postgresql", "3": "snowflake"}


def matched(tables: list[str], warehouses: dict | None = None) -> dict[str, list]:
    found = TableMatcher(tables, dbtypes=DBTYPES, warehouses=warehouses or {}).match(MODELS)
    return {t: [m["id"] for m in ms] for t, ms in found.items()}


def test_a_database_given_on_one_side_must_be_one_the_data_source_names() -> None:
    assert matched(["analytics.web.orders", "analytcs.web.orders", "raw.web.orders"]) == {
        "analytics.web.orders": [9], "analytcs.web.orders": [], "raw.web.orders": []}
    assert matched(["web.orders", "public.orders"]) == {"web.orders": [9], "public.orders": [1]}


def test_a_database_that_cannot_be_checked_matches_on_schema_and_table_and_says_so() -> None:
    matcher = TableMatcher(['"analytics"."public"."orders"', "analytcs.public.orders"], dbtypes=DBTYPES)
    found = matcher.match(MODELS)
    assert {t: [m["id"] for m in ms] for t, ms in found.items()} == {
        '"analytics"."public"."orders"': [1], "analytcs.public.orders": [1]}
    assert matcher.finish() == ['data source 1: none of its models names a database, so the database of '
                                '"analytics"."public"."orders", analytcs.public.orders could not be checked: '
                                "matched on schema and table"]


def test_a_relation_of_a_known_warehouse_matches_only_models_of_that_warehouse() -> None:
    relations = {"ANALYTICS.PUBLIC.ORDERS": "snowflake", "ANALYTICS.WEB.ORDERS": "snowflake",
                 '"analytics"."web"."orders"': "postgres"}
    assert matched(list(relations), relations) == {
        "ANALYTICS.PUBLIC.ORDERS": [], "ANALYTICS.WEB.ORDERS": [9], '"analytics"."web"."orders"': []}
    assert matched(["web.orders"], {"web.orders": "bigquery"}) == {"web.orders": []}
    assert matched(["web.orders"], {"web.orders": "spark-ish"}) == {"web.orders": [9]}  # not known: by name


def test_a_dbt_runs_adapter_is_read_from_its_manifest() -> None:
    results = {"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/run-results/v6.json"},
               "args": {"which": "build"},
               "results": [{"unique_id": "model.p.orders", "status": "success", "relation_name": "A.B.ORDERS"}]}
    manifest = {"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json",
                             "adapter_type": "Snowflake"}, "nodes": {}}
    assert built_relations(results, manifest).adapter == "snowflake"
    assert built_relations(results).adapter is None


def walk_report(fields: list, adhoc: list | None = None) -> dict:
    walk = ImpactWalk()
    walk.add_model({"id": 1, "name": "orders", "data_source_id": 1, "table_name": "public.orders"}, "table t")
    walk.uses(1, [2])
    walk.read_data_set({"id": 2, "name": "sales", "data_source_id": 1, "reports": [
        {"id": 22, "title": "Signups",
         "viz_setting": {"fields": {"table_fields": fields}, "adhoc_fields": adhoc or []}}]})
    return {k: n.why for k, n in walk.impact.reports.items()}


def test_a_report_is_impacted_when_any_of_what_it_reads_is() -> None:
    customers = {"path_hash": {"field_name": "country", "model_id": 2}}
    assert walk_report([customers]) == {}
    metric = {"path_hash": {"field_name": "revenue_per_signup", "model_id": None, "is_metric": True}}
    assert walk_report([customers, metric]) == {"22": (
        "table t -> model orders (1) -> data set sales (2) -> report 'Signups' (22) (its field(s) revenue_per_signup "
        "name no model, so may read the changed one: taken as impacted)")}
    assert walk_report([customers], [{"name": "rev", "sql": "sum({{ #orders.revenue }})"}]) == {"22": (
        "table t -> model orders (1) -> data set sales (2) -> report 'Signups' (22)")}
    assert walk_report([customers], [{"name": "n", "sql": "count({{ #customers.id }})"}]) == {}



@pytest.mark.parametrize(("dbtype", "sql", "table", "how"), [
    # Snowflake names a table by a text
    ("snowflake", "select * from identifier('ANALYTICS.WEB.SESSIONS')", "analytics.web.sessions",
     "its SQL reads ANALYTICS.WEB.SESSIONS"),
    ("snowflake", "select * from table('ANALYTICS.WEB.SESSIONS')", "ANALYTICS.WEB.SESSIONS",
     "its SQL reads ANALYTICS.WEB.SESSIONS"),
    # a quoted CTE name does not hide the table an unquoted name folds to (PostgreSQL)
    ("postgresql", 'with "Orders" as (select 1 as x) select * from orders, "Orders"', "public.orders",
     "its SQL reads orders"),
    # a BigQuery partition decorator names its table
    ("bigquery", "select * from `acme-prod.web_events.page_views$20240101`", "acme-prod.web_events.page_views",
     'its SQL reads "acme-prod"."web_events"."page_views"'),
    # db..table: the default schema (SQL Server's dbo)
    ("sqlserver", "select * from analytics..orders", "analytics.dbo.orders", "its SQL reads analytics.dbo.orders"),
    # a name a template completes: taken as impacted where a completion could name the table
    ("postgresql", "select * from {{ schema }}.orders", "public.orders",
     "its SQL names {{ schema }}.orders, which only the run completes: taken as impacted"),
    ("snowflake", "select * from identifier($sessions)", "ANALYTICS.WEB.SESSIONS",
     "its SQL names identifier($sessions), which only the run completes: taken as impacted"),
])
def test_query_model_sql_that_names_its_tables_unusually_is_read_right(dbtype, sql, table, how) -> None:
    model = {"id": 9, "name": "q", "data_source_id": 1, "table_name": None, "sql": sql}
    matcher = TableMatcher([table], dbtypes={"1": dbtype}, databases={})
    found = match_sql_models(matcher, [model], lambda _: dbtype)
    assert [h for _, h in found[table]] == [how]


@pytest.mark.parametrize(("dbtype", "sql", "table", "note"), [
    ("postgresql", "select * from marketing.campaigns_{{ suffix }}", "marketing.campaigns",
     "query model q (9): its SQL names marketing.campaigns_{{ suffix }}, which only the run completes (a template "
     "or a variable): unresolved; it cannot name any of the tables given"),
    ("postgresql", "select * from {{ schema }}.orders", "public.customers",
     "query model q (9): its SQL names {{ schema }}.orders, which only the run completes (a template or a "
     "variable): unresolved; it cannot name any of the tables given"),
    ("mysql", "select * from shop..orders", "shop.orders",
     "query model q (9): its SQL names shop..orders, which only the run completes (a template or a variable): "
     "unresolved; it could name shop.orders: taken as impacted"),
])
def test_a_name_only_the_run_completes_is_unresolved_and_said_never_a_null_table(dbtype, sql, table, note) -> None:
    model = {"id": 9, "name": "q", "data_source_id": 1, "table_name": None, "sql": sql}
    matcher = TableMatcher([table], dbtypes={"1": dbtype}, databases={})
    match_sql_models(matcher, [model], lambda _: dbtype)
    assert matcher.notes == [note]
    assert "NULL" not in " ".join(tables_read(sql, dbtype))


def test_the_closest_model_tables_are_found_on_the_table_part_first() -> None:
    from analytics_provider.impact.graph import closest_tables

    names = ["main.customers", "main.orders", "main.payments", "staging.orders_v2"]
    assert closest_tables('"wh"."main"."orders_v"', names)[:2] == ["staging.orders_v2", "main.orders"]
    assert closest_tables("main.custmers", names)[0] == "main.customers"
    assert closest_tables("ordrs", names)[0] == "main.orders"  # a name without its schema
    assert closest_tables("marketing.campaigns", names) == []
    # the table in another schema, not another table of the same schema
    assert closest_tables('"wh"."main"."orders_v"', ["main.customers", "public.orders", "main.payments"]) == [
        "public.orders"]
