"""After a deploy of the dbt project: dbt build, hand the manifest to the service, publish, refresh.

``dbt build`` writes ``target/manifest.json``; the upload sends it to the service for the
warehouse's data source and waits for the sync job (failing with the service's messages when a
manifest is malformed); then the AML project is published against the fresh models, the data
source's cache busted and the key dashboards preloaded.

Where dbt is not installed (as in this repository's tests), a stand-in task writes a manifest of
the same shape as ``dbt build`` does (schema v12, one source and one model), so the DAG runs anywhere.
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
    AnalyticsBustDataSourceCacheOperator,
    AnalyticsPreloadDashboardOperator,
    AnalyticsPublishAmlProjectOperator,
    AnalyticsUploadDbtManifestOperator,
)

DBT_PROJECT_DIR = str(Path(tempfile.gettempdir()) / "analytics-dbt-project")
AML_PROJECT_DIR = str(Path(__file__).parent / "aml_project")
KEY_DASHBOARDS = ["Sales overview", "Marketing performance"]  # by title
MANIFEST_SCHEMA = "https://schemas.getdbt.com/dbt/manifest/v12.json"

with DAG(
    dag_id="analytics_dbt_post_deploy",
    description="dbt build, upload the manifest, publish the AML project, bust the cache, preload",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["analytics", "example", "dbt"],
    params={
        "dbt_project_dir": Param(DBT_PROJECT_DIR, type="string", description="the dbt project (target/ is written)"),
        "data_source_name": Param("Production warehouse", type="string", description="the warehouse's data source"),
        "data_source_id": Param(1, type="integer", description="the same data source, for the cache bust"),
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
            print("dbt is not installed here: writing the manifest a dbt build of this project would write")
            write_manifest(target / "manifest.json", project_name="jaffle_shop")
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

    bust_cache = AnalyticsBustDataSourceCacheOperator(
        task_id="bust_data_source_cache",
        data_source_id="{{ params.data_source_id }}",
    )

    preload = AnalyticsPreloadDashboardOperator.partial(task_id="preload_key_dashboard", bust_cache=True).expand(
        dashboard=KEY_DASHBOARDS
    )

    upload >> publish >> bust_cache >> preload


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
