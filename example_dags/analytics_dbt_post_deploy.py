"""After a deploy of the dbt project: dbt build, hand the manifest to the service, publish, refresh.

``dbt build`` writes ``target/manifest.json`` and ``target/run_results.json``; the upload sends
the manifest to the service for the warehouse's data source and waits for the sync job (failing
with the service's messages when a manifest is malformed); then the AML project is published
against the fresh models, and what the run built is refreshed: the relations of the models it
built successfully are matched to the service's data models, and the data sources and dashboards
that read them are busted and preloaded (no list of dashboards kept by hand).

Where dbt is not installed (as in this repository's tests), a stand-in task writes a manifest and
run results of the same shape as ``dbt build`` does (one source and one model, built), so the DAG
runs anywhere.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param, task

from analytics_provider.operators import (
    AnalyticsPublishAmlProjectOperator,
    AnalyticsRefreshImpactedOperator,
    AnalyticsUploadDbtManifestOperator,
)

DBT_PROJECT_DIR = str(Path(tempfile.gettempdir()) / "analytics-dbt-project")
AML_PROJECT_DIR = str(Path(__file__).parent / "aml_project")
MANIFEST_SCHEMA = "https://schemas.getdbt.com/dbt/manifest/v12.json"

with DAG(
    dag_id="analytics_dbt_post_deploy",
    description="dbt build, upload the manifest, publish the AML project, refresh what the run built",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example", "dbt"],
    params={
        "dbt_project_dir": Param(DBT_PROJECT_DIR, type="string", description="the dbt project (target/ is written)"),
        "data_source_name": Param("Production warehouse", type="string", description="the warehouse's data source"),
        "aml_project_dir": Param(AML_PROJECT_DIR, type="string", description="checkout of the AML project"),
    },
    default_args={"poll_interval": 1.0},
) as dag:

    @task
    def dbt_build(params: dict[str, Any]) -> str:
        """``dbt build``; returns where its manifest.json is."""
        project = Path(params["dbt_project_dir"])
        target = project / "target"
        if shutil.which("dbt") and (project / "dbt_project.yml").is_file():
            subprocess.run(["dbt", "build", "--project-dir", str(project), "--target-path", str(target)], check=True)
        else:
            print("dbt is not installed here: writing the manifest and run results a dbt build would write")
            write_manifest(target / "manifest.json", project_name="jaffle_shop")
            write_run_results(target / "run_results.json", ["model.jaffle_shop.orders"])
        return str(target / "manifest.json")

    upload = AnalyticsUploadDbtManifestOperator(
        task_id="upload_dbt_manifest",
        manifests=[dbt_build()],
        data_source_name="{{ params.data_source_name }}",
    )

    publish = AnalyticsPublishAmlProjectOperator(
        task_id="publish_aml_project",
        project_dir="{{ params.aml_project_dir }}",
        lint_custom_charts=True,
    )

    refresh = AnalyticsRefreshImpactedOperator(
        task_id="refresh_what_dbt_built",
        dbt_run_results="{{ params.dbt_project_dir }}/target/run_results.json",
        dbt_manifest="{{ params.dbt_project_dir }}/target/manifest.json",
    )

    upload >> publish >> refresh


def write_run_results(path: Path, built: list[str]) -> None:
    """A dbt run_results.json (schema v6) in which each of ``built`` (unique ids) succeeded."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    results = [
        {"status": "success", "timing": [{"name": "execute", "started_at": now, "completed_at": now}],
         "thread_id": "Thread-1", "execution_time": 0.5, "adapter_response": {"_message": "SELECT 1"},
         "message": "SELECT 1", "failures": None, "unique_id": unique_id, "compiled": True,
         "compiled_code": None, "relation_name": None}
        for unique_id in built
    ]
    run_results = {
        "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/run-results/v6.json",
                     "dbt_version": "1.9.0", "generated_at": now, "invocation_id": str(uuid.uuid4()), "env": {}},
        "results": results, "elapsed_time": 1.0, "args": {"which": "build"},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run_results, indent=2), encoding="utf-8")


