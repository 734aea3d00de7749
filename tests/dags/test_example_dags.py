"""Each example DAG runs green through Airflow against the emulator, deferrable and not."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import EXAMPLE_DAGS, set_deferrable

DIAGNOSTIC = {
    "category": "error",
    "code": 1001,
    "message": "Unexpected token '}'",
    "file_path": "models/orders.model.aml",
    "start": 0,
    "end": 1,
}


def run_dag(bag: Any, dag_id: str, deferrable: bool, conf: dict[str, Any]) -> Any:
    dag = bag.get_dag(dag_id)
    set_deferrable(dag, deferrable)
    return dag.test(run_conf=conf)


def assert_waits_ran_where_asked(output: str, deferrable: bool, expected_deferrals: int) -> None:
    deferrals = output.count("Pausing task as DEFERRED")
    assert deferrals == (expected_deferrals if deferrable else 0), deferrals


def task_states(dag_run: Any) -> dict[str, str]:
    return {
        ti.task_id + (f"[{ti.map_index}]" if ti.map_index >= 0 else ""): ti.state for ti in dag_run.get_task_instances()
    }


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_after_warehouse_load(example_dag_bag, analytics_emulator, analytics_connection, tmp_path, capfd, deferrable):
    dag_run = run_dag(example_dag_bag, "analytics_after_warehouse_load", deferrable, {"export_dir": str(tmp_path)})
    assert dag_run.state == "success", task_states(dag_run)
    (csv,) = tmp_path.rglob("*.csv")
    lines = csv.read_text().splitlines()
    assert len(lines) > 1 and "," in lines[0]
    kinds = [j.operation for j in analytics_emulator.jobs]
    assert kinds == ["bust_data_source_cache", "preload_dashboard", "submit_widget_export"]
    output = capfd.readouterr()
    assert_waits_ran_where_asked(output.out + output.err, deferrable, 3)
    assert analytics_emulator.api_key not in output.out + output.err


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_scheduled_exports(example_dag_bag, analytics_emulator, analytics_connection, tmp_path, capfd, deferrable):
    dag_run = run_dag(example_dag_bag, "analytics_scheduled_exports", deferrable, {"export_root": f"file://{tmp_path}"})
    assert dag_run.state == "success", task_states(dag_run)
    files = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert files == sorted(f"widget-{w}.{f}" for w in (101, 102, 201) for f in ("xlsx", "pdf"))
    assert all(p.read_bytes()[:4] in (b"PK\x03\x04", b"%PDF") for p in tmp_path.rglob("*.*"))
    output = capfd.readouterr()
    assert_waits_ran_where_asked(output.out + output.err, deferrable, 6)
    assert analytics_emulator.api_key not in output.out + output.err


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_post_deploy_publish(example_dag_bag, analytics_emulator, analytics_connection, capfd, deferrable):
    dag_run = run_dag(example_dag_bag, "analytics_post_deploy_publish", deferrable, {})
    assert dag_run.state == "success", task_states(dag_run)
    kinds = sorted(j.operation for j in analytics_emulator.jobs)
    assert kinds == ["execute_data_schedule", "preload_dashboard", "preload_dashboard", "publish_aml_project"]
    output = capfd.readouterr()
    assert_waits_ran_where_asked(output.out + output.err, deferrable, 4)
    assert analytics_emulator.api_key not in output.out + output.err


def test_failing_publish_fails_its_task_with_the_diagnostics_in_the_log(
    example_dag_bag, analytics_emulator, analytics_connection, tmp_path, capfd
):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "orders.model.aml").write_text("}\n")
    analytics_emulator.set_publish_diagnostics([DIAGNOSTIC])
    dag_run = run_dag(example_dag_bag, "analytics_post_deploy_publish", True, {"project_dir": str(tmp_path)})
    states = task_states(dag_run)
    assert dag_run.state == "failed"
    assert states["publish_aml_project"] == "failed"
    assert "success" not in {states[k] for k in states if k != "publish_aml_project"}
    log = capfd.readouterr()
    assert "models/orders.model.aml:1:1: error 1001: Unexpected token '}'" in log.out + log.err
    assert analytics_emulator.api_key not in log.out + log.err


def test_dag_files_parse_offline_without_heavy_imports() -> None:
    """Parsing makes no network call and loads neither the HTTP clients nor the emulator."""
    import subprocess
    import sys

    files = sorted(str(p) for p in EXAMPLE_DAGS.glob("*.py"))
    code = (
        "import runpy, socket, sys\n"
        "def no_network(*a, **k): raise RuntimeError('network call at parse time')\n"
        "socket.socket.connect = no_network\n"
        f"for f in {files!r}: runpy.run_path(f)\n"
        "heavy = ('aiohttp', 'analytics_provider.testing', 'analytics_provider.hooks.client', 'openpyxl')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]"
