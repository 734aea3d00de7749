"""dbt runs read from artifacts made by real dbt (``scripts/dbt_artifacts.py``: dbt-core with dbt-duckdb
building ``tests/dbt_project``, and the relation names dbt-bigquery, dbt-snowflake and dbt-databricks
render), then matched to data models named as each warehouse writes them; and the files refused."""

from __future__ import annotations

import copy
import gzip
import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.impact.dbt import built_relations, slim_manifest_object
from analytics_provider.impact.graph import match_tables

TESTS = Path(__file__).resolve().parent.parent
PROJECT = TESTS / "dbt_project"
ARTIFACTS = TESTS / "dbt_artifacts"
ADAPTERS = {"duckdb-build": "duckdb", "duckdb-compile": "duckdb", "bigquery-parse": "bigquery",
            "snowflake-parse": "snowflake", "databricks-parse": "databricks"}


def script() -> Any:
    spec = importlib.util.spec_from_file_location("dbt_artifacts", TESTS.parent / "scripts" / "dbt_artifacts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def manifest(run: str) -> dict[str, Any]:
    with gzip.open(ARTIFACTS / run / "manifest.json.gz") as packed:
        return json.load(packed)


def run_results(run: str) -> dict[str, Any]:
    return json.loads((ARTIFACTS / run / "run_results.json").read_text())


def test_the_artifacts_are_dbts_output_for_the_project_as_it_is() -> None:
    """Made by the pinned dbt from these very files (dbt's checksum is the sha256 of a file's
    stripped text), each run's two files of one invocation; remake them with make dbt-artifacts."""
    from dbt_artifacts_parser.parser import parse_manifest, parse_run_results

    made = script()
    assert set(made.RUNS) == set(ADAPTERS) == {p.name for p in ARTIFACTS.iterdir() if p.is_dir()}
    files = {str(p.relative_to(PROJECT)): hashlib.sha256(p.read_text(encoding="utf-8").strip().encode()).hexdigest()
             for folder in ("models", "seeds") for p in sorted((PROJECT / folder).iterdir())}
    for run, adapter in ADAPTERS.items():
        found = manifest(run)
        assert type(parse_manifest(copy.deepcopy(found))).__name__ == "ManifestV12"
        assert found["metadata"]["dbt_version"] == made.DBT_PINS["dbt-core"]
        assert found["metadata"]["adapter_type"] == adapter
        checksums = {n["original_file_path"]: n["checksum"]["checksum"] for n in found["nodes"].values()
                     if n["resource_type"] in ("model", "seed")}
        assert checksums == files, f"{run}: the project changed since its artifacts were made: make dbt-artifacts"
        if (ARTIFACTS / run / "run_results.json").is_file():
            results = run_results(run)
            assert type(parse_run_results(copy.deepcopy(results))).__name__ == "RunResultsV6"
            assert results["metadata"]["invocation_id"] == found["metadata"]["invocation_id"]
            assert results["args"]["which"] == made.RUNS[run][1][0]


BUILT = ['"analytics"."public"."raw_orders"', '"analytics"."finance"."revenue_targets"',
         '"analytics"."public"."orders_by_batch"', '"analytics"."marketing"."campaigns"',
         '"analytics"."public"."customers"', '"analytics"."public"."orders"']


def test_a_real_build_names_what_it_built_and_what_it_did_not() -> None:
    run = built_relations(run_results("duckdb-build"), manifest("duckdb-build"))
    assert run.relations == BUILT  # seeds from the manifest; "partial success" counted; the ephemeral left out
    assert run.not_built == ["model.analytics_fixture.broken", "model.analytics_fixture.after_broken"]
    assert (run.unresolved, run.command, run.dbt_version) == ([], "build", script().DBT_PINS["dbt-core"])


def test_without_the_manifest_the_models_are_resolved_and_the_seeds_named() -> None:
    run = built_relations(run_results("duckdb-build"), None)
    assert run.relations == [r for r in BUILT if "raw_orders" not in r and "revenue_targets" not in r]
    assert run.unresolved == ["seed.analytics_fixture.raw_orders", "seed.analytics_fixture.revenue_targets"]


def test_a_manifest_parsed_slim_keeps_what_the_relations_need_and_drops_code_and_columns() -> None:
    """A large manifest is parsed without its code, columns and docs (its memory: docs/refreshing.rst)."""
    with gzip.open(ARTIFACTS / "duckdb-build" / "manifest.json.gz") as packed:
        slim = json.load(packed, object_pairs_hook=slim_manifest_object)
    text = json.dumps(slim)
    assert '"raw_code"' not in text and '"columns"' not in text and '"compiled_code"' not in text
    assert len(text) < len(json.dumps(manifest("duckdb-build"))) / 3
    assert built_relations(run_results("duckdb-build"), slim) == built_relations(run_results("duckdb-build"),
                                                                                  manifest("duckdb-build"))


def test_files_of_two_invocations_refresh_what_resolves_and_name_the_rest() -> None:
    older = manifest("duckdb-build")
    del older["nodes"]["seed.analytics_fixture.revenue_targets"]  # a seed added after this manifest
    run = built_relations(run_results("duckdb-build"), older)
    assert run.relations == [r for r in BUILT if "revenue_targets" not in r]
    assert run.unresolved == ["seed.analytics_fixture.revenue_targets"]


def test_a_run_that_builds_nothing_is_refused() -> None:
    with pytest.raises(AnalyticsParameterError, match=r"refresh: dbt_run_results is of 'dbt compile', which "
                                                      r"builds nothing; give the run_results\.json of dbt build"):
        built_relations(run_results("duckdb-compile"), manifest("duckdb-compile"), "refresh")


def test_args_which_is_read_without_case() -> None:
    results = run_results("duckdb-build")
    results["args"]["which"] = "BUILD"
    assert built_relations(results, manifest("duckdb-build")).command == "build"


def test_a_run_that_built_no_relation_is_refused_with_why() -> None:
    """A run whose models all failed, or that ran only tests, would go green having refreshed nothing."""
    failed = run_results("duckdb-build")
    for result in failed["results"]:
        if result["status"] in ("success", "partial success"):
            result["status"] = "error"
    with pytest.raises(AnalyticsParameterError, match=r"^t: rr: the dbt run \(build\) built nothing to refresh: "
                                                      r"none of its \d+ model\(s\), seed\(s\) and snapshot\(s\) "
                                                      r"succeeded: seed\.analytics_fixture\.raw_orders \(error\)"):
        built_relations(failed, manifest("duckdb-build"), "t", run_results_name="rr")
    tests_only = run_results("duckdb-build")
    tests_only["results"] = [{**tests_only["results"][0], "unique_id": f"test.analytics_fixture.{name}",
                              "status": "pass", "relation_name": None} for name in ("unique_id", "not_null_id")]
    with pytest.raises(AnalyticsParameterError, match=r"built nothing to refresh: its \d+ result\(s\) are of test "
                                                      r"nodes, no model, seed or snapshot"):
        built_relations(tests_only, manifest("duckdb-build"), "t", run_results_name="rr")


@pytest.mark.parametrize("args", [{}, {"which": None}, {"which": ["build"]}, "build", None])
def test_a_file_without_args_which_is_refused(args: Any) -> None:
    """Every dbt since 0.19 (and dbt Fusion) writes ``args.which``: without it a compile could pass for a build."""
    results = run_results("duckdb-build")
    results["args"] = args
    with pytest.raises(AnalyticsParameterError, match=r"^t: rr does not say which dbt command wrote it \(no "
                                                      r"args\.which"):
        built_relations(results, manifest("duckdb-build"), "t", run_results_name="rr")


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r["results"].__setitem__(0, "model.analytics_fixture.orders"), r"results\[0\] is a str, not an object"),
    (lambda r: r["results"][1].pop("unique_id"), r"results\[1\] has no unique_id"),
    (lambda r: r.__setitem__("results", {}), r"is not a dbt run_results\.json \(no 'results' list\)"),
    (lambda r: r["results"][0].__setitem__("relation_name", 12345),
     r"results\[0\] \(seed\.analytics_fixture\.raw_orders\): relation_name is 12345, not a relation's name"),
    (lambda r: r["args"].__setitem__("empty", True), r"is of 'dbt build --empty', which writes no rows"),
    (lambda r: r["metadata"].__setitem__("dbt_schema_version", "https://schemas.getdbt.com/dbt/manifest/v12.json"),
     r"is a dbt manifest file \(schema v12\), not a run_results\.json"),
])
def test_wrong_shapes_are_refused_naming_the_file(change: Any, message: str) -> None:
    results = run_results("duckdb-build")
    change(results)
    with pytest.raises(AnalyticsParameterError, match=r"^t: dbt_run_results \(rr\.json\)(: | )" + message):
        built_relations(results, manifest("duckdb-build"), "t", run_results_name="dbt_run_results (rr.json)")


