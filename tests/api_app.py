"""A pytest plugin: Airflow's web app in a process of its own, as an api-server (Airflow 2.11: the
webserver) is: started once per session and shared by the tests that ask it
(tests/unit/test_connection_form.py, tests/dags/test_connection_test.py).

Each start of it imports Airflow, migrates a database and builds the app (about 10 CPU-seconds, more
on the older versions); one process for both files starts it once per run of the version matrix
instead of twice. Its database is its own (a fresh one, migrated there), not the session's.

It answers, one JSON line each: first ``META`` (Airflow 3: ``GET /ui/connections/hook_meta``'s
service asked before anything has loaded the providers' hooks, as in a fresh api-server), then for
each request read from stdin an ``ANSWER``: ``{"form": {...}}`` saves a connection as the UI's form
does and reads it back as the hook reads it; ``{"test": {...}}`` posts a body to the API's connection
test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

AIRFLOW_2 = int(metadata.version("apache-airflow").split(".")[0]) < 3

# Airflow 3: the form saved as the UI saves it, through the REST API, its extra as JSON (empty fields null).
API_SERVER = """
import json, sys
from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService
(meta,) = [m for m in HookMetaService.hook_meta_data() if m.connection_type == "analytics"]
print("META " + json.dumps(meta.model_dump(mode="json")), flush=True)
from airflow.utils import db
db.initdb()
from fastapi.testclient import TestClient
from airflow.api_fastapi.app import create_app
client = TestClient(create_app())
token = client.get("/auth/token")  # all-admins mode hands out a token (needed from 3.1 on)
headers = {"Authorization": f"Bearer {token.json()['access_token']}"} if token.status_code in (200, 201) else {}


def save(form):
    extra = {k.removeprefix("extra__analytics__"): v for k, v in form.items() if k.startswith("extra__")}
    extra = {**dict.fromkeys(("base_url", "header_name", "connect_timeout", "proxies", "verify")), **extra}
    extra["timeout"] = int(extra["timeout"])
    body = {"connection_id": form["conn_id"], "conn_type": form["conn_type"], "password": form["password"],
            "extra": json.dumps(extra)}
    saved = client.post("/api/v2/connections", json=body, headers=headers).status_code
    from airflow.models.connection import Connection  # what the api-server stored, read as the hook reads it
    from airflow.utils.session import create_session
    from analytics_provider.api.call.settings import ConnectionSettings
    with create_session() as session:
        stored = session.query(Connection).filter_by(conn_id=form["conn_id"]).one()
        settings = ConnectionSettings.from_connection(stored, form["conn_id"])
    return {"saved": saved, "settings": {"base_url": settings.base_url, "read_timeout": settings.read_timeout}}


def test(body):
    answer = client.post("/api/v2/connections/test", json=body, headers=headers)
    return {"status_code": answer.status_code, "body": answer.json()}
"""

# Airflow 2.11: the webserver's own app (the public role an admin, CSRF off, API authentication off, as a
# logged-in admin's browser would post); its page /connection/add read into the shape of Airflow 3's
# hook meta, the form submitted, and the API's /api/v1.
WEBSERVER = """
import json, re, sys
from html import unescape
from airflow.utils import db
db.initdb()
from airflow.www.app import create_app
client = create_app(testing=True).test_client()
page = client.get("/connection/add").get_data(as_text=True)
fields = {}
inputs = r'<(input|select)[^>]*name="extra__analytics__(\\w+)"([^>]*>(?:.*?</select>)?)'
for tag, name, rest in re.findall(inputs, page, re.S):
    if tag == "select":
        options = re.findall(r'<option( selected)? value="([^"]*)"', rest)
        fields[name] = {"schema": {"enum": [v for _, v in options]}, "value": next(v for s, v in options if s)}
    else:
        fields[name] = {"schema": {}, "value": re.search(r'value="([^"]*)"', rest).group(1)}
behaviours = json.loads(unescape(re.search(r'id="field_behaviours"[^>]*>(.*?)</script>', page, re.S).group(1)))
print("META " + json.dumps({"hook_class_name": "analytics_provider.hooks.analytics.AnalyticsHook",
                            "extra_fields": fields, "behaviour": behaviours["analytics"]}), flush=True)


def save(form):
    saved = client.post("/connection/add", data=form, follow_redirects=True).status_code
    from analytics_provider.hooks.analytics import AnalyticsHook
    settings = AnalyticsHook(form["conn_id"]).settings
    return {"saved": saved, "settings": {"base_url": settings.base_url, "read_timeout": settings.read_timeout}}


def test(body):
    answer = client.post("/api/v1/connections/test", json=body)
    return {"status_code": answer.status_code, "body": answer.get_json()}
"""

# Ends on {"quit": true}, not at stdin's end: a process the test's process forks later (OpenLineage's
# pool, at a DAG run's end) inherits the pipe's writing end, so closing it there sends no EOF.
REQUESTS = """
import os
for line in sys.stdin:
    request = json.loads(line)
    if "quit" in request:
        sys.stdout.flush()
        os._exit(0)  # (the app's threads are not waited for)
    answer = save(request["form"]) if "form" in request else test(request["test"])
    print("ANSWER " + json.dumps(answer), flush=True)
"""


class ApiApp:
    """The process, asked one request at a time (the tests of a session run one at a time)."""

    def __init__(self, process: subprocess.Popen[str], log: Path) -> None:
        self.process, self.log = process, log
        self.meta: dict[str, Any] = self._line("META ")

    def _line(self, prefix: str) -> Any:
        assert self.process.stdout is not None
        line = next((line for line in self.process.stdout if line.startswith(prefix)), None)
        if line is None:  # the process ended without answering: how, and its error
            code = self.process.wait(timeout=60)
            how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
            raise AssertionError(f"the api-server process ended without its {prefix.strip()} line ({how}); "
                                 f"its stderr: {self.log.read_text()[-3000:]!r}")
        return json.loads(line.removeprefix(prefix))

    def ask(self, request: dict[str, Any]) -> Any:
        self._send(request)
        return self._line("ANSWER ")

    def _send(self, request: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()

    def quit(self, timeout: float = 60) -> None:
        """Ask the process to end, and wait for it (killed past ``timeout`` seconds: an error)."""
        self._send({"quit": True})
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError(f"the api-server process did not end within {timeout} s of quit: killed") from None


@pytest.fixture(scope="session")
def airflow_api_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiApp]:
    folder = tmp_path_factory.mktemp("api-server")
    env = {**os.environ, "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{folder}/ui.db",
           "AIRFLOW__CORE__TEST_CONNECTION": "Enabled", "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True"}
    if AIRFLOW_2:
        config = folder / "webserver_config.py"
        config.write_text('AUTH_ROLE_PUBLIC = "Admin"\nWTF_CSRF_ENABLED = False\n')
        env["AIRFLOW__API__AUTH_BACKENDS"] = env["AIRFLOW__FAB__AUTH_BACKENDS"] = "airflow.api.auth.backend.default"
        env["AIRFLOW__WEBSERVER__CONFIG_FILE"] = str(config)
    code = (WEBSERVER if AIRFLOW_2 else API_SERVER) + REQUESTS
    log = folder / "stderr.log"  # a file, not a pipe: a full pipe would stall the process
    with log.open("w") as stderr:
        process = subprocess.Popen([sys.executable, "-c", code], env=env, text=True, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=stderr)
    with process:
        app = ApiApp(process, log)
        yield app
        app.quit()
    assert process.returncode == 0, log.read_text()[-3000:]