def write_manifest(path: Path, *, project_name: str) -> None:
    """A dbt manifest (schema v12) for a project with one source table and one model built on it."""
    database, schema = "analytics", "public"
    source_id = f"source.{project_name}.shop.raw_orders"
    model_id = f"model.{project_name}.orders"
    sql = "select order_id, created_at, region, revenue from {{ source('shop', 'raw_orders') }}"
    columns = {
        name: {"name": name, "description": text, "meta": {}, "data_type": kind, "constraints": [], "quote": None,
               "config": {"meta": {}, "tags": []}, "tags": [], "granularity": None}
        for name, kind, text in (("order_id", "integer", "one row per order"), ("created_at", "date", ""),
                                 ("region", "text", ""), ("revenue", "numeric", "order value in EUR"))
    }
    model = {
        "database": database, "schema": schema, "name": "orders", "resource_type": "model",
        "package_name": project_name, "path": "orders.sql", "original_file_path": "models/orders.sql",
        "unique_id": model_id, "fqn": [project_name, "orders"], "alias": "orders",
        "checksum": {"name": "sha256", "checksum": hashlib.sha256(sql.encode()).hexdigest()},
        "config": {"enabled": True, "alias": None, "schema": None, "database": None, "tags": [], "meta": {},
                   "materialized": "table", "persist_docs": {}, "quoting": {}, "column_types": {},
                   "on_schema_change": "ignore", "grants": {}, "packages": [], "docs": {"show": True},
                   "contract": {"enforced": False, "alias_types": True}, "access": "protected"},
        "tags": [], "description": "Orders, one row each, with their revenue", "columns": columns, "meta": {},
        "group": None, "docs": {"show": True, "node_color": None}, "patch_path": None, "build_path": None,
        "unrendered_config": {"materialized": "table"}, "created_at": datetime.now(timezone.utc).timestamp(),
        "relation_name": f'"{database}"."{schema}"."orders"', "raw_code": sql, "language": "sql",
        "refs": [], "sources": [["shop", "raw_orders"]], "metrics": [],
        "depends_on": {"macros": [], "nodes": [source_id]}, "compiled_path": None,
        "contract": {"enforced": False, "alias_types": True, "checksum": None}, "access": "protected",
        "constraints": [], "version": None, "latest_version": None, "deprecation_date": None,
    }
    source = {
        "database": database, "schema": "shop", "name": "raw_orders", "resource_type": "source",
        "package_name": project_name, "path": "models/sources.yml", "original_file_path": "models/sources.yml",
        "unique_id": source_id, "fqn": [project_name, "shop", "raw_orders"], "source_name": "shop",
        "source_description": "", "loader": "", "identifier": "raw_orders", "quoting": {},
        "loaded_at_field": None, "freshness": None, "external": None, "description": "", "columns": {}, "meta": {},
        "source_meta": {}, "tags": [], "config": {"enabled": True}, "patch_path": None, "unrendered_config": {},
        "relation_name": f'"{database}"."shop"."raw_orders"', "created_at": datetime.now(timezone.utc).timestamp(),
    }
    manifest = {
        "metadata": {
            "dbt_schema_version": MANIFEST_SCHEMA, "dbt_version": "1.9.0",
            "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "invocation_id": str(uuid.uuid4()), "env": {},
            "project_name": project_name, "project_id": hashlib.md5(project_name.encode()).hexdigest(),
            "user_id": None, "send_anonymous_usage_stats": False, "adapter_type": "postgres",
        },
        "nodes": {model_id: model}, "sources": {source_id: source}, "macros": {}, "docs": {}, "exposures": {},
        "metrics": {}, "groups": {}, "selectors": {}, "disabled": {},
        "parent_map": {model_id: [source_id], source_id: []}, "child_map": {source_id: [model_id], model_id: []},
        "group_map": {}, "saved_queries": {}, "semantic_models": {}, "unit_tests": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