def test_a_manifest_node_of_the_wrong_shape_is_refused() -> None:
    found = manifest("duckdb-build")
    found["nodes"]["model.analytics_fixture.orders"] = ["not", "a", "node"]
    with pytest.raises(AnalyticsParameterError, match=r"dbt_manifest: nodes\['model\.analytics_fixture\.orders'\] "
                                                      r"is a list"):
        built_relations(run_results("duckdb-build"), found)


def test_a_manifest_nodes_config_or_name_part_of_another_shape_leaves_it_unresolved() -> None:
    """A ``config`` that is a string ended in AttributeError; a ``schema`` that is a list named the
    relation without its schema (found by an attack on #43)."""
    found, results = manifest("duckdb-build"), run_results("duckdb-build")
    found["nodes"]["model.analytics_fixture.orders"]["config"] = "table"
    node = found["nodes"]["model.analytics_fixture.customers"]
    node["schema"], node["relation_name"] = ["analytics"], None
    for result in results["results"]:
        if result["unique_id"] == "model.analytics_fixture.customers":
            result.pop("relation_name", None)
    run = built_relations(results, found)
    assert "model.analytics_fixture.customers" in run.unresolved
    assert not [r for r in run.relations if "customers" in r]
    assert [r for r in run.relations if r.endswith('"orders"')]  # the other node's relation as before


