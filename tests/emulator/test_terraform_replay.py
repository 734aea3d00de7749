"""An independent client's requests against the emulator: the public Terraform provider for this service.

The request shapes (paths, query options, wrapped bodies, the key in ``X-Holistics-Key``) and the
types it decodes the answers into are those of TestGorilla-BV/terraform-provider-holistics
(``internal/client``), re-stated here; the order is the one Terraform's apply, plan (refresh),
import and destroy give them. An answer "decodes" when Go's ``encoding/json`` would accept it into
that client's struct: every field present has the struct's JSON type (missing fields and nulls
are zero values there), and the envelope the client reads is present.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from analytics_provider.testing.emulator.app import AnalyticsEmulator

Spec = Any  # a type name, a struct (dict of JSON name to Spec), [Spec] for a slice, or a decoder function


# -- Go's encoding/json, as far as these structs need it ------------------------------------------------------

def _number_text(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


SCALARS: dict[str, Callable[[Any], bool]] = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "number": lambda v: (isinstance(v, (int, float)) and not isinstance(v, bool)) or (
        isinstance(v, str) and _number_text(v)),  # json.Number
    "flexible": lambda v: not isinstance(v, (dict, list)),  # FlexibleID: any scalar
    "condition_value": lambda v: True,  # ConditionValue: string, bool or number; anything else is left empty
    "any": lambda v: True,
}


def decode(value: Any, spec: Spec, where: str = "$") -> list[str]:
    """Why Go would refuse ``value`` for ``spec`` (empty: it decodes)."""
    if value is None:  # null leaves a Go value at its zero
        return []
    if callable(spec):
        return decode(value, spec(value), where)
    if isinstance(spec, str):
        return [] if SCALARS[spec](value) else [f"{where}: {value!r} is not a Go {spec}"]
    if isinstance(spec, list):
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__} is not a slice"]
        return [p for i, item in enumerate(value) for p in decode(item, spec[0], f"{where}[{i}]")]
    if not isinstance(value, dict):
        return [f"{where}: {type(value).__name__} is not an object"]
    return [p for name, sub in spec.items() if name in value for p in decode(value[name], sub, f"{where}.{name}")]


# -- the client's types (internal/client/*.go) -----------------------------------------------------------------

USER = {"id": "int", "email": "string", "name": "string", "initials": "string", "role": "string",
        "is_deleted": "bool", "is_activated": "bool", "has_authentication_token": "bool",
        "allow_authentication_token": "bool", "enable_export_data": "bool", "current_sign_in_at": "string",
        "last_sign_in_at": "string", "created_at": "string", "title": "string", "job_title": "string",
        "group_ids": ["int"]}
GROUP = {"id": "int", "name": "string", "user_ids": ["int"]}
ATTRIBUTE = {"id": "float", "name": "string", "attribute_type": "string", "label": "string",
             "description": "string", "is_system_attribute": "bool"}
TAG = {"name": "string", "description": "string", "color": "string"}
DASHBOARD = {"id": "int", "owner_id": "int", "title": "string", "category_id": "int", "version": "int",
             "url": "string", "tags": ["string"]}
DATA_SOURCE = {"id": "int", "name": "string", "dbtype": "string", "is_sample": "bool", "is_default": "bool",
               "settings": {"require_ssl": "bool", "query_timeout": "int", "enable_schema_info": "bool",
                            "use_connection_str": "bool", "timezone": "string"}}
CONDITION = {"modifier": "string", "operator": "string", "values": ["condition_value"]}
PRESET = {"id": "int", "dynamic_filter_id": "number", "preset_condition": CONDITION, "public_hidden": "bool"}
SCHEDULE = {"repeat": "string", "paused": "bool", "is_archived": "bool"}
EMAIL_OPTIONS = {"preview": "bool", "include_header": "bool", "include_report_link": "bool",
                 "include_filters": "bool", "dont_send_when_empty": "bool", "body_text": "string",
                 "selected_type": "string", "selected_values": ["number"], "attachment_formats": ["string"]}
SCHEDULE_DESTS: dict[str, Spec] = {
    "EmailDest": {"title": "string", "recipients": ["string"], "options": EMAIL_OPTIONS},
    "EmailSubscriptionDest": {"recipients": ["string"], "options": EMAIL_OPTIONS},
    "SftpDest": {"dashboard_widget_id": "string", "data_source_id": "int", "file_path": "string",
                 "format": "string", "include_header": "bool", "separator": "string"},
    "SlackDest": {"hide_filters": "bool", "message": "string", "title": "string",
                  "slack_channels": [{"id": "string", "name": "string", "type": "string"}]},
    "GsheetDest": {"sheet_url": "string", "sheet_title": "string"},
}
ALERT_DESTS: dict[str, Spec] = {
    "EmailDest": {"title": "string", "recipients": ["string"], "options": {"body_text": "string"}},
    "SlackDest": {"title": "string", "message": "string", "slack_channels": [{"id": "string", "name": "string"}]},
    "WebhookDest": {"endpoint": "string"},
}


def _dest(kinds: dict[str, Spec]) -> Callable[[Any], Spec]:
    """The custom UnmarshalJSON: the fields of the destination its ``type`` names (none for others)."""
    return lambda value: {"type": "string", **kinds.get(value.get("type"), {})} if isinstance(value, dict) else {}


DATA_SCHEDULE = {"id": "int", "title": "string", "source_type": "string", "source_id": "int",
                 "schedule": SCHEDULE, "dynamic_filter_presets": [PRESET], "dest": _dest(SCHEDULE_DESTS)}
VIZ_CONDITION = {"id": "int", "aggregation": "string", "transformation": "string", "condition": CONDITION,
                 "field_path": {"field_name": "string", "model_id": "flexible", "data_set_id": "int",
                                "is_metric": "bool"}}
DATA_ALERT = {"id": "int", "title": "string", "source_id": "flexible", "source_type": "string",
              "dest": _dest(ALERT_DESTS), "dynamic_filter_presets": [PRESET], "viz_conditions": [VIZ_CONDITION],
              "schedule": SCHEDULE}
LINK = {"id": "number", "resource_type": "string", "resource_id": "number", "title": "string",
        "password_enabled": "bool", "password": "string", "expired_at": "string",
        "dynamic_filter_presets": [PRESET],
        "permission_rules": {"row_based": [{"condition": CONDITION, "field_path": VIZ_CONDITION["field_path"]}]}}
CURSORS = {"next": "string"}


def page_of(key: str, item: Spec) -> Spec:
    return {key: [item], "cursors": CURSORS}


# -- the replay ---------------------------------------------------------------------------------------------------

@dataclass
class Replay:
    """Sends the client's requests as it does and counts what decoded."""

    emu: AnalyticsEmulator
    session: requests.Session = field(default_factory=requests.Session)
    sent: int = 0
    checks: list[tuple[str, list[str]]] = field(default_factory=list)
    phases: dict[str, int] = field(default_factory=dict)
    phase: str = ""

    def do(self, method: str, path: str, *, query: Any = None, body: Any = None, envelope: str | None = None,
           spec: Spec = None, ok: tuple[int, ...] = (200, 201)) -> Any:
        headers = {"X-Holistics-Key": self.emu.api_key, "Accept": "application/json",
                   "User-Agent": "terraform-provider-holistics (replay)"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        answer = self.session.request(method, self.emu.base_url + path, params=query, json=body, headers=headers,
                                      timeout=10)
        self.sent += 1
        self.phases[self.phase] = self.phases.get(self.phase, 0) + 1
        label = f"{self.phase}: {method} {path}"
        problems = [] if answer.status_code in ok else [f"status {answer.status_code}: {answer.text[:200]}"]
        payload = answer.json() if answer.content else None
        if spec is not None and not problems:
            if envelope is not None:
                if not isinstance(payload, dict) or envelope not in payload:
                    problems.append(f"no {envelope!r} in the answer")
                payload = payload.get(envelope) if isinstance(payload, dict) else None
            problems += decode(payload, spec)
            self.checks.append((label, problems))
        assert not problems, f"{label}: {problems}"
        return payload

    def list_all(self, path: str, key: str, item: Spec, **query: Any) -> list[Any]:
        """The client's paging: limit=100, ``after`` from ``cursors.next`` until it is empty."""
        found: list[Any] = []
        after = None
        while True:
            page = self.do("GET", path, query={"limit": "100", **query, **({"after": after} if after else {})},
                           spec=page_of(key, item))
            found += page[key]
            after = (page.get("cursors") or {}).get("next")
            if not after:
                return found


SFTP_SOURCE = 1


def schedules() -> list[dict[str, Any]]:
    """One data schedule per destination kind the client knows, as its resource sends them."""
    base = {"source_type": "Dashboard", "source_id": 1, "schedule": {"repeat": "0 7 * * 1-5", "paused": False},
            "dynamic_filter_presets": [{"dynamic_filter_id": 1,
                                        "preset_condition": {"operator": "is", "values": ["EU"]}}]}
    dests = [
        {"type": "EmailDest", "title": "Sales {{$today}}", "recipients": ["ops@example.org"],
         "options": {"preview": True, "include_header": True, "attachment_formats": ["pdf"]}},
        {"type": "EmailSubscriptionDest", "recipients": ["team@example.org"], "options": {"include_filters": True}},
        {"type": "SftpDest", "dashboard_widget_id": "101", "data_source_id": SFTP_SOURCE,
         "file_path": "/exports/revenue_{{$today}}.csv", "format": "csv", "include_header": True, "separator": ","},
        {"type": "SlackDest", "title": "Daily sales", "message": "Morning numbers", "hide_filters": False,
         "slack_channels": [{"id": "C024BE91L", "name": "sales", "type": "channel"}]},
        {"type": "GsheetDest", "sheet_url": "https://docs.google.com/spreadsheets/d/abc123", "sheet_title": "Revenue"},
    ]
    return [{**base, "dest": dest} for dest in dests]


def alerts() -> list[dict[str, Any]]:
    base = {"title": "Revenue dropped", "source_type": "DashboardWidget", "source_id": "101",
            "dynamic_filter_presets": [], "schedule": {"repeat": "0 * * * *", "paused": False},
            "viz_conditions": [{"field_path": {"field_name": "revenue", "model_id": 1}, "aggregation": "sum",
                                "condition": {"operator": "less_than", "values": [100]}}]}
    dests = [{"type": "EmailDest", "title": "Alert", "recipients": ["ops@example.org"],
              "options": {"body_text": "Revenue is low"}},
             {"type": "SlackDest", "title": "Alert", "message": "Revenue is low",
              "slack_channels": [{"id": "C024BE91L", "name": "sales"}]},
             {"type": "WebhookDest", "endpoint": "https://hooks.example.org/revenue"}]
    return [{**base, "dest": dest} for dest in dests]


@pytest.fixture
def replay(emu: AnalyticsEmulator) -> Replay:
    emu.set_rate_limit(quota=1000)  # Terraform's client waits out 429s; the replay counts shapes, not quotas
    player = Replay(emu)
    yield player
    player.session.close()


def test_the_terraform_providers_requests_decode_as_it_reads_them(
    replay: Replay, emu: AnalyticsEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    r = replay
    # apply: the provider's configure and data sources, then each resource's Create
    r.phase = "apply"
    r.do("GET", "/users/me", envelope="user", spec=USER)
    r.do("GET", "/tags", envelope="tags", spec=[TAG])
    r.do("GET", "/dashboards/1", envelope="dashboard", spec=DASHBOARD)
    r.do("GET", "/data_sources/1", envelope="data_source", spec=DATA_SOURCE)
    r.list_all("/users", "users", USER, search_term="maya")  # the users data source with a filter
    email = "new.analyst@example.org"
    r.do("POST", "/users/invite", body={"emails": [email], "role": "analyst", "allow_authentication_token": True,
                                        "enable_export_data": False})
    user = next(u for u in r.list_all("/users", "users", USER) if u["email"] == email)  # it polls the list
    r.do("PUT", f"/users/{user['id']}", body={"user": {"name": "New Analyst", "title": "Lead",
                                                       "job_title": "Analytics engineer"}}, spec=USER)
    group = r.do("POST", "/groups", body={"group": {"name": "Finance team"}}, envelope="group", spec=GROUP)
    r.do("POST", f"/groups/{group['id']}/add_user/{user['id']}")
    attribute = r.do("POST", "/user_attributes", body={"user_attribute": {
        "name": "region_code", "attribute_type": "string", "label": "Region code", "description": "Row access"}},
        envelope="user_attribute", spec=ATTRIBUTE)
    made_schedules = [r.do("POST", "/data_schedules", body={"data_schedule": s}, envelope="data_schedule",
                           spec=DATA_SCHEDULE) for s in schedules()]
    made_alerts = [r.do("POST", "/data_alerts", body={"data_alert": a}, envelope="data_alert", spec=DATA_ALERT)
                   for a in alerts()]
    link = r.do("POST", "/shareable_links", body={"shareable_link": {
        "resource_type": "Dashboard", "resource_id": 1, "title": "Board pack", "password_enabled": False,
        "dynamic_filter_presets": [], "permission_rules": {"row_based": []}}},
        envelope="shareable_link", spec=LINK)
    assert [s["dest"]["type"] for s in made_schedules] == [s["dest"]["type"] for s in schedules()]
    assert all("{{$today}}" in s["dest"].get("title", "{{$today}}") for s in made_schedules[:1])

    # plan: every resource refreshed (Read), twice as Terraform plans before apply and after
    for phase in ("plan", "plan again"):
        r.phase = phase
        listed = {u["id"]: u for u in r.list_all("/users", "users", USER)}
        assert listed[user["id"]]["email"] == email  # title and job_title are not in the list: not diffed
        r.list_all("/groups", "groups", GROUP, include_users="true")
        r.do("GET", f"/groups/{group['id']}", query={"include_users": "true"}, envelope="group", spec=GROUP)
        assert any(a["id"] == attribute["id"] for a in r.list_all("/user_attributes", "user_attributes", ATTRIBUTE))
        for s in made_schedules:
            r.do("GET", f"/data_schedules/{s['id']}", envelope="data_schedule", spec=DATA_SCHEDULE)
        for a in made_alerts:
            r.do("GET", f"/data_alerts/{a['id']}", envelope="data_alert", spec=DATA_ALERT)
        r.do("GET", f"/shareable_links/{link['id']}", envelope="shareable_link", spec=LINK)
        r.do("GET", "/tags", envelope="tags", spec=[TAG])

    # import: by id (schedules, alerts, links, groups), by e-mail or id from the list (users, attributes)
    r.phase = "import"
    assert any(u["email"] == email for u in r.list_all("/users", "users", USER, search_term=email))
    r.list_all("/users", "users", USER, **{"ids[]": [user["id"]], "statuses[]": ["active", "pending"]})
    r.do("GET", f"/groups/{group['id']}", envelope="group", spec=GROUP)
    r.list_all("/user_attributes", "user_attributes", ATTRIBUTE)
    for s in made_schedules:
        r.do("GET", f"/data_schedules/{s['id']}", envelope="data_schedule", spec=DATA_SCHEDULE)
        r.do("PUT", f"/data_schedules/{s['id']}", body={"data_schedule": {**s, "schedule": {
            "repeat": "0 8 * * 1-5", "paused": True}}}, envelope="data_schedule", spec=DATA_SCHEDULE)
    for a in made_alerts:
        r.do("GET", f"/data_alerts/{a['id']}", envelope="data_alert", spec=DATA_ALERT)
    r.do("PUT", f"/shareable_links/{link['id']}", body={"shareable_link": {**link, "title": "Board pack (Q4)"}},
         envelope="shareable_link", spec=LINK)
    r.do("PUT", f"/groups/{group['id']}", body={"group": {"name": "Finance"}}, envelope="group", spec=GROUP)
    r.do("PUT", f"/user_attributes/{int(attribute['id'])}", body={"user_attribute": {
        "name": "region_code", "attribute_type": "string", "label": "Region"}},  # a nil description is omitted
        envelope="user_attribute", spec=ATTRIBUTE)

    # destroy: in reverse order of dependencies
    r.phase = "destroy"
    r.do("DELETE", f"/shareable_links/{link['id']}")
    for a in made_alerts:
        r.do("DELETE", f"/data_alerts/{a['id']}")
    for s in made_schedules:
        r.do("DELETE", f"/data_schedules/{s['id']}")
    r.do("DELETE", f"/user_attributes/{int(attribute['id'])}")
    r.do("POST", f"/groups/{group['id']}/remove_user/{user['id']}")
    r.do("DELETE", f"/groups/{group['id']}")
    r.do("DELETE", f"/users/{user['id']}")
    r.do("GET", f"/data_schedules/{made_schedules[0]['id']}", ok=(404,))  # Read after destroy: gone

    carried = [q for q in emu.requests if q.origin == "api"]
    assert len(carried) == r.sent and all(q.headers.get("X-Holistics-Key") == "***" for q in carried)
    held = sum(1 for _, problems in r.checks if not problems)
    with capsys.disabled():
        phases = ", ".join(f"{name} {count}" for name, count in r.phases.items())
        print(f"\nterraform-provider-holistics replay: {r.sent} requests ({phases}); "
              f"{held} of {len(r.checks)} answers decoded into its types")
    assert held == len(r.checks) > 50


def test_the_decoder_refuses_what_go_would() -> None:
    assert decode({"id": "7"}, GROUP) == ["$.id: '7' is not a Go int"]
    assert decode({"id": 1.5, "user_ids": [1, "2"]}, GROUP) == ["$.id: 1.5 is not a Go int",
                                                                "$.user_ids[1]: '2' is not a Go int"]
    assert decode({"id": None, "unknown": object()}, GROUP) == []  # null and unknown fields are fine in Go
    assert decode({"type": "SftpDest", "data_source_id": "1"}, _dest(SCHEDULE_DESTS)) == [
        "$.data_source_id: '1' is not a Go int"]
    assert decode({"id": "12"}, LINK) == [] and decode({"id": "x"}, LINK) == ["$.id: 'x' is not a Go number"]
