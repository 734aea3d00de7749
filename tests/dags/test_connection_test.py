"""Testing an ``analytics`` connection through Airflow, as docs/connection.rst describes.

``airflow connections test`` and ``POST /api/v2/connections/test`` (with connection testing
enabled) call the hook's ``test_connection()``, which asks the emulator who the key belongs to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(360)  # the CLI's and the api-server's runs have 300 s

ENABLED = {"AIRFLOW__CORE__TEST_CONNECTION": "Enabled"}


def test_cli_connections_test_reaches_the_service(airflow_db, analytics_emulator, analytics_connection) -> None:
    airflow = str(Path(sys.executable).parent / "airflow")
    result = subprocess.run(
        [airflow, "connections", "test", analytics_connection],
        env={**os.environ, **ENABLED}, capture_output=True, text=True, check=False, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Connection success!" in result.stdout
    assert "Connected as" not in result.stdout  # Airflow's CLI drops the message; the quick start says so
    assert [(r.method, r.path) for r in analytics_emulator.requests] == [("GET", "/api/v2/users/me")]
    assert analytics_emulator.api_key not in result.stdout + result.stderr


@pytest.fixture
def api_client(airflow_api_app) -> Any:
    """POST /api/v2/connections/test (/api/v1 on Airflow 2.11) to Airflow's API app in a process of its own,
    as an api-server is: one process, started once, answers every test (tests/api_app.py)."""

    def post(body: dict[str, Any]) -> SimpleNamespace:
        answer = airflow_api_app.ask({"test": body})
        return SimpleNamespace(status_code=answer["status_code"], json=lambda: answer["body"], text=answer["body"])

    return SimpleNamespace(post=lambda _path, json: post(json))


def test_rest_api_connection_test_with_the_key_in_the_body(api_client, analytics_emulator) -> None:
    connection = json.loads(analytics_emulator.connection_json())
    body = {
        "connection_id": "analytics_default",
        "conn_type": "analytics",
        "password": connection["password"],
        "extra": json.dumps(connection["extra"]),
    }
    answer = api_client.post("/api/v2/connections/test", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"status": True, "message": "Connected as maya.chen@example.com (role admin)"}


def test_rest_api_connection_test_reports_a_wrong_key(api_client, analytics_emulator) -> None:
    connection = json.loads(analytics_emulator.connection_json())
    body = {
        "connection_id": "analytics_default",
        "conn_type": "analytics",
        "password": "not-the-key",
        "extra": json.dumps(connection["extra"]),
    }
    answer = api_client.post("/api/v2/connections/test", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] is False
    assert "401" in answer.json()["message"]
