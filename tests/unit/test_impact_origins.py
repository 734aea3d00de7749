"""Where a table was written, where a second attack on #43 found holes: two warehouses' assets of the
same name, another server's asset, a database the data source does not read, the data sources a task
may match (``data_sources``), and the case of a PostgreSQL asset's names."""

from __future__ import annotations

import pytest

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.impact.asset_tables import table_of, tables_of
from analytics_provider.impact.graph import SourceLocation, SourceScope, TableMatcher, TableOrigin
from analytics_provider.impact.scope import source_scope

MODELS = [{"id": 1, "table_name": "public.orders", "data_source_id": 1},  # PostgreSQL
          {"id": 2, "table_name": "public.orders", "data_source_id": 2},  # Redshift
          {"id": 3, "table_name": "PUBLIC.ORDERS", "data_source_id": 3},  # Snowflake
          {"id": 4, "table_name": 'public."Orders"', "data_source_id": 1}]
DBTYPES = {"1": "postgresql", "2": "redshift", "3": "snowflake"}


def matched(tables: list[str], warehouses: dict | None = None, scope: SourceScope | None = None) -> dict[str, list]:
    matcher = TableMatcher(tables, dbtypes=DBTYPES, databases={}, warehouses=warehouses or {},
                           scope=scope or SourceScope())
    return {t: [m["id"] for m in ms] for t, ms in matcher.match(MODELS).items()}


def test_the_same_name_in_two_warehouses_assets_is_two_tables_each_matched_in_its_warehouse() -> None:
    found, _ = tables_of(["postgres://pg:5432/analytics/public/orders",
                          "redshift://cluster.eu-west-1:5439/analytics.public.orders"])
    assert [(t.table, t.warehouse) for t in found] == [("analytics.public.orders", "postgres"),
                                                       ("analytics.public.orders", "redshift")]
    origins = [TableOrigin(t.warehouse, t.server) for t in found]
    assert matched(["analytics.public.orders"], {"analytics.public.orders": origins}) == {
        "analytics.public.orders": [1, 2]}  # not the PostgreSQL one alone, nor the Snowflake one


def test_an_asset_of_another_server_matches_no_data_source_known_to_read_another() -> None:
    origin = {"analytics.public.orders": [TableOrigin("postgres", "staging-db.internal:5432")]}
    here = SourceScope(locations={"1": SourceLocation("warehouse:5432", "analytics")})
    assert matched(["analytics.public.orders"], origin, here) == {"analytics.public.orders": []}
    there = SourceScope(locations={"1": SourceLocation("Staging-DB.internal", "analytics")})  # no port: any
    assert matched(["analytics.public.orders"], origin, there) == {"analytics.public.orders": [1]}


def test_a_match_whose_server_or_database_cannot_be_checked_is_made_and_listed() -> None:
    matcher = TableMatcher(["analytics.public.orders"], dbtypes=DBTYPES, databases={},
                           warehouses={"analytics.public.orders": [TableOrigin("postgres", "staging:5432")]})
    assert [m["id"] for m in matcher.match(MODELS)["analytics.public.orders"]] == [1]
    assert matcher.unchecked == {("analytics.public.orders", "1"): {"server", "database"}}
    notes = matcher.finish()
    assert any("the server of analytics.public.orders (an asset's host) could not be checked" in n for n in notes)


def test_a_location_s_database_rules_out_a_dbt_dev_target() -> None:
    scope = SourceScope(locations={"1": SourceLocation(None, "analytics")})
    assert matched(['"analytics_dev"."public"."orders"', '"analytics"."public"."orders"'],
                   {'"analytics_dev"."public"."orders"': "postgres", '"analytics"."public"."orders"': "postgres"},
                   scope) == {'"analytics_dev"."public"."orders"': [], '"analytics"."public"."orders"': [1]}


