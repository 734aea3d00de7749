"""A large, consistent workspace for tests and benchmarks: data models with table names in the AML
project, data sets that use them, reports whose fields name their data set's models, dashboards
whose widgets show those reports. The dependants the emulator answers are derived from the same
records, so every read agrees with every other.

Deterministic: the same sizes build the same workspace. Table ``i`` of the models is
``schema_<i % 20>.table_<i>`` (:func:`table_of`), so a test or benchmark can name tables it knows
are read.
"""

from __future__ import annotations

from typing import Any

from analytics_provider.testing.emulator.state import Json, State

SCHEMAS = 20
WIDGETS_PER_DASHBOARD = 4


def table_of(index: int) -> str:
    """The warehouse table of the ``index``-th model built (0-based)."""
    return f"schema_{index % SCHEMAS}.table_{index:05d}"


def build_workspace(
    state: State, *, dashboards: int = 5000, widgets: int = 20000, models: int = 1000, data_sets: int = 300,
    data_sources: int = 3, models_per_data_set: int = 10, project_id: int = 1,
) -> dict[str, Any]:
    """Add the workspace to ``state`` under new ids; returns its ids and sizes."""
    for name, value in (("dashboards", dashboards), ("widgets", widgets), ("models", models),
                        ("data_sets", data_sets), ("data_sources", data_sources)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if widgets < dashboards:
        raise ValueError("widgets must be at least dashboards (each dashboard shows one or more)")
    source_ids = [state.new_id("DataSource") for _ in range(data_sources)]
    for n, source_id in enumerate(source_ids):
        state.data_sources[source_id] = {
            "id": source_id, "name": f"Warehouse {n + 1}", "dbtype": "postgresql", "is_sample": False,
            "is_default": False, "settings": {"require_ssl": True, "query_timeout": 300, "enable_schema_info": True,
                                              "use_connection_str": False, "timezone": "Etc/UTC"}}
    model_ids = []
    for index in range(models):
        model_id = state.new_id("DataModel")
        name = f"model_{index:05d}"
        fields = [_field(model_id, name, f, k) for f, k in (("id", "number"), ("day", "date"), ("amount", "number"))]
        state.data_models[model_id] = {
            "id": model_id, "name": name, "label": name.replace("_", " ").title(),
            "data_source_id": source_ids[index % data_sources], "category_id": 3, "table_name": table_of(index),
            "sql": None, "metadata": {}, "fields": fields, "dimensions": fields[:2], "measures": fields[2:],
            "params": []}
        model_ids.append(model_id)
    set_ids = []
    per_set = min(models_per_data_set, models)
    for index in range(data_sets):
        set_id = state.new_id("DataSet")
        # models of one data source, spread so that each model is in about data_sets * per_set / models sets
        source = source_ids[index % data_sources]
        own = [m for m in model_ids if state.data_models[m]["data_source_id"] == source]
        start = (index // data_sources) * per_set
        members = [own[(start + k) % len(own)] for k in range(min(per_set, len(own)))]
        state.data_sets[set_id] = {
            "id": set_id, "uname": f"data_set_{index:04d}", "name": f"data_set_{index:04d}",
            "label": f"Data set {index}", "description": "", "owner_id": 4, "owner": "Tom Okafor", "tenant_id": 1,
            "data_source_id": source, "category_id": 3, "project_id": project_id, "from_aml": True,
            "permission": {"can_crud": True, "can_read": True}, "model_ids": members, "related_joins": [],
            "join_configs": []}
        set_ids.append(set_id)
    board_ids = []
    widget_index = 0
    for index in range(dashboards):
        board_id = state.new_id("Dashboard")
        count = widgets // dashboards + (1 if index < widgets % dashboards else 0)
        widget_ids = []
        for _ in range(count):
            set_id = set_ids[widget_index % len(set_ids)]
            members = state.data_sets[set_id]["model_ids"]
            used = [members[widget_index % len(members)], members[(widget_index * 7 + 3) % len(members)]]
            report_id = state.new_id("QueryReport")
            state.query_reports[report_id] = {
                "id": report_id, "title": f"Report {widget_index}", "data_set_id": set_id,
                "data_source_id": state.data_sets[set_id]["data_source_id"], "owner_id": 4, "category_id": 3,
                "is_adhoc": False, "personal_item": None,
                "viz_setting": {"viz_type": "data_table", "source_id": set_id, "adhoc_fields": [], "settings": {},
                                "format": {}, "filters": [], "hashid": f"vs{report_id}", "custom_chart_id": None,
                                "fields": {"table_fields": [{"path_hash": {"field_name": "amount", "model_id": m},
                                                             "aggregation": "sum", "format": {}} for m in used]}}}
            widget_id = str(state.new_id("DashboardWidget"))
            state.widgets[widget_id] = {
                "id": widget_id, "dashboard_id": board_id, "source_id": str(report_id),
                "source_type": "QueryReport", "source_title": f"Report {widget_index}",
                "permissions": {"can_explore": True, "can_export": True, "can_export_data": True}}
            widget_ids.append(widget_id)
            widget_index += 1
        state.dashboards[board_id] = {
            "id": board_id, "title": f"Dashboard {index:05d}", "owner_id": 4, "category_id": 3, "version": 3,
            "_last_viewed_at": "2025-05-12T08:30:00Z", "_project_id": project_id,
            "hash_code": f"embed{board_id}", "secret_key": f"sk_embed_{board_id}", "widget_ids": widget_ids,
            "dynamic_filters": []}
        board_ids.append(board_id)
    return {"data_source_ids": source_ids, "data_model_ids": model_ids, "data_set_ids": set_ids,
            "dashboard_ids": board_ids, "widgets": widget_index}


def _field(model_id: int, model: str, name: str, kind: str) -> Json:
    return {"name": name, "label": name.title(), "type": kind, "syntax": "sql", "sql": f"{{{{ #SOURCE.{name} }}}}",
            "description": "", "custom_label": None, "field_format": None,
            "aggregation_type": "sum" if kind == "number" and name != "id" else None, "transform_type": None,
            "is_custom": False, "is_custom_measure": False, "model": {"id": str(model_id), "name": model}}