# Each relation-writing model and seed of the project, as a data source of each warehouse would name its
# table in a data model: the names that must match, and those that name another table there.
SPELLINGS: dict[str, tuple[str, list[str], list[str]]] = {
    # {t} alone: in the connection's schema, which the API does not give: matched on the table, noted
    "duckdb-build": ("motherduck", ["{s}.{t}", "{S}.{T}", '"analytics"."{s}"."{t}"', 'ANALYTICS."{S}".{t}', "{t}"],
                     ["other.{s}.{t}"]),
    "bigquery-parse": ("bigquery", ["{s}.{t}", "`{s}`.`{t}`", "`my-project-123.{s}.{t}`", "MY-PROJECT-123.{s}.{t}"],
                       ["{S}.{t}", "{s}.{T}", "other-project.{s}.{t}"]),
    "snowflake-parse": ("snowflake", ["{S}.{T}", "{s}.{t}", '"ANALYTICS"."{S}"."{T}"', "analytics.{s}.{t}"],
                        ['"{s}"."{t}"', "OTHER.{S}.{T}"]),
    "databricks-parse": ("databricks", ["{s}.{t}", "{S}.{T}", "`main`.`{s}`.`{t}`", "MAIN.{s}.{t}"],
                         ["hive_metastore.{s}.{t}"]),
}


@pytest.mark.parametrize("run", list(SPELLINGS))
def test_each_adapters_relation_names_match_the_model_its_data_source_names(run: str) -> None:
    """No fold or default_schema given: the data source's dbtype decides (Snowflake folds up, BigQuery's
    datasets and tables keep their case, Databricks ignores it)."""
    dbtype, same, other = SPELLINGS[run]
    nodes = {uid: n for uid, n in manifest(run)["nodes"].items() if n.get("relation_name")}
    assert len(nodes) == 8  # 6 models (the ephemeral one writes nothing) and 2 seeds
    models, wrong = [], []
    for index, (uid, node) in enumerate(sorted(nodes.items())):
        parts = {"s": node["schema"], "S": node["schema"].swapcase(), "t": node["alias"], "T": node["alias"].upper()}
        models += [{"id": f"{index}.{n}", "name": uid, "table_name": s.format(**parts), "data_source_id": 9}
                   for n, s in enumerate(same)]
        wrong += [{"id": f"{index}.x{n}", "name": uid, "table_name": s.format(**parts), "data_source_id": 9}
                  for n, s in enumerate(other)]
    relations = [n["relation_name"] for n in nodes.values()]
    found = match_tables(relations, models + wrong, dbtypes={"9": dbtype})
    for uid, relation in zip(nodes, relations, strict=True):
        assert sorted(m["table_name"] for m in found[relation]) == sorted(
            m["table_name"] for m in models if m["name"] == uid), (relation, dbtype)
    assert found[nodes["model.analytics_fixture.orders"]["relation_name"]]  # and something matched at all


def test_files_of_two_targets_are_refused_naming_both_adapters() -> None:
    """Attack on #43: a Snowflake run's results read with a PostgreSQL manifest took the manifest's adapter for
    the run's relations, and refreshed the PostgreSQL warehouse's dashboards, green."""
    results = run_results("duckdb-build")
    results["metadata"]["adapter_type"] = "duckdb"  # (dbt writes it in run results from 1.8 on, when it does)
    with pytest.raises(AnalyticsParameterError, match=r"refresh: dbt_run_results was written by dbt-duckdb and "
                                                      r"dbt_manifest by dbt-snowflake: files of two projects"):
        built_relations(results, manifest("snowflake-parse"), "refresh")
    assert built_relations(results, manifest("duckdb-build")).adapter == "duckdb"  # one target: read
