"""The connection form for Airflow 2.11, 3.0 and 3.1, built from the ``conn-fields`` of the provider info.

Airflow 3.2 and later read the form from ``get_provider_info()`` (``conn-fields``,
``ui-field-behaviour``). Airflow 3.0 and 3.1 read only the hook's
``get_connection_form_widgets()`` and ``get_ui_field_behaviour()``: WTForms fields, which their
api-server turns back into the same JSON schema (``any_of`` becomes a dropdown) even when WTForms
is not installed, by standing in for it. Airflow 2.11's Flask-AppBuilder UI renders those fields
itself, so there they carry its widgets: a dropdown for the region, Bootstrap inputs for the
rest. All come from the one description in
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

    from analytics_provider.version_compat import AIRFLOW_V_3_0_PLUS

    widgets: dict[str, Any] = {}
    for name, field in _connection_type()["conn-fields"].items():
        schema = field["schema"]
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        kind = IntegerField if {"integer", "number"} & set(types) else StringField
        if schema.get("format") == "password":
            kind = PasswordField
        validators = [Optional()] + ([any_of(list(schema["enum"]))] if "enum" in schema else [])
        drawn = {} if AIRFLOW_V_3_0_PLUS else {"widget": _flask_appbuilder_widget(kind, schema)}
        description = field.get("description", "")
        default = schema.get("default")
        widgets[name] = kind(field["label"], validators=validators, description=description, default=default, **drawn)
    return widgets


def _flask_appbuilder_widget(kind: Any, schema: dict[str, Any]) -> Any:
    """How Airflow 2.11's UI draws a field. It accepts only ``StringField``, ``IntegerField``,
    ``PasswordField`` and ``BooleanField``, so a field of fixed choices (the region) stays a
    ``StringField``, drawn as a dropdown (:class:`ChoicesWidget`) and still checked by ``any_of``."""
    from flask_appbuilder.fieldwidgets import BS3PasswordFieldWidget, BS3TextFieldWidget
    from wtforms import PasswordField

    if "enum" in schema:
        return ChoicesWidget(list(schema["enum"]))
    return BS3PasswordFieldWidget() if kind is PasswordField else BS3TextFieldWidget()


class ChoicesWidget:
    """A ``<select>`` of fixed choices for a text field, styled as Airflow 2.11's other inputs."""

    def __init__(self, choices: list[str]) -> None:
        self.choices = choices

    def __call__(self, field: Any, **kwargs: Any) -> Any:
        from markupsafe import Markup, escape
        from wtforms.widgets import html_params

        kwargs.setdefault("id", field.id)
        kwargs["class"] = f"{kwargs.get('class', '')} form-control".strip()
        options = "".join(
            f"<option{' selected' if choice == field.data else ''} value=\"{escape(choice)}\">{escape(choice)}</option>"
            for choice in self.choices
        )
        return Markup(f"<select {html_params(name=field.name, **kwargs)}>{options}</select>")


def field_behaviour() -> dict[str, Any]:
    """``ui-field-behaviour`` with the keys the hook method uses (``hidden_fields``...)."""
    behaviour = _connection_type()["ui-field-behaviour"]
    return {key.replace("-", "_"): value for key, value in behaviour.items()}
