"""Every operation of the API, written once.

The sync hook, the async client of the triggers, the emulator's router and the docs all read
this table: an operation's method, path, body wrapper, response key, query options and retry
class live here and nowhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

USER_ROLES = ("user", "explorer", "analyst", "admin", "growth_admin", "it_admin")
USER_STATUSES = ("active", "deleted", "pending")
SCHEDULE_DEST_TYPES = ("EmailDest", "SlackDest", "Adls2Dest", "SftpDest")
ALERT_DEST_TYPES = ("EmailDest", "SlackDest")
EXPORT_OUTPUTS = ("csv", "xlsx", "pdf")
DEPENDANT_TYPES = ("DataSource", "DataModel", "DataSet")
SUBJECT_TYPES = ("User", "Group")
BASIC_SORTS = ("natural", "id_asc", "id_desc")
USER_SORTS = (*BASIC_SORTS, "name_asc", "name_desc", "initials_asc", "initials_desc")

PENDING_JOB_STATUSES = frozenset({"created", "queued", "running"})
"""A job in any other status is final; only ``success`` is success."""


@dataclass(frozen=True)
class QueryParam:
    """One query option: its wire name, Python type and allowed values."""

    name: str
    kind: type = str
    choices: tuple[str, ...] = ()
    required: bool = False


@dataclass(frozen=True)
class Operation:
    """One API operation.

    ``wrapper`` is the key the request body is wrapped in; ``result_key`` the key the answer
    is unwrapped from (None: the whole answer). ``items_key`` marks a list operation and names
    the array of each page. ``creates`` marks a call that must not be re-sent once it may have
    reached the service (a duplicate resource would be a defect).

    A path parameter named ``id`` or ``*_id`` is a positive integer (the document: "Path
    parameter id is an integer unless stated") unless ``text_params`` names it (the document
    allows a string there).
    """

    name: str
    method: str
    path: str
    result_key: str | None = None
    wrapper: str | None = None
    query: tuple[QueryParam, ...] = ()
    items_key: str | None = None
    creates: bool = False
    starts_job: bool = False
    status: int = 200
    summary: str = ""
    text_params: tuple[str, ...] = ()
    path_params: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "path_params", tuple(re.findall(r"{(\w+)}", self.path)))

    @property
    def endpoint(self) -> str:
        """The rate-limit bucket of the service: one per method and path template."""
        return f"{self.method} {self.path}"

    def is_integer_param(self, name: str) -> bool:
        """Whether the path parameter ``name`` takes a positive integer only."""
        return (name == "id" or name.endswith("_id")) and name not in self.text_params

    @property
    def paginated(self) -> bool:
        return self.items_key is not None

    def query_param(self, name: str) -> QueryParam | None:
        return next((p for p in self.query if p.name == name), None)


def _q(name: str, kind: type = str, choices: tuple[str, ...] = (), required: bool = False) -> QueryParam:
    return QueryParam(name, kind, choices, required)


PAGE = (_q("before"), _q("after"), _q("limit", int))
INCLUDE_USERS = _q("include_users", bool)
SUBJECT = (_q("subject_type", choices=SUBJECT_TYPES, required=True), _q("subject_id", int, required=True))

_OPERATIONS = (
    # Users and authorization
    Operation("get_current_user", "GET", "/users/me", "user", summary="The key owner (authorization check)."),
    Operation(
        "list_users", "GET", "/users", items_key="users",
        query=(*PAGE, _q("search_term"), _q("status", choices=USER_STATUSES), _q("role", choices=USER_ROLES),
               _q("has_authentication_token", bool), _q("exclude_deleted", bool), _q("sort", choices=USER_SORTS)),
    ),
    Operation("update_user", "PUT", "/users/{id}", None, wrapper="user", summary="Answers the User unwrapped."),
    Operation("delete_user", "DELETE", "/users/{id}", summary="Soft delete; answers {message}."),
    Operation("invite_users", "POST", "/users/invite", "job", creates=True, starts_job=True),
    Operation("is_email_used", "GET", "/users/check_holistics_user", "is_already_user",
              query=(_q("email", required=True),)),
    # Jobs
    Operation("get_job", "GET", "/jobs/{id}", "job"),
    Operation("get_job_result", "GET", "/jobs/{id}/result"),
    Operation("get_job_logs", "GET", "/jobs/{id}/logs", "job_logs"),
    # Exports
    Operation("submit_widget_export", "POST", "/dashboard_widgets/{id}/submit_export", "job", starts_job=True,
              text_params=("id",)),
    Operation("download_export", "GET", "/exports/download", query=(_q("job_id", int, required=True),)),
    # Dashboards and widgets
    Operation("get_dashboard", "GET", "/dashboards/{id}", "dashboard"),
    Operation("list_dashboards", "GET", "/dashboards", items_key="dashboards",
              query=(*PAGE, _q("sort", choices=BASIC_SORTS), _q("include_embed_info", bool))),
    Operation("build_dashboard_url", "POST", "/dashboards/{id}/build_url"),
    Operation("preload_dashboard", "POST", "/dashboards/{id}/submit_preload", "job", starts_job=True),
    Operation("get_dashboard_widget", "GET", "/dashboard_widgets/{id}", "dashboard_widget",
              query=(_q("include_dashboard", bool), _q("include_report", bool), _q("include_url", bool))),
    # Data schedules
    Operation("create_data_schedule", "POST", "/data_schedules", "data_schedule", wrapper="data_schedule",
              creates=True, status=201),
    Operation("list_data_schedules", "GET", "/data_schedules", items_key="data_schedules",
              query=(*PAGE, _q("dest_type", choices=SCHEDULE_DEST_TYPES),
                     _q("source_type", choices=("QueryReport", "Dashboard")), _q("source_id", int))),
    Operation("get_data_schedule", "GET", "/data_schedules/{id}", "data_schedule"),
    Operation("update_data_schedule", "PUT", "/data_schedules/{id}", "data_schedule", wrapper="data_schedule"),
    Operation("delete_data_schedule", "DELETE", "/data_schedules/{id}"),
    Operation("execute_data_schedule", "POST", "/data_schedules/{id}/submit_execute", "job", starts_job=True),
    # Data alerts
    Operation("create_data_alert", "POST", "/data_alerts", "data_alert", wrapper="data_alert",
              creates=True, status=201),
    Operation("list_data_alerts", "GET", "/data_alerts", items_key="data_alerts",
              query=(*PAGE, _q("search_term"), _q("dest_type", choices=ALERT_DEST_TYPES), _q("source_id"),
                     _q("source_type", choices=("DashboardWidget", "VizBlock")))),
    Operation("get_data_alert", "GET", "/data_alerts/{id}", "data_alert"),
    Operation("update_data_alert", "PUT", "/data_alerts/{id}", "data_alert", wrapper="data_alert"),
    Operation("delete_data_alert", "DELETE", "/data_alerts/{id}"),
    Operation("execute_data_alert", "POST", "/data_alerts/{id}/submit_execute", "job", starts_job=True),
    Operation("test_data_alert", "POST", "/data_alerts/submit_execute", "job", wrapper="test_data_alert",
              starts_job=True),
    # Dependencies
    Operation("get_dependants", "GET", "/dependencies/downstream_dependencies", "dependants",
              query=(_q("id", int, required=True), _q("type", choices=DEPENDANT_TYPES, required=True))),
    # Groups
    Operation("create_group", "POST", "/groups", "group", wrapper="group", creates=True, status=201),
    Operation("list_groups", "GET", "/groups", items_key="groups",
              query=(*PAGE, _q("sort", choices=BASIC_SORTS), INCLUDE_USERS)),
    Operation("get_group", "GET", "/groups/{id}", "group", query=(INCLUDE_USERS,)),
    Operation("update_group", "PUT", "/groups/{id}", "group", wrapper="group"),
    # Embedding
    Operation("create_shortened_embed_token", "POST", "/embed/{hashcode}/shorten_token", "shortened_token",
              creates=True, status=201),
    # Data sources, sets, models, reports
    Operation("get_data_source", "GET", "/data_sources/{id}", "data_source"),
    Operation("update_data_source", "PUT", "/data_sources/{id}", "data_source", wrapper="data_source"),
    Operation("bust_data_source_cache", "POST", "/data_sources/{id}/bust_exploration_cache", "job",
              starts_job=True),
    Operation("get_data_set", "GET", "/data_sets/{id}", "data_set",
              query=(_q("include_models", bool), _q("include_reports", bool))),
    Operation("delete_data_set", "DELETE", "/data_sets/{id}"),
    Operation("list_data_models", "GET", "/data_models", items_key="data_models",
              query=(_q("project_id", int, required=True), _q("branch_name"), _q("commit_oid"))),
    Operation("get_query_report", "GET", "/query_reports/{id}", "query_report",
              query=(_q("include_data_set", bool),)),
    # User attributes
    Operation("create_user_attribute", "POST", "/user_attributes", "user_attribute", wrapper="user_attribute",
              creates=True),
    Operation("list_user_attributes", "GET", "/user_attributes", items_key="user_attributes", query=PAGE),
    Operation("update_user_attribute", "PUT", "/user_attributes/{id}", "user_attribute",
              wrapper="user_attribute"),
    Operation("list_user_attribute_entries", "GET", "/user_attribute_entries",
              items_key="user_attribute_entries", query=(*PAGE, *SUBJECT)),
    Operation("compute_user_attribute_values", "GET", "/user_attribute_entries/computed_values",
              "user_attribute_values", query=SUBJECT),
    Operation("upsert_user_attribute_entries", "PUT", "/user_attribute_entries/upsert", "user_attribute_entries",
              wrapper="user_attribute_entries"),
    # AML projects
    Operation("publish_aml_project", "POST", "/aml_studio/projects/submit_publish", "job", starts_job=True),
    Operation("validate_aml_project", "POST", "/aml_studio/projects/submit_validate", "job", starts_job=True),
)

OPERATIONS: dict[str, Operation] = {op.name: op for op in _OPERATIONS}

MAX_PAGE_SIZE = 100
MAX_UPSERT_ENTRIES = 100


def operation(name: str) -> Operation:
    return OPERATIONS[name]


_ROUTES: list[tuple[str, re.Pattern[str], Operation]] = [
    (op.method, re.compile("^" + re.sub(r"{(\w+)}", r"(?P<\1>[^/]+)", op.path) + "$"), op)
    for op in sorted(_OPERATIONS, key=lambda op: len(op.path_params))  # literal paths win over templates
]


def match_route(method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
    """The operation a request addresses, and its path parameters (for servers such as the emulator)."""
    for route_method, pattern, op in _ROUTES:
        if route_method == method and (found := pattern.match(path)):
            return op, found.groupdict()
    return None


def encode_query_value(value: Any) -> str:
    """A query value as the service reads it: booleans as ``true``/``false``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
