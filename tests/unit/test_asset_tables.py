"""Asset URIs to warehouse tables: what providers register and OpenLineage names, and what names no table."""

from __future__ import annotations

import pytest

from analytics_provider.impact.asset_tables import table_of, tables_of


@pytest.mark.parametrize(("uri", "table", "warehouse"), [
    ("postgres://warehouse:5432/analytics/public/orders", "analytics.public.orders", "postgres"),
    ("postgresql://warehouse:5432/analytics/public/orders", "analytics.public.orders", "postgres"),
    ("mysql://db:3306/shop/orders", "shop.orders", "mysql"),
    ("mariadb://db:3306/shop/orders", "shop.orders", "mysql"),
    ("trino://trino:8080/hive/sales/orders", "hive.sales.orders", "trino"),
    ("bigquery://my-project-42/jaffle_shop/stg_orders", "my-project-42.jaffle_shop.stg_orders", "bigquery"),
    ("snowflake://acme-xy12345/ANALYTICS.PUBLIC.ORDERS", "ANALYTICS.PUBLIC.ORDERS", "snowflake"),
    ("redshift://cluster.eu-west-1:5439/dev.public.orders", "dev.public.orders", "redshift"),
    ("databricks://adb-1.azuredatabricks.net/main.sales.orders", "main.sales.orders", "databricks"),
    # names that are not plain words are quoted as their warehouse quotes, so they split back the same
    ("postgres://w:5432/analytics/public/order%20lines", 'analytics.public."order lines"', "postgres"),
    ("postgres://w:5432/analytics/public/my-table", 'analytics.public."my-table"', "postgres"),
    ("bigquery://p/d/t%2Ex", "p.d.`t.x`", "bigquery"),
    ("bigquery://acme-prod/web_events/page_views$20240101", "acme-prod.web_events.page_views", "bigquery"),  # a day
    ("mysql://db:3306/shop/we%60ird", "shop.`we``ird`", "mysql"),
])
def test_a_table_asset_names_its_table_as_its_warehouse_writes_it(uri, table, warehouse) -> None:
    found = table_of(uri)
    assert (found.table, found.warehouse, found.why_not) == (table, warehouse, "")


@pytest.mark.parametrize(("uri", "why"), [
    ("s3://bucket/exports/orders.csv", "not a warehouse table (scheme 's3')"),
    ("file:///tmp/x.csv", "not a warehouse table (scheme 'file')"),
    ("analytics://eu.holistics.io/dashboards/1", "not a warehouse table (scheme 'analytics')"),
    ("orders", "not a warehouse table (scheme 'none')"),
    ("postgres://warehouse:5432/analytics/orders", "a postgres table's URI is postgres://host:port/db/schema/table"),
    ("postgres://warehouse:5432/analytics//orders", "a postgres table's URI is postgres://host:port/db/schema/table"),
    ("bigquery://project/dataset", "a bigquery table's URI is bigquery://project/dataset/table"),
    ("snowflake://acme/PUBLIC.ORDERS", "OpenLineage names a snowflake table snowflake://<namespace>/db.schema.table"),
])
def test_an_asset_that_names_no_table_says_why(uri, why) -> None:
    found = table_of(uri)
    assert (found.table, found.why_not) == (None, why)


def test_each_table_once_and_the_others_set_aside() -> None:
    tables, ignored = tables_of(["postgres://w:5432/a/public/orders", "s3://b/k", "postgresql://w:5432/a/public/orders",
                                 "mysql://m:3306/shop/orders"])
    assert [t.table for t in tables] == ["a.public.orders", "shop.orders"]
    assert [i.uri for i in ignored] == ["s3://b/k"]
