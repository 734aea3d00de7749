"""Driving the emulator over HTTP (``/_emulator/``), from the command line, and its life cycle."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
import requests

from analytics_provider.testing.emulator.app import AnalyticsEmulator

from .conftest import Api


def control(emu: AnalyticsEmulator, method: str, name: str, body: dict[str, Any] | None = None) -> requests.Response:
    root = emu.base_url.removesuffix("/api/v2")
    return requests.request(method, f"{root}/_emulator/{name}", json=body, timeout=10)


def test_control_endpoints_need_no_key_and_are_not_recorded(emu, api: Api) -> None:
    info = control(emu, "GET", "info").json()["result"]
    assert info["base_url"] == emu.base_url and info["api_key"] == emu.api_key
    assert info["keys"]["analyst"] == emu.key_for("analyst") and json.loads(info["connection_json"])["password"]
    emu.set_rate_limit(quota=1)
    assert all(control(emu, "GET", "info").status_code == 200 for _ in range(5))  # not rate limited
    assert emu.requests == []


def test_inject_and_requests_log_over_http(emu, api: Api) -> None:
    body = {"operation": "get_dashboard", "status": 503, "retry_after": 1, "times": 2}
    assert control(emu, "POST", "inject", body).json() == {"ok": True, "result": None}
    assert len(control(emu, "GET", "faults").json()["result"]["get_dashboard"]) == 2
    assert [api.get("/dashboards/1").status_code for _ in range(3)] == [503, 503, 200]
    log = control(emu, "GET", "requests").json()["result"]
    assert [r["status"] for r in log] == [503, 503, 200] and {r["operation"] for r in log} == {"get_dashboard"}
    assert log[0]["headers"][emu.header_name] == "***" and log[0]["carried_key"] is True
    assert emu.api_key not in json.dumps(log)
    assert control(emu, "DELETE", "requests").status_code == 200 and emu.requests == []


def test_fail_next_job_rate_limit_and_diagnostics_over_http(emu, api: Api) -> None:
    control(emu, "POST", "fail_next_job", {"operation": "preload_dashboard", "last_error_log": "boom"})
    job_id = api.post("/dashboards/1/submit_preload", json={}).json()["job"]["id"]
    assert api.wait_job(job_id)["last_error_log"] == "boom"
    assert control(emu, "GET", "jobs").json()["result"][0]["status"] == "failure"
    control(emu, "POST", "set_rate_limit", {"quota": 1, "operation": "get_dashboard"})
    assert [api.get("/dashboards/1").status_code for _ in range(2)] == [200, 429]
    diagnostic = {"category": "error", "code": 7, "message": "m", "file_path": "a.aml", "start": 1, "end": 2}
    control(emu, "POST", "set_publish_diagnostics", {"diagnostics": [diagnostic]})
    assert emu.world.publish_diagnostics == [diagnostic]
    control(emu, "POST", "set_publish_diagnostics", {"diagnostics": None})
    assert emu.world.publish_diagnostics is None
    control(emu, "POST", "add_users", {"count": 3})
    assert api.get("/users").json()["counters"]["total"] == 12
    control(emu, "POST", "reset")
    assert api.get("/users").json()["counters"]["total"] == 9 and emu.jobs == []


def test_control_errors(emu) -> None:
    assert control(emu, "POST", "no_such_thing").status_code == 404
    assert control(emu, "POST", "inject", {"status": 500}).status_code == 400  # no operation
    assert control(emu, "POST", "inject", {"operation": "nope", "status": 500}).status_code == 400
    assert control(emu, "POST", "set_rate_limit", {"frame": -1}).status_code == 400


def test_requests_record_both_origins_with_the_key_masked(emu, api: Api) -> None:
    api.post("/groups", json={"group": {"name": "Audit"}}, params={"trace": "1"})
    record = emu.requests[0]
    assert (record.origin, record.method, record.path) == ("api", "POST", "/api/v2/groups")
    assert record.query == {"trace": ["1"]} and record.json == {"group": {"name": "Audit"}}
    assert record.operation == "create_group" and record.status == 201 and record.carried_key
    assert record.headers[emu.header_name] == "***" and record.time <= time.time()
    emu.clear_requests()
    assert emu.requests == []


def test_connection_json_and_a_custom_header() -> None:
    with AnalyticsEmulator(header_name="X-Holistics-Key", api_key="k-123") as emu:
        conn = json.loads(emu.connection_json())
        assert conn == {"conn_type": "analytics", "password": "k-123",
                        "extra": {"base_url": emu.base_url, "header_name": "X-Holistics-Key"}}
        assert json.loads(emu.connection_json(api_key="other"))["password"] == "other"
        assert requests.get(emu.base_url + "/users/me", headers={"X-Holistics-Key": "k-123"}, timeout=5).ok
        narrowed = requests.get(emu.base_url + "/users/me", headers={"X-Service-Key": "k-123"}, timeout=5)
        assert narrowed.status_code == 401 and "X-Holistics-Key header" in narrowed.text
    assert not emu.running


def _serving_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("analytics-emulator-")}


def test_stop_closes_kept_alive_connections_and_frees_the_ports() -> None:
    others = _serving_threads()
    emu = AnalyticsEmulator().start()
    serving = _serving_threads() - others
    session = requests.Session()
    assert session.get(emu.base_url + "/users/me", headers={"X-Service-Key": emu.api_key}, timeout=5).ok
    port = emu.port
    emu.stop()
    assert len(serving) == 2 and not any(t.is_alive() for t in serving)  # stopped, not left behind by a join's timeout
    with pytest.raises(requests.ConnectionError):
        session.get(emu.base_url + "/users/me", timeout=2)
    with AnalyticsEmulator(port=port) as again:  # the port can be bound again at once
        assert again.port == port
    session.close()


def test_cli_prints_the_address_and_stops_on_sigterm() -> None:
    command = [sys.executable, "-m", "analytics_provider.testing.emulator", "--port", "0", "--api-key", "cli-key",
               "--job-duration", "0.1", "--rate-limit-frame", "5"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        lines: dict[str, str] = {}
        deadline = time.monotonic() + 15
        while "AIRFLOW_CONN_ANALYTICS_DEFAULT" not in lines:
            assert time.monotonic() < deadline and process.poll() is None, "the emulator did not start"
            line = process.stdout.readline() if process.stdout else ""
            if ":" in line or "=" in line:
                name, _, value = line.partition("=" if line.startswith("AIRFLOW_CONN") else ":")
                lines[name.strip()] = value.strip()
        base_url = lines["base_url"]
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/api/v2")
        assert lines["api_key"] == "cli-key"
        assert json.loads(lines["AIRFLOW_CONN_ANALYTICS_DEFAULT"].strip("'"))["extra"]["base_url"] == base_url
        answer = requests.get(base_url + "/users/me", headers={"X-Service-Key": "cli-key"}, timeout=5)
        assert answer.status_code == 200 and 1 <= int(answer.headers["RateLimit-Reset"]) <= 5  # the 5 s frame
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


def test_plugin_and_package_import_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "import analytics_provider.testing, analytics_provider.testing.pytest_plugin\n"
        "heavy = ('airflow', 'requests', 'analytics_provider.testing.emulator', 'http.server')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_the_emulator_does_not_import_airflow() -> None:
    code = (
        "import sys\n"
        "from analytics_provider.testing import AnalyticsEmulator\n"
        "with AnalyticsEmulator() as emu: pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'airflow' or m.endswith('exceptions') "
        "and m.startswith('analytics_provider')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_the_fixtures(analytics_connection: str, analytics_emulator: AnalyticsEmulator) -> None:
    assert analytics_connection == "analytics_default"
    assert json.loads(os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"]) == json.loads(analytics_emulator.connection_json())
    assert analytics_emulator.running and analytics_emulator.requests == []


def test_job_done_answers_404_until_the_job_succeeded(emu, api: Api) -> None:
    emu.job_duration = 0.3
    job = api.post("/dashboard_widgets/101/submit_export", json={"output": "csv"}).json()["job"]
    assert control(emu, "GET", f"jobs/{job['id']}/done").status_code == 404
    deadline = time.monotonic() + 10
    while control(emu, "GET", f"jobs/{job['id']}/done").status_code != 200:
        assert time.monotonic() < deadline, "the job never succeeded"
        time.sleep(0.05)
    assert api.get(f"/jobs/{job['id']}").json()["job"]["status"] == "success"
    assert control(emu, "GET", "jobs/999999/done").status_code == 404


def test_a_client_that_went_away_is_not_reported_as_an_error(emu, capfd) -> None:
    server = emu._servers[0]
    for gone in (ConnectionResetError(104, "Connection reset by peer"), BrokenPipeError(32, "Broken pipe")):
        try:
            raise gone
        except OSError:
            server.handle_error(None, ("127.0.0.1", 50000))
    assert capfd.readouterr().err == ""
    try:
        raise ValueError("a fault of the emulator itself")
    except ValueError:
        server.handle_error(None, ("127.0.0.1", 50000))
    assert "a fault of the emulator itself" in capfd.readouterr().err
