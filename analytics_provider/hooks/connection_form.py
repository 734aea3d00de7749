"""The connection form for Airflow 3.0 and 3.1, built from the ``conn-fields`` of the provider info.

Airflow 3.2 and later read the form from ``get_provider_info()`` (``conn-fields``,
``ui-field-behaviour``). Airflow 3.0 and 3.1 read only the hook's
``get_connection_form_widgets()`` and ``get_ui_field_behaviour()``: WTForms fields, which their
api-server turns back into the same JSON schema (``any_of`` becomes a dropdown) even when WTForms
is not installed, by standing in for it. Both come from the one description in
``get_provider_info``.
"""

from __future__ import annotations

from typing import Any

from analytics_provider.get_provider_info import get_provider_info


def _connection_type() -> dict[str, Any]:
    (connection_type,) = get_provider_info()["connection-types"]
    return dict(connection_type)


def form_widgets() -> dict[str, Any]:
    """One WTForms field per ``conn-fields`` entry (raises ImportError without WTForms)."""
    from wtforms import IntegerField, PasswordField, StringField
    from wtforms.validators import Optional, any_of

    widgets: dict[str, Any] = {}
    for name, field in _connection_type()["conn-fields"].items():
        schema = field["schema"]
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        kind = IntegerField if {"integer", "number"} & set(types) else StringField
        if schema.get("format") == "password":
            kind = PasswordField
        validators = [Optional()] + ([any_of(list(schema["enum"]))] if "enum" in schema else [])
        description = field.get("description", "")
        default = schema.get("default")
        widgets[name] = kind(field["label"], validators=validators, description=description, default=default)
    return widgets


def field_behaviour() -> dict[str, Any]:
    """``ui-field-behaviour`` with the keys the hook method uses (``hidden_fields``...)."""
    behaviour = _connection_type()["ui-field-behaviour"]
    return {key.replace("-", "_"): value for key, value in behaviour.items()}
