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
from typing import Any

import pytest

ENABLED = {"AIRFLOW__CORE__TEST_CONNECTION": "Enabled"}


def test_cli_connections_test_reaches_the_service(airflow_db, analytics_emulator, analytics_connection) -> None:
    airflow = str(Path(sys.executable).parent / "airflow")
    result = subprocess.run(
        [airflow, "connections", "test", analytics_connection],
        env={**os.environ, **ENABLED}, capture_output=True, text=True, check=False, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Connection success!" in result.stdout
    assert [(r.method, r.path) for r in analytics_emulator.requests] == [("GET", "/api/v2/users/me")]
    assert analytics_emulator.api_key not in result.stdout + result.stderr


@pytest.fixture
def api_client(airflow_db, monkeypatch: pytest.MonkeyPatch) -> Any:
    from fastapi.testclient import TestClient

    for name, value in {**ENABLED, "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True"}.items():
        monkeypatch.setenv(name, value)
    from airflow.api_fastapi.app import create_app

    return TestClient(create_app())


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
