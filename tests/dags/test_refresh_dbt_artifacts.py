"""Refresh by impact from the files of a real dbt build (``tests/dbt_artifacts``, made by
``scripts/dbt_artifacts.py``), through Airflow against the emulator; and dbt files refused before
any request, naming the task, the parameter and the file."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from .conftest import dag_bag_of
from .test_example_dags import task_states
from .test_refresh_impacted import DAG_FILE, result_of, run

ARTIFACTS = Path(__file__).resolve().parent.parent / "dbt_artifacts"
BUILT_BY_NAME = ["public.orders", "public.customers", "marketing.campaigns", "finance.revenue_targets"]
"""The emulator's tables the build wrote (it also wrote raw_orders and orders_by_batch, which no model reads)."""


@pytest.fixture(scope="module")
def impact_bag(airflow_db: None) -> Any:
    return dag_bag_of(DAG_FILE)


def artifacts(folder: Path, run_name: str) -> tuple[str, str]:
    """The run's run_results.json and manifest.json as dbt wrote them (the manifest is kept gzipped)."""
    run_results = folder / "run_results.json"
    shutil.copyfile(ARTIFACTS / run_name / "run_results.json", run_results)
    with gzip.open(ARTIFACTS / run_name / "manifest.json.gz") as packed:
        (folder / "manifest.json").write_bytes(packed.read())
    return str(run_results), str(folder / "manifest.json")


def plan_of(result: dict) -> dict:
    return {kind: sorted(i["id"] for i in result[kind]) for kind in ("data_sources", "data_models", "data_sets",
                                                                "dashboards")}


def api_requests(emulator) -> list:
    return [r for r in emulator.requests if r.origin == "api"]


def test_a_real_dbt_build_refreshes_what_it_built(impact_bag, analytics_emulator, analytics_connection,
                                                  tmp_path, capfd) -> None:
    run_results, manifest = artifacts(tmp_path, "duckdb-build")
    with analytics_emulator.world.lock:  # the build's warehouse is DuckDB: so is the data source on it
        analytics_emulator.world.state.data_sources[1]["dbtype"] = "duckdb"
    by_dbt = run(impact_bag, False, {"run_results": run_results, "manifest": manifest})
    assert by_dbt.state == "success", task_states(by_dbt)
    dbt_result = result_of(by_dbt)
    log = capfd.readouterr().out
    assert ("The dbt run (build) built 6 relation(s); not built: model.analytics_fixture.broken, "
            "model.analytics_fixture.after_broken") in log
    analytics_emulator.reset()
    by_name = run(impact_bag, False, {"tables": BUILT_BY_NAME})  # (the reset's data source is PostgreSQL's)
    assert plan_of(dbt_result) == plan_of(result_of(by_name))
    assert plan_of(dbt_result)["data_models"] == [1, 2, 3, 4, 5, 6]  # every model the build's tables feed (5 and 6:
    # the query models built on orders and reading marketing.campaigns)
    assert "dbt_unresolved" not in dbt_result


def test_without_the_manifest_the_models_are_refreshed_and_the_seeds_named(impact_bag, analytics_emulator,
                                                                           analytics_connection, tmp_path,
                                                                           capfd) -> None:
    run_results, _ = artifacts(tmp_path, "duckdb-build")
    dag_run = run(impact_bag, False, {"run_results": run_results})
    assert dag_run.state == "success", task_states(dag_run)
    result = result_of(dag_run)
    seeds = ["seed.analytics_fixture.raw_orders", "seed.analytics_fixture.revenue_targets"]
    assert result["dbt_unresolved"] == seeds
    assert sorted(m["id"] for m in result["data_models"]) == [1, 2, 3, 5, 6]  # not 4: revenue_targets, a seed, named
    assert ("Not refreshed: 2 node(s) the dbt run built: seed.analytics_fixture.raw_orders, "
            "seed.analytics_fixture.revenue_targets; dbt_run_results names no relation for them and dbt_manifest "
            "was not given") in capfd.readouterr().out


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("make", "message"), [
    (lambda d: {"run_results": artifacts(d, "duckdb-compile")[0]},
     "refresh: dbt_run_results ({rr}) is of 'dbt compile', which builds nothing; give the run_results.json of "
     "dbt build, run, seed, snapshot, retry or clone"),
    (lambda d: {"run_results": write(d / "deep.json", "[" * 200_000 + "]" * 200_000)},
     "refresh: dbt_run_results ({rr}) is nested deeper than a dbt artifact is"),
    (lambda d: {"run_results": write(d / "strings.json", json.dumps({"args": {"which": "run"},
                                                                      "results": ["model.a.b"]}))},
     "refresh: dbt_run_results ({rr}): results[0] is a str, not an object"),
    (lambda d: {"run_results": artifacts(d, "duckdb-build")[0], "manifest": write(d / "m.json", '{"nodes": [')},
     "refresh: dbt_manifest could not be read as JSON from {mf}: JSONDecodeError"),
    (lambda d: {"manifest": artifacts(d, "duckdb-build")[1]},
     "refresh: dbt_run_results must be given with dbt_manifest (a manifest alone does not say what a run built)"),
    (lambda d: {"run_results": "/dev/zero"},  # was read whole, until memory ran out (an attack on #43)
     "refresh: dbt_run_results ({rr}) is not a regular file (a device or a pipe?): not read"),
], ids=["compile", "deep", "string-result", "bad-manifest", "manifest-alone", "device"])
def test_bad_dbt_files_fail_before_any_request_naming_the_file(impact_bag, analytics_emulator, analytics_connection,
                                                               tmp_path, capfd, make, message) -> None:
    conf = make(tmp_path)
    dag_run = run(impact_bag, False, conf)
    assert dag_run.state == "failed"
    assert api_requests(analytics_emulator) == []
    log = capfd.readouterr().out
    assert f"AnalyticsParameterError: {message.format(rr=conf.get('run_results'), mf=conf.get('manifest'))}" in log
    assert "RecursionError" not in log and "AttributeError" not in log
