"""The ``analytics`` connection as Airflow registers it and its UI shows it, on every Airflow 3.

3.2 and later read the form from ``get_provider_info()``; 3.0 and 3.1 from the hook's
``get_connection_form_widgets()`` / ``get_ui_field_behaviour()``. Either way the UI receives it
from ``GET /ui/connections/hook_meta``, whose service is asked here, in a fresh process as in
an api-server (where nothing has loaded the providers' hooks before).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

from analytics_provider.get_provider_info import REGIONS, get_provider_info

HOOK = "analytics_provider.hooks.analytics.AnalyticsHook"


@functools.cache
def analytics_form() -> Any:
    code = (
        "import json\n"
        "from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService\n"
        "(meta,) = [m for m in HookMetaService.hook_meta_data() if m.connection_type == 'analytics']\n"
        "print(json.dumps(meta.model_dump(mode='json')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    form = json.loads(result.stdout.strip().splitlines()[-1])
    standard = form["standard_fields"] or {}
    form["standard_fields"] = SimpleNamespace(**{k: SimpleNamespace(**v) if v else v for k, v in standard.items()})
    return SimpleNamespace(**form)


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
