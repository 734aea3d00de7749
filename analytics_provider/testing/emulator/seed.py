"""The seed: a small, realistic account (users of every role, dashboards, reports, schedules...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analytics_provider.testing.emulator.state import Json, State
from analytics_provider.testing.emulator.tables import REGIONS, daily_orders, seed_tables

# id, name, role, group ids, status (active, pending or deleted)
SEED_USERS: tuple[tuple[int, str, str, tuple[int, ...], str], ...] = (
    (1, "Maya Chen", "admin", (1,), "active"),
    (2, "Lucas Meyer", "growth_admin", (), "active"),
    (3, "Priya Raman", "it_admin", (), "active"),
    (4, "Tom Okafor", "analyst", (1,), "active"),
    (5, "Sofia Rossi", "analyst", (2,), "active"),
    (6, "Jonas Berg", "explorer", (2,), "active"),
    (7, "Aiko Tanaka", "user", (2,), "active"),
    (8, "Daniel Kim", "user", (), "pending"),
    (9, "Emma Laurent", "explorer", (1,), "deleted"),
)
KEYED_USERS = tuple(uid for uid, *_, status in SEED_USERS if status == "active")
"""The seeded users that have an API key."""

FIRST_NAMES = ("Olivia", "Noah", "Amelia", "Mateo", "Chloe", "Arjun", "Hana", "Felix", "Zoe", "Omar",
               "Lena", "Kenji", "Ines", "Ravi", "Greta", "Diego", "Yara", "Milan", "Nora", "Samuel")
LAST_NAMES = ("Novak", "Silva", "Fischer", "Nguyen", "Kowalski", "Haddad", "Jensen", "Moreau", "Patel",
              "Larsen", "Costa", "Schmidt", "Ito", "Dubois", "Khan", "Romero", "Weber", "Svensson")
ROLE_CYCLE = ("user", "user", "explorer", "user", "analyst", "explorer", "user", "admin")
STAMP = "2025-02-03T09:15:00Z"
TARGET_COMMIT = "9f2c4e1b7a3d5f60812c4e9b0a7d3f1e5c2b8a64"


def make_user(user_id: int, name: str, role: str, group_ids: tuple[int, ...] | list[int], status: str) -> Json:
    first, _, last = name.partition(" ")
    activated = status != "pending"
    return {
        "id": user_id,
        "email": f"{first.lower()}.{last.lower().replace(' ', '')}@example.com",
        "name": name,
        "initials": (first[:1] + last[:1]).upper(),
        "role": role,
        "is_deleted": status == "deleted",
        "is_activated": activated,
        "has_authentication_token": False,
        "allow_authentication_token": role != "user" or status == "active",
        "enable_export_data": True,
        "current_sign_in_at": "2025-05-12T08:02:11Z" if activated else None,
        "last_sign_in_at": "2025-05-09T17:40:52Z" if activated else None,
        "created_at": STAMP,
        "title": None,
        "job_title": {"admin": "Head of Data", "analyst": "Data Analyst", "explorer": "Product Manager"}.get(role),
        "group_ids": list(group_ids),
    }


def generated_user(user_id: int, index: int) -> Json:
    """The ``index``-th user of :meth:`add_users`: varied names, roles and groups."""
    first = FIRST_NAMES[index % len(FIRST_NAMES)]
    last = LAST_NAMES[(index // len(FIRST_NAMES)) % len(LAST_NAMES)]
    user = make_user(user_id, f"{first} {last}", ROLE_CYCLE[index % len(ROLE_CYCLE)], [1 + index % 2], "active")
    user["email"] = f"{first.lower()}.{last.lower()}.{user_id}@example.com"
    return user


def seed_state(keys: Mapping[int, str]) -> State:
    """A fresh account; ``keys`` are the API keys of :data:`KEYED_USERS`."""
    state = State()
    for uid, name, role, groups, status in SEED_USERS:
        state.users[uid] = make_user(uid, name, role, groups, status)
    for uid, key in keys.items():
        state.keys[key] = uid
        state.users[uid]["has_authentication_token"] = True
    state.groups = {1: {"id": 1, "name": "Sales"}, 2: {"id": 2, "name": "Operations"}}
    state.data_sources = {1: _data_source(), 2: _sample_data_source(), **{s["id"]: s for s in _other_warehouses()}}
    state.data_models = {m["id"]: m for m in _data_models()}
    state.data_sets = {d["id"]: d for d in _data_sets()}
    state.query_reports = {r["id"]: r for r in _reports()}
    state.tables = seed_tables()
    state.model_tables = {1: daily_orders()}
    state.dashboards, state.widgets = _dashboards()
    state.data_schedules = {s["id"]: s for s in _schedules()}
    state.data_alerts = {a["id"]: a for a in _alerts()}
    state.user_attributes = {a["id"]: a for a in _attributes()}
    state.attribute_entries = _entries()
    state.projects = {1: {"id": 1, "name": "analytics", "default_branch": "master", "commit_oid": TARGET_COMMIT}}
    state.shareable_links = {1: _shareable_link()}
    state.tags = [{"name": "certified", "description": "Reviewed by the data team", "color": "#16a34a"},
                  {"name": "finance", "description": None, "color": "#2563eb"},
                  {"name": "deprecated", "description": "To be archived", "color": None}]
    state.object_tags = {("dataset", "sales"): ["certified"], ("dashboard", "sales_overview"): ["certified", "finance"]}
    return state


def _sample_data_source() -> Json:
    return {
        "id": 2, "name": "Sample data (demo)", "dbtype": "postgresql", "is_sample": True, "is_default": False,
        "settings": {"require_ssl": False, "query_timeout": 60, "enable_schema_info": True,
                     "use_connection_str": False, "timezone": "Etc/UTC"},
    }


def _shareable_link() -> Json:
    return {"id": 1, "resource_type": "Dashboard", "resource_id": 1, "title": "Sales overview (public)",
            "password_enabled": False, "expired_at": None, "owner_id": 1,
            "hash_code": "shr001k9x2", "dynamic_filter_presets": [], "permission_rules": {"row_based": []}}


def _other_warehouses() -> list[Json]:
    """Data sources of other warehouses (their ``dbtype`` as the service writes it), each with a
    model named as that warehouse writes its tables."""
    return [{
        "id": source_id, "name": name, "dbtype": dbtype, "is_sample": False, "is_default": False,
        "settings": {"require_ssl": True, "query_timeout": 300, "enable_schema_info": True,
                     "use_connection_str": False, "timezone": "Etc/UTC"},
    } for source_id, name, dbtype in ((3, "Product analytics (Snowflake)", "snowflake"),
                                      (4, "Web events (BigQuery)", "bigquery"))]


def _data_source() -> Json:
    return {
        "id": 1, "name": "Production warehouse", "dbtype": "postgresql", "is_sample": False, "is_default": True,
        "settings": {"require_ssl": True, "query_timeout": 300, "enable_schema_info": True,
                     "use_connection_str": False, "timezone": "Etc/UTC"},
    }


_MODELS: dict[int, tuple[str, str, list[tuple[str, str]]]] = {
    1: ("orders", "public.orders", [("order_id", "number"), ("created_at", "date"), ("month", "text"),
                                    ("week", "text"), ("region", "text"), ("channel", "text"),
                                    ("orders", "number"), ("revenue", "number"), ("avg_order_value", "number")]),
    2: ("customers", "public.customers", [("customer_id", "number"), ("country", "text"), ("region", "text"),
                                          ("signups", "number"), ("conversion_rate", "number")]),
    3: ("campaigns", "marketing.campaigns", [("campaign", "text"), ("channel", "text"), ("region", "text"),
                                             ("impressions", "number"), ("clicks", "number"), ("spend", "number"),
                                             ("conversions", "number")]),
    4: ("revenue_targets", "finance.revenue_targets", [("quarter", "text"), ("region", "text"),
                                                       ("revenue", "number"), ("target", "number"),
                                                       ("attainment_pct", "number")]),
}
# query models: id, name, data source, SQL, the models it is built on, fields
_QUERY_MODELS: tuple[tuple[int, str, int, str, list[int], list[tuple[str, str]]], ...] = (
    (5, "orders_by_region", 1,
     "select o.region, count(*) as orders, sum(o.revenue) as revenue from {{ #orders o }} group by o.region",
     [1], [("region", "text"), ("orders", "number"), ("revenue", "number")]),
    (6, "campaign_roi", 1,
     "with spend as (select channel, sum(spend) as spend, sum(conversions) as conversions\n"
     "  from marketing.campaigns group by channel)\n"
     "select channel, spend, conversions, spend / nullif(conversions, 0) as cost_per_conversion from spend",
     [], [("channel", "text"), ("spend", "number"), ("conversions", "number"), ("cost_per_conversion", "number")]),
)
# table models of the other warehouses: id, name, data source, table_name as that warehouse writes it, fields
_WAREHOUSE_MODELS: tuple[tuple[int, str, int, str, list[tuple[str, str]]], ...] = (
    (7, "sessions", 3, "ANALYTICS.WEB.SESSIONS", [("session_id", "text"), ("day", "date"), ("sessions", "number")]),
    (8, "page_views", 4, "`acme-prod`.`web_events`.`page_views`",
     [("page", "text"), ("day", "date"), ("views", "number")]),
)

MEASURES = frozenset({"orders", "revenue", "signups", "impressions", "clicks", "spend", "conversions", "target",
                      "sessions", "views", "cost_per_conversion"})


def _field(model_id: int, model: str, name: str, kind: str) -> Json:
    measure = name in MEASURES
    return {
        "name": name, "label": name.replace("_", " ").title(), "type": kind, "syntax": "sql",
        "sql": f"{{{{ #SOURCE.{name} }}}}", "description": "", "custom_label": None, "field_format": None,
        "aggregation_type": "sum" if measure else None, "transform_type": None,
        "is_custom": False, "is_custom_measure": False, "model": {"id": str(model_id), "name": model},
    }


def _data_models() -> list[Json]:
    models = []
    for model_id, (name, table, fields) in _MODELS.items():
        all_fields = [_field(model_id, name, f, k) for f, k in fields]
        models.append({
            "id": model_id, "name": name, "label": name.replace("_", " ").title(), "data_source_id": 1,
            "category_id": 3, "table_name": table, "sql": f"select * from {table}", "metadata": {},
            "fields": all_fields, "dimensions": [f for f in all_fields if f["name"] not in MEASURES],
            "measures": [f for f in all_fields if f["name"] in MEASURES], "params": [],
        })
    for model_id, name, source_id, sql, built_on, fields in _QUERY_MODELS:
        models.append(_model(model_id, name, source_id, None, sql, fields, built_on))
    for model_id, name, source_id, table, fields in _WAREHOUSE_MODELS:
        models.append(_model(model_id, name, source_id, table, None, fields, []))
    return models


def _model(model_id: int, name: str, source_id: int, table: str | None, sql: str | None,
           fields: list[tuple[str, str]], built_on: list[int]) -> Json:
    """A data model; ``_built_on``: the models a query model's SQL uses (its dependants' ``data_model_ids``)."""
    all_fields = [_field(model_id, name, f, k) for f, k in fields]
    return {
        "id": model_id, "name": name, "label": name.replace("_", " ").title(), "data_source_id": source_id,
        "category_id": 3, "table_name": table, "sql": sql, "metadata": {}, "fields": all_fields,
        "dimensions": [f for f in all_fields if f["name"] not in MEASURES],
        "measures": [f for f in all_fields if f["name"] in MEASURES], "params": [], "_built_on": built_on,
    }


def _data_sets() -> list[Json]:
    def data_set(ds_id: int, name: str, models: list[int], from_aml: bool, description: str, source: int = 1) -> Json:
        return {
            "id": ds_id, "uname": name, "name": name, "label": name.replace("_", " ").title(),
            "description": description, "owner_id": 4, "owner": "Tom Okafor", "tenant_id": 1,
            "data_source_id": source, "category_id": 3, "project_id": 1 if from_aml else None, "from_aml": from_aml,
            "permission": {"can_crud": True, "can_read": True}, "model_ids": models,
            "related_joins": [], "join_configs": [],
        }

    sales = data_set(1, "sales", [1, 2, 4], True, "Orders, customers and targets (defined in AML)")
    sales["related_joins"] = [{
        "id": 1, "name": "orders_customers", "link_type": "many_to_one", "join_on": "orders.customer_id = customers.id",
        "data_source_id": 1, "source_model_id": 1, "dest_model_id": 2, "source_model": {"id": 1, "name": "orders"},
        "dest_model": {"id": 2, "name": "customers"}, "missing_source_fields": [], "missing_dest_fields": [],
    }]
    sales["join_configs"] = [{
        "id": 1, "data_set_id": 1, "join_id": 1, "active": True, "direction": "two_way",
        "join": {"name": "orders_customers", "source_model": "orders", "dest_model": "customers",
                 "link_type": "many_to_one", "join_on": "orders.customer_id = customers.id"},
    }]
    return [sales, data_set(2, "marketing", [3], False, "Campaign performance"),
            data_set(3, "finance_legacy", [4], False, "Legacy finance reporting"),
            data_set(4, "regional_sales", [5], True, "Orders by region (a query model on orders)"),
            data_set(5, "campaign_roi", [6], True, "Cost per conversion (a query model reading campaigns)"),
            data_set(6, "web_sessions", [7], True, "Sessions (Snowflake)", source=3),
            data_set(7, "page_views", [8], True, "Page views (BigQuery)", source=4)]


# report id, title, data set, model, widget id, viz type
_REPORTS = (
    (11, "Revenue by region and month", 1, 1, "101", "data_table"),
    (12, "Orders by channel", 1, 1, "102", "column_chart"),
    (21, "Campaign performance", 2, 3, "201", "data_table"),
    (22, "Signups by country", 1, 2, "202", "bar_chart"),
    (31, "Revenue vs target by quarter", 1, 4, "301", "combination_chart"),
    (41, "Revenue by region", 4, 5, "401", "bar_chart"),
    (51, "Cost per conversion by channel", 5, 6, "501", "data_table"),
)


def _reports() -> list[Json]:
    reports = []
    for report_id, title, ds_id, model_id, widget_id, viz in _REPORTS:
        columns = seed_tables()[widget_id].columns
        reports.append({
            "id": report_id, "title": title, "data_set_id": ds_id, "data_source_id": 1, "owner_id": 4,
            "category_id": 3, "is_adhoc": False, "personal_item": None,
            "viz_setting": {
                "viz_type": viz, "source_id": ds_id, "adhoc_fields": [], "settings": {}, "format": {},
                "filters": [], "hashid": f"vs{report_id:04d}", "custom_chart_id": None,
                "fields": {"table_fields": [
                    {"path_hash": {"field_name": c, "model_id": model_id},
                     "aggregation": "sum" if c in MEASURES else None, "format": {}} for c in columns
                ]},
            },
        })
    return reports


# dashboard id, title, widget ids, filters: (filter id, label, type, [(widget, column, model)], options)
_DASHBOARDS: tuple[tuple[int, str, tuple[str, ...], tuple[Any, ...]], ...] = (
    (1, "Sales overview", ("101", "102"), (
        (1, "Region", "string", (("101", "region", 1), ("102", "region", 1)), REGIONS),
        (2, "Channel", "string", (("102", "channel", 1),),
         ("Web", "Mobile app", "Marketplace", "Retail partner", "Phone")),
    )),
    (2, "Marketing performance", ("201", "202"), (
        (3, "Channel", "string", (("201", "channel", 3),), ("Search", "Social", "Display", "Email")),
        (4, "Region", "string", (("201", "region", 3), ("202", "region", 2)), REGIONS),
    )),
    (3, "Executive summary", ("301",), (
        (5, "Region", "string", (("301", "region", 4),), REGIONS),
        (6, "Revenue at least", "number", (("301", "revenue", 4),), ()),
    )),
    (4, "Regional sales", ("401",), ()),
    (5, "Campaign ROI", ("501",), ()),
)


def _dashboards() -> tuple[dict[int, Json], dict[str, Json]]:
    dashboards: dict[int, Json] = {}
    widgets: dict[str, Json] = {}
    report_of = {w: (r, title) for r, title, _, _, w, _ in _REPORTS}
    for order, (dash_id, title, widget_ids, filters) in enumerate(_DASHBOARDS):
        dashboards[dash_id] = {
            "id": dash_id, "title": title, "owner_id": 4, "category_id": 3, "version": 4 if dash_id == 3 else 3,
            "_last_viewed_at": "2025-01-06T10:00:00Z" if dash_id == 3 else "2025-05-12T08:30:00Z",
            "hash_code": f"embed{dash_id:03d}x7k2", "secret_key": f"sk_embed_{dash_id:03d}_3f9a2c",
            "widget_ids": list(widget_ids),
            "_project_id": 1 if dash_id == 3 else None,  # the canvas dashboard is defined in the AML project
            "dynamic_filters": [_filter(f, i, order) for i, f in enumerate(filters)],
        }
        for widget_id in widget_ids:
            report_id, report_title = report_of[widget_id]
            widgets[widget_id] = {
                "id": widget_id, "dashboard_id": dash_id, "source_id": str(report_id), "source_type": "QueryReport",
                "source_title": report_title,
                "permissions": {"can_explore": True, "can_export": True, "can_export_data": True},
            }
    return dashboards, widgets


def _filter(spec: tuple[Any, ...], order: int, dash_order: int) -> Json:
    filter_id, label, kind, mappings, options = spec
    return {
        "id": filter_id, "order": order, "uname": label.lower().replace(" ", "_"),
        "permissions": {"read": True, "crud": True, "use": True},
        "drillthrough_enabled": False,
        "definition": {
            "id": filter_id, "label": label, "filter_type": kind, "is_sharable": True, "constraints": {},
            "input_type": "multi_operator" if options else "single_select",
            "default_condition": {"operator": "is" if kind == "string" else "none", "values": []},
            "filter_source": {"source_type": "ManualFilterSource", "manual_options": [{"value": v} for v in options]},
        },
        "mappings": [
            {"id": 10 * filter_id + n, "viz_conditionable_id": int(widget), "viz_conditionable_type": "DashboardWidget",
             "field_path": {"field_name": column, "model_id": model, "data_set_id": 1 if model != 3 else 2,
                            "is_metric": column in MEASURES},
             "aggregation": None, "permissions": {"crud": True}}
            for n, (widget, column, model) in enumerate(mappings)
        ],
    }


def _schedules() -> list[Json]:
    options = {"preview": True, "include_header": True, "include_report_link": True, "include_filters": True,
               "dont_send_when_empty": False, "body_text": None, "attachment_formats": ["pdf"]}
    return [
        {"id": 1, "source_type": "Dashboard", "source_id": 1, "schedule": {"repeat": "0 7 * * 1-5", "paused": False},
         "dynamic_filter_presets": [], "owner_id": 1, "created_at": STAMP,
         "dest": {"type": "EmailDest", "title": "Sales overview {{$today}}",
                  "recipients": ["sales-leads@example.com", "maya.chen@example.com"], "options": options}},
        {"id": 2, "source_type": "QueryReport", "source_id": 21, "schedule": {"repeat": "0 9 * * 1", "paused": True},
         "dynamic_filter_presets": [{"id": 1, "dynamic_filter_id": 3, "public_hidden": False,
                                     "preset_condition": {"operator": "is", "values": ["Search"]}}],
         "owner_id": 5, "created_at": STAMP,
         "dest": {"type": "SlackDest", "title": "Weekly campaign performance",
                  "slack_channels": [{"id": "C024BE91L", "name": "marketing"}], "options": {"body_text": None}}},
    ]


def _alerts() -> list[Json]:
    return [
        {"id": 1, "title": "EU revenue below 20k", "source_type": "DashboardWidget", "source_id": 101,
         "schedule": {"repeat": "0 8 * * *", "paused": False}, "owner_id": 4, "created_at": STAMP,
         "dynamic_filter_presets": [{"id": 2, "dynamic_filter_id": 1, "public_hidden": False,
                                     "preset_condition": {"operator": "is", "values": ["EU"]}}],
         "viz_conditions": [{"id": 1, "field_path": {"field_name": "revenue", "model_id": 1},
                             "aggregation": "sum", "transformation": None,
                             "condition": {"operator": "less_than", "values": [20000]}}],
         "dest": {"type": "EmailDest", "title": "Revenue alert {{$today}}", "recipients": ["tom.okafor@example.com"],
                  "options": {"body_text": "EU revenue fell below 20k."}}},
        {"id": 2, "title": "Campaign spend spike", "source_type": "DashboardWidget", "source_id": 201,
         "schedule": {"repeat": "0 * * * *", "paused": False}, "owner_id": 5, "created_at": STAMP,
         "dynamic_filter_presets": [],
         "viz_conditions": [{"id": 2, "field_path": {"field_name": "spend", "model_id": 3},
                             "aggregation": "sum", "transformation": None,
                             "condition": {"operator": "greater_than", "values": [50000]}}],
         "dest": {"type": "SlackDest", "title": "Spend alert",
                  "slack_channels": [{"id": "C024BE91L", "name": "marketing"}], "options": {"body_text": None}}},
    ]


def _attributes() -> list[Json]:
    def attribute(attr_id: int, name: str, label: str, description: str, system: bool) -> Json:
        return {"id": attr_id, "name": name, "attribute_type": "string", "label": label,
                "description": description, "is_system_attribute": system}

    return [attribute(1, "h_email", "Email", "The user's e-mail address", True),
            attribute(2, "h_name", "Name", "The user's name", True),
            attribute(3, "region", "Region", "Sales regions the user may see", False),
            attribute(4, "department", "Department", "The user's department", False)]


def _entries() -> dict[tuple[str, int], dict[int, Json]]:
    entries: dict[tuple[str, int], dict[int, Json]] = {}
    seeded: list[Json] = [
        {"id": 1, "user_attribute_id": 3, "input_type": "manual", "values": ["EU"], "subject_type": "User",
         "subject_id": 4},
        {"id": 2, "user_attribute_id": 3, "input_type": "manual", "values": ["US", "LATAM"], "subject_type": "Group",
         "subject_id": 2},
        {"id": 3, "user_attribute_id": 4, "input_type": "manual", "values": ["Marketing"], "subject_type": "User",
         "subject_id": 5},
    ]
    for entry in seeded:
        entries.setdefault((entry["subject_type"], entry["subject_id"]), {})[entry["user_attribute_id"]] = entry
    return entries