def test_data_sources_limit_the_data_sources_a_name_alone_matches() -> None:
    assert matched(["public.orders"]) == {"public.orders": [1, 2, 3]}
    assert matched(["public.orders"], scope=source_scope([2, "snowflake"], "t")) == {"public.orders": [2, 3]}
    assert matched(["public.orders"], scope=source_scope({"1": None}, "t")) == {"public.orders": [1]}


@pytest.mark.parametrize(("value", "said"), [
    ([], "got []"),
    ("postgresql", "got 'postgresql'"),
    (["postgres", "materialize"], "got 'materialize', neither a data source id nor a warehouse type"),
    ([0], "got 0, neither"),
    ([True], "got True, neither"),
    ({}, "no data source would be matched"),
    ({"x": None}, "got the key 'x', not a data source id"),
    ({1: "s3://bucket/x"}, "the scheme is one of"),
    ({1: "postgres://u:secret@warehouse:5432/analytics"}, "a location names no user or password"),
    ({1: "postgres://warehouse:5432/analytics/public"}, "a location is postgres://host:port or"),
    ({4: "bigquery://acme-prod/web_events"}, "a BigQuery location is bigquery://project"),
    ({1: "postgres://warehouse:port/analytics"}, "the port is not a number"),
    ({1: "postgres://warehouse:99999/analytics"}, "the port is not a number"),
    ({1: "postgres://warehouse:5432/analytics?sslmode=require"}, "a location has no query string"),
    ({1: None, "1": "postgres://warehouse:5432/analytics"}, "data source 1 is given twice"),
    ([1, "1"], "data source 1 is given twice"),
])
def test_bad_data_sources_are_refused_naming_the_allowed_values(value, said) -> None:
    with pytest.raises(AnalyticsParameterError, match=r"^refresh: data_sources must be a list of data source ids "
                                                      r"and warehouse types \(bigquery, clickhouse, ") as raised:
        source_scope(value, "refresh")
    assert said in str(raised.value)


def test_a_postgres_asset_keeps_the_case_of_its_names() -> None:
    # a URI names a table as the warehouse stores it: a capital letter there only a quoted name holds
    assert table_of("postgres://w:5432/analytics/public/Orders").table == 'analytics.public."Orders"'
    assert table_of("postgres://w:5432/analytics/public/orders").table == "analytics.public.orders"
    assert table_of("postgres://w:5432/analytics/%22Sales%22/orders").table == 'analytics."Sales".orders'
    assert matched(['analytics.public."Orders"'], {'analytics.public."Orders"': "postgres"}) == {
        'analytics.public."Orders"': [4]}  # not public.orders
    # OpenLineage's dotted names: quoted parts are read as quoted, not with their quotes in the name
    assert table_of('snowflake://acme/ANALYTICS.WEB."Sessions"').table == 'ANALYTICS.WEB."Sessions"'
    assert table_of("databricks://h/`main`.`web`.`sessions`").table == '"main"."web"."sessions"'


def test_a_dbt_run_that_does_not_say_its_adapter_is_ruled_out_of_postgresql_by_its_backticks() -> None:
    """Backticks are BigQuery's, Databricks', Spark's: never a PostgreSQL data source's table."""
    dbtypes = {**DBTYPES, "4": "databricks"}
    models = [*MODELS, {"id": 5, "table_name": "public.orders", "data_source_id": 4}]
    ticked, quoted = "`hive_metastore`.`public`.`orders`", '"analytics"."public"."orders"'
    matcher = TableMatcher([ticked, quoted], dbtypes=dbtypes, databases={}, warehouses={ticked: None, quoted: None})
    found = {t: [m["id"] for m in ms] for t, ms in matcher.match(models).items()}
    assert found == {ticked: [5], quoted: [1, 2, 5]}  # double quotes: any of them, as before (noted)
    assert any("quoted with backticks are matched only in data sources of bigquery, clickhouse, databricks, mysql"
               in n for n in matcher.notes)
