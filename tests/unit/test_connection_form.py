"""The ``analytics`` connection as Airflow registers it and its UI shows it, on every Airflow.

3.2 and later read the form from ``get_provider_info()``; 3.0 and 3.1 from the hook's
``get_connection_form_widgets()`` / ``get_ui_field_behaviour()``. Either way the UI receives it
from ``GET /ui/connections/hook_meta``, whose service is asked here, in a fresh process as in
an api-server (where nothing has loaded the providers' hooks before). Airflow 2.11's webserver
renders the form itself: its page ``/connection/add`` is fetched and read into the same shape,
and the form is then submitted as a user would, the hook reading the connection it saved.
"""

from __future__ import annotations

from importlib import metadata
from types import SimpleNamespace
from typing import Any

import pytest

from analytics_provider.get_provider_info import REGIONS, get_provider_info

pytestmark = pytest.mark.timeout(360)  # the api-server's process (tests/api_app.py) may start in one of these tests

HOOK = "analytics_provider.hooks.analytics.AnalyticsHook"


AIRFLOW_2 = int(metadata.version("apache-airflow").split(".")[0]) < 3

SUBMITTED = {"conn_id": "analytics_from_the_form", "conn_type": "analytics", "password": "the-key",
             "extra__analytics__region": "us", "extra__analytics__timeout": "25"}


@pytest.fixture(scope="module")
def analytics_form(airflow_api_app) -> Any:
    """The form as the UI receives it (Airflow 2.11: as its page renders it), from the api-server's process
    (tests/api_app.py), where nothing had loaded the providers' hooks before it was asked."""
    if AIRFLOW_2:
        page = airflow_api_app.meta
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
    form = dict(airflow_api_app.meta)
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


def test_the_form_has_a_region_dropdown_and_every_field(analytics_form) -> None:
    form = analytics_form
    assert form.hook_class_name == HOOK
    (connection_type,) = get_provider_info()["connection-types"]
    assert set(form.extra_fields) == set(connection_type["conn-fields"])
    region = form.extra_fields["region"]
    assert region["schema"]["enum"] == list(REGIONS)
    assert region["value"] == "eu"
    assert form.extra_fields["timeout"]["value"] == 60


def test_the_key_is_relabelled_and_the_unused_fields_hidden(analytics_form) -> None:
    fields = analytics_form.standard_fields
    assert fields.password.title == "API key"
    assert not fields.password.hidden
    assert all(getattr(fields, name).hidden for name in ("host", "port", "login", "url_schema"))


def test_a_connection_saved_from_the_ui_is_what_the_hook_reads(airflow_api_app) -> None:
    """Region us and a 25 s timeout entered in the form; the hook reads them back."""
    saved = airflow_api_app.ask({"form": SUBMITTED})
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
