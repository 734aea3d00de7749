"""The ``analytics`` connection as Airflow registers it and its UI shows it, on every Airflow.

3.2 and later read the form from ``get_provider_info()``; 3.0 and 3.1 from the hook's
``get_connection_form_widgets()`` / ``get_ui_field_behaviour()``. Either way the UI receives it
from ``GET /ui/connections/hook_meta``, whose service is asked here, in a fresh process as in
an api-server (where nothing has loaded the providers' hooks before). Airflow 2.11's webserver
renders the form itself: its page ``/connection/add`` is fetched and read into the same shape,
and the form is then submitted as a user would, the hook reading the connection it saved.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from analytics_provider.get_provider_info import REGIONS, get_provider_info

pytestmark = pytest.mark.timeout(360)  # its subprocesses (an api-server's form, the 2.11 app) each have 300 s

HOOK = "analytics_provider.hooks.analytics.AnalyticsHook"


AIRFLOW_2 = int(metadata.version("apache-airflow").split(".")[0]) < 3

# Airflow 2.11: the webserver's own app, its page and the form submitted (a database of its own;
# the public role an admin, CSRF off, as a logged-in admin's browser would post).
WEBSERVER_FORM = """
import json, re, subprocess, sys
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
form = dict(sys.argv[1:] and json.loads(sys.argv[1]))
saved = client.post("/connection/add", data=form, follow_redirects=True).status_code
from airflow.models import Connection
from analytics_provider.hooks.analytics import AnalyticsHook
settings = AnalyticsHook(form["conn_id"]).settings
print(json.dumps({"hook_class_name": "analytics_provider.hooks.analytics.AnalyticsHook", "extra_fields": fields,
                  "behaviour": behaviours["analytics"], "saved": saved,
                  "settings": {"base_url": settings.base_url, "read_timeout": settings.read_timeout}}))
"""
SUBMITTED = {"conn_id": "analytics_from_the_form", "conn_type": "analytics", "password": "the-key",
             "extra__analytics__region": "us", "extra__analytics__timeout": "25"}


@functools.cache
def webserver_form() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        Path(home, "webserver_config.py").write_text('AUTH_ROLE_PUBLIC = "Admin"\nWTF_CSRF_ENABLED = False\n')
        env = {**os.environ, "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/ui.db",
               "AIRFLOW__WEBSERVER__CONFIG_FILE": f"{home}/webserver_config.py"}
        result = subprocess.run([sys.executable, "-c", WEBSERVER_FORM, json.dumps(SUBMITTED)], env=env,
                                capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


# Airflow 3: the api-server's answer to GET /ui/connections/hook_meta, asked first (nothing has
# loaded the providers' hooks before), then the form saved as the UI saves it, through the REST API,
# its extra as JSON (empty fields null), and read back as the hook reads it.
API_SERVER_FORM = """
import json, sys
from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService
(meta,) = [m for m in HookMetaService.hook_meta_data() if m.connection_type == "analytics"]
from airflow.utils import db
db.initdb()
from fastapi.testclient import TestClient
from airflow.api_fastapi.app import create_app
client = TestClient(create_app())
token = client.get("/auth/token")
headers = {"Authorization": f"Bearer {token.json()['access_token']}"} if token.status_code in (200, 201) else {}
form = json.loads(sys.argv[1])
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
print(json.dumps({"meta": meta.model_dump(mode="json"), "saved": saved,
                  "settings": {"base_url": settings.base_url, "read_timeout": settings.read_timeout}}))
"""


@functools.cache
def api_server_form() -> dict[str, Any]:
    """Airflow 3's form and the connection saved from it, from one process (a database of its own)."""
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/ui.db",
               "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True"}
        result = subprocess.run([sys.executable, "-c", API_SERVER_FORM, json.dumps(SUBMITTED)], env=env,
                                capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@functools.cache
def analytics_form() -> Any:
    if AIRFLOW_2:
        page = webserver_form()
        behaviour = page["behaviour"]
        relabeled, hidden = behaviour.get("relabeling", {}), behaviour["hidden_fields"]
        standard = {
            name: {"title": relabeled.get(field, name), "hidden": field in hidden}
            for name, field in (("host", "host"), ("port", "port"), ("login", "login"), ("url_schema", "schema"),
                                ("password", "password"))
        }
        return SimpleNamespace(
            hook_class_name=page["hook_class_name"],
            extra_fields={k: {**v, "value": _typed(v["value"])} for k, v in page["extra_fields"].items()},
            standard_fields=SimpleNamespace(**{k: SimpleNamespace(**v) for k, v in standard.items()}),
        )
    form = api_server_form()["meta"]
    standard = form["standard_fields"] or {}
    form["standard_fields"] = SimpleNamespace(**{k: SimpleNamespace(**v) if v else v for k, v in standard.items()})
    return SimpleNamespace(**form)


def _typed(value: str) -> Any:
    """A rendered input's value as the form's schema types it (the timeouts are numbers)."""
    return int(value) if value.isdigit() else value


def test_airflow_registers_the_provider_and_its_testable_hook() -> None:
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    assert "airflow-provider-analytics" in manager.providers
    hook = manager.hooks["analytics"]
    assert hook is not None
    assert (hook.hook_class_name, hook.hook_name, hook.connection_testable) == (HOOK, "Analytics Service", True)


def test_the_form_has_a_region_dropdown_and_every_field() -> None:
    form = analytics_form()
    assert form.hook_class_name == HOOK
    (connection_type,) = get_provider_info()["connection-types"]
    assert set(form.extra_fields) == set(connection_type["conn-fields"])
    region = form.extra_fields["region"]
    assert region["schema"]["enum"] == list(REGIONS)
    assert region["value"] == "eu"
    assert form.extra_fields["timeout"]["value"] == 60


def test_the_key_is_relabelled_and_the_unused_fields_hidden() -> None:
    fields = analytics_form().standard_fields
    assert fields.password.title == "API key"
    assert not fields.password.hidden
    assert all(getattr(fields, name).hidden for name in ("host", "port", "login", "url_schema"))


def test_a_connection_saved_from_the_ui_is_what_the_hook_reads() -> None:
    """Region us and a 25 s timeout entered in the form; the hook reads them back."""
    saved = webserver_form() if AIRFLOW_2 else api_server_form()
    assert saved["saved"] == (200 if AIRFLOW_2 else 201)  # 2.11: the page after the redirect
    assert saved["settings"] == {"base_url": "https://us.holistics.io/api/v2", "read_timeout": 25}


def test_the_forms_size_limits_are_the_settings_defaults() -> None:
    from analytics_provider.api.call import limits

    (connection_type,) = get_provider_info()["connection-types"]
    fields = connection_type["conn-fields"]
    assert fields["max_answer_bytes"]["schema"]["default"] == limits.DEFAULT_MAX_ANSWER_BYTES
    assert fields["max_download_bytes"]["schema"]["default"] == limits.DEFAULT_MAX_DOWNLOAD_BYTES
    assert fields["max_decode_ratio"]["schema"]["default"] == limits.DEFAULT_MAX_DECODE_RATIO
    assert fields["max_header_bytes"]["schema"]["default"] == limits.DEFAULT_MAX_HEADER_BYTES
    assert fields["max_download_seconds"]["schema"]["default"] == limits.DEFAULT_MAX_DOWNLOAD_SECONDS
