"""Table names compared by the rules of the data source's warehouse (its ``dbtype``): quoting, case
folding, default schema; ``fold`` and ``default_schema`` overriding them."""

from __future__ import annotations

import pytest

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.impact.graph import match_tables
from analytics_provider.impact.tables import dialect_of, parse_table


def same(a: str, b: str, dbtype: str | None, **overrides: str) -> bool:
    return parse_table(a, dbtype=dbtype, **overrides).matches(parse_table(b, dbtype=dbtype, **overrides))


@pytest.mark.parametrize(("dbtype", "given", "model_table"), [
    ("bigquery", "`my-project`.`sales`.`orders`", "sales.orders"),
    ("bigquery", "`my-project.sales.orders`", "`sales`.orders"),  # one pair of backticks around the path
    ("bigquery", "my-project.sales.orders", "My-Project.sales.orders"),  # project ids ignore case
    ("snowflake", "orders", '"PUBLIC"."ORDERS"'),  # folded up, in PUBLIC: no fold= needed
    ("snowflake", "ANALYTICS.public.orders", "Public.Orders"),
    ("postgresql", '"analytics"."public"."orders"', "orders"),
    ("redshift", '"Public"."Orders"', "public.orders"),  # quoted names ignore case too (its default)
    ("sqlserver", "[Sales].[Orders]", "sales.orders"),
    ("sqlserver", "[analytics].[dbo].[orders]", "orders"),  # dbo is the default schema
    ("synapse", "[dbo].[Orders]", "ORDERS"),
    ("databricks", "`main`.`Sales`.`Orders`", "sales.orders"),
    ("databricks", "orders", "default.orders"),
    ("motherduck", '"Sales"."Orders"', "main.sales.orders"),
    ("mysql", "`shop`.`orders`", "shop.orders"),
    ("clickhouse", "orders", "default.orders"),
    ("something-new", "Sales.Orders", '"sales"."orders"'),  # a dbtype not known: PostgreSQL's rules
    (None, "[sales].[orders]", '"sales"."orders"'),
])
def test_names_that_match(dbtype: str | None, given: str, model_table: str) -> None:
    assert same(given, model_table, dbtype)


@pytest.mark.parametrize(("dbtype", "given", "model_table"), [
    ("bigquery", "`my-project`.`Sales`.`orders`", "sales.orders"),  # datasets keep their case
    ("bigquery", "sales.Orders", "sales.orders"),  # and so do tables
    ("bigquery", "`other-project.sales.orders`", "my-project.sales.orders"),
    ("snowflake", '"public"."orders"', "public.orders"),  # quoted lower case is another name
    ("postgresql", '"Orders"', "orders"),
    ("clickhouse", "Orders", "orders"),
    ("sqlserver", "orders", "sales.orders"),  # dbo, not sales
    ("databricks", "`hive_metastore`.`sales`.`orders`", "main.sales.orders"),
])
def test_names_that_differ(dbtype: str, given: str, model_table: str) -> None:
    assert not same(given, model_table, dbtype)


def test_fold_and_default_schema_override_the_warehouses() -> None:
    assert not same("orders", '"PUBLIC"."ORDERS"', "snowflake", fold="lower")
    assert same("orders", "analytics.orders", "snowflake", default_schema="analytics")
    assert same("orders", "staging.orders", "bigquery", default_schema="staging")
    assert not same("orders", "public.orders", "postgresql", default_schema="staging")
    with pytest.raises(AnalyticsParameterError, match="fold must be one of lower, upper; got 'up'"):
        parse_table("orders", fold="up")


@pytest.mark.parametrize("bad", ["[a.b", "a`b`.c", "``.c", "`a..b`.c", "[a]x.b", "a.]b"])
def test_bad_quoting_is_refused(bad: str) -> None:
    with pytest.raises(AnalyticsParameterError, match=r"schema\.table"):
        parse_table(bad, dbtype="bigquery")


def test_dbtypes_are_read_as_the_service_may_write_them() -> None:
    assert [dialect_of(t) for t in ("PostgreSQL", "big-query", "bigquery", "MSSQL", "Spark", "athena", None)] == [
        "postgresql", "bigquery", "bigquery", "sqlserver", "databricks", "trino", "postgresql"]


def test_each_model_is_compared_by_its_own_data_sources_rules() -> None:
    models = [{"id": 1, "table_name": "PUBLIC.ORDERS", "data_source_id": 1},  # Snowflake
              {"id": 2, "table_name": "proj.Sales.Orders", "data_source_id": 2},  # BigQuery: dataset Sales
              {"id": 3, "table_name": '"public"."orders"', "data_source_id": 3}]  # PostgreSQL
    dbtypes = {"1": "snowflake", "2": "bigquery", "3": "postgresql"}
    found = match_tables(["public.orders", "`proj`.`Sales`.`Orders`", "`proj`.`sales`.`orders`"], models,
                         dbtypes=dbtypes)
    assert {t: [m["id"] for m in ms] for t, ms in found.items()} == {
        "public.orders": [1, 3], "`proj`.`Sales`.`Orders`": [2], "`proj`.`sales`.`orders`": []}
