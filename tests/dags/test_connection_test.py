"""Testing an ``analytics`` connection through Airflow, as docs/connection.rst describes.

``airflow connections test`` and ``POST /api/v2/connections/test`` (with connection testing
enabled) call the hook's ``test_connection()``, which asks the emulator who the key belongs to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from .conftest import AIRFLOW_VERSION

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


# One process, as an api-server is: its app made once, then each body read from stdin is posted to
# POST /api/v2/connections/test and the answer printed on a line of its own.
API_CALLS = """
import json, sys
from fastapi.testclient import TestClient
from airflow.api_fastapi.app import create_app
client = TestClient(create_app())
token = client.get("/auth/token")  # all-admins mode hands out a token (needed from 3.1 on)
headers = {"Authorization": f"Bearer {token.json()['access_token']}"} if token.status_code in (200, 201) else {}
for line in sys.stdin:
    answer = client.post("/api/v2/connections/test", json=json.loads(line), headers=headers)
    print("ANSWER " + json.dumps({"status_code": answer.status_code, "body": answer.json()}), flush=True)
"""

# Airflow 2.11: the same requests to /api/v1 of its Flask webserver (API authentication off).
API_CALLS_V1 = """
import json, sys
from airflow.www.app import create_app
client = create_app(testing=True).test_client()
for line in sys.stdin:
    answer = client.post("/api/v1/connections/test", json=json.loads(line))
    print("ANSWER " + json.dumps({"status_code": answer.status_code, "body": answer.get_json()}), flush=True)
"""


@pytest.fixture(scope="module")
def api_client(airflow_db, tmp_path_factory) -> Iterator[Any]:
    """POST /api/v2/connections/test to Airflow's API app (/api/v1 on Airflow 2.11) in a process of
    its own, as an api-server is: one process, started once, answers every test of this module."""
    env = {**os.environ, **ENABLED, "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True"}
    code = API_CALLS if AIRFLOW_VERSION >= (3, 0) else API_CALLS_V1
    folder = tmp_path_factory.mktemp("api-server")
    if AIRFLOW_VERSION < (3, 0):  # no API authentication, and the anonymous user an admin
        config = folder / "webserver_config.py"
        config.write_text('AUTH_ROLE_PUBLIC = "Admin"\n')
        env["AIRFLOW__API__AUTH_BACKENDS"] = env["AIRFLOW__FAB__AUTH_BACKENDS"] = "airflow.api.auth.backend.default"
        env["AIRFLOW__WEBSERVER__CONFIG_FILE"] = str(config)
    log = folder / "stderr.log"  # a file, not a pipe: a full pipe would stall the process
    with log.open("w") as stderr:
        server = subprocess.Popen([sys.executable, "-c", code], env=env, text=True, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=stderr)
    assert server.stdin is not None and server.stdout is not None

    def post(body: dict[str, Any]) -> SimpleNamespace:
        server.stdin.write(json.dumps(body) + "\n")
        server.stdin.flush()
        line = next((line for line in server.stdout if line.startswith("ANSWER ")), None)
        if line is None:  # the process ended without answering: its error
            server.wait(timeout=60)
            raise AssertionError(log.read_text()[-3000:])
        answer = json.loads(line.removeprefix("ANSWER "))
        return SimpleNamespace(status_code=answer["status_code"], json=lambda: answer["body"], text=answer["body"])

    yield SimpleNamespace(post=lambda _path, json: post(json))
    server.communicate(timeout=60)  # stdin closed: the loop ends
    assert server.returncode == 0, log.read_text()[-3000:]


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
