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

from .conftest import AIRFLOW_VERSION

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


API_CALL = """
import json, sys
from fastapi.testclient import TestClient
from airflow.api_fastapi.app import create_app
client = TestClient(create_app())
token = client.get("/auth/token")  # all-admins mode hands out a token (needed from 3.1 on)
headers = {"Authorization": f"Bearer {token.json()['access_token']}"} if token.status_code in (200, 201) else {}
answer = client.post("/api/v2/connections/test", json=json.loads(sys.argv[1]), headers=headers)
print(json.dumps({"status_code": answer.status_code, "body": answer.json()}))
"""

# Airflow 2.11: the same request to /api/v1 of its Flask webserver (API authentication off).
API_CALL_V1 = """
import json, sys
from airflow.www.app import create_app
client = create_app(testing=True).test_client()
answer = client.post("/api/v1/connections/test", json=json.loads(sys.argv[1]))
print(json.dumps({"status_code": answer.status_code, "body": answer.get_json()}))
"""


@pytest.fixture
def api_client(airflow_db, tmp_path) -> Any:
    """POST /api/v2/connections/test to Airflow's API app (/api/v1 on Airflow 2.11), in a fresh
    process as an api-server is."""
    env = {**os.environ, **ENABLED, "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True"}
    code = API_CALL if AIRFLOW_VERSION >= (3, 0) else API_CALL_V1
    if AIRFLOW_VERSION < (3, 0):  # no API authentication, and the anonymous user an admin
        env["AIRFLOW__API__AUTH_BACKENDS"] = env["AIRFLOW__FAB__AUTH_BACKENDS"] = "airflow.api.auth.backend.default"
        (tmp_path / "webserver_config.py").write_text('AUTH_ROLE_PUBLIC = "Admin"\n')
        env["AIRFLOW__WEBSERVER__CONFIG_FILE"] = str(tmp_path / "webserver_config.py")

    def post(body: dict[str, Any]) -> SimpleNamespace:
        result = subprocess.run(
            [sys.executable, "-c", code, json.dumps(body)], env=env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stderr[-3000:]
        answer = json.loads(result.stdout.strip().splitlines()[-1])
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
