"""Every operation of the API, written once.

The sync hook, the async client of the triggers, the emulator's router and the docs all read
this table: an operation's method, path, body wrapper, response key, query options and retry
class live here and nowhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analytics_provider.api.wire.choices import (
    ALERT_DEST_TYPES,
    BASIC_SORTS,
    CREATOR_ROLES,
    DASHBOARD_CATEGORIES,  # noqa: F401 (the hook and the emulator read the choices here too)
    DEPENDANT_TYPES,
    EXPORT_OUTPUTS,  # noqa: F401 (the hook and the emulator read the choices here too)
    GITHUB_EVENTS,
    GITLAB_EVENTS,
    MANIFEST_FIELD,  # noqa: F401 (the hook and the emulator read the choices here too)
    MAX_MANIFEST_BYTES,
    MAX_MANIFEST_FILES,
    PERMISSION_ACTIONS,
    SCHEDULE_DEST_TYPES,
    SCHEDULE_SORTS,
    SUBJECT_TYPES,
    TAG_OBJECT_TYPES,  # noqa: F401 (the hook and the emulator read the choices here too)
    USER_ROLES,
    USER_SORTS,
    USER_STATUSES,
)

MAX_JOB_IDS = 100
"""The most job ids one List Jobs request takes (the vendor's limit)."""


@dataclass(frozen=True)
class QueryParam:
    """One query option (or header): its wire name, Python type and allowed values.

    ``kind`` float means any number; ``many`` an array, written ``name[]=a&name[]=b``.
    ``argument`` is the hook method's keyword when it is not the wire name (``id`` and ``type``
    would shadow Python's builtins).
    """

    name: str
    kind: type = str
    choices: tuple[str, ...] = ()
    required: bool = False
    many: bool = False
    argument: str = ""
    max_items: int | None = None  # an array's longest length the service takes

    @property
    def arg(self) -> str:
        """The hook method's keyword for this option."""
        return self.argument or self.name


@dataclass(frozen=True)
class Operation:
    """One API operation.

    ``wrapper`` is the key the request body is wrapped in; ``result_key`` the key the answer
    is unwrapped from (None: the whole answer). ``items_key`` marks a list operation and names
    the array of each page. ``creates`` marks a call that must not be re-sent once it may have
    reached the service (a duplicate resource, e-mail or event would be a defect).
    ``body_type`` is the request body's media type; ``headers`` the headers the call must
    carry; ``keyless`` a call the service serves without an API key (webhooks).

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
    body_type: str = "application/json"
    headers: tuple[QueryParam, ...] = ()
    keyless: bool = False
    path_params: tuple[str, ...] = field(init=False)
    endpoint: str = field(init=False)
    """The rate-limit bucket of the service: one per method and path template."""
    paginated: bool = field(init=False)
    query_names: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:  # what every call reads, worked out once
        object.__setattr__(self, "path_params", tuple(re.findall(r"{(\w+)}", self.path)))
        object.__setattr__(self, "endpoint", f"{self.method} {self.path}")
        object.__setattr__(self, "paginated", self.items_key is not None)
        object.__setattr__(self, "query_names", frozenset(p.name for p in self.query))

    def is_integer_param(self, name: str) -> bool:
        """Whether the path parameter ``name`` takes a positive integer only."""
        return (name == "id" or name.endswith("_id")) and name not in self.text_params

    def query_param(self, name: str) -> QueryParam | None:
        return next((p for p in self.query if p.name == name), None)


def _q(
    name: str, kind: type = str, choices: tuple[str, ...] = (), required: bool = False, many: bool = False,
    argument: str = "", max_items: int | None = None,
) -> QueryParam:
    return QueryParam(name, kind, choices, required, many, argument, max_items)


PAGE = (_q("before"), _q("after"), _q("limit", int))
INCLUDE_USERS = _q("include_users", bool)
JOB_DETAILS = (_q("include_data_source_stats", bool), _q("include_source", bool))
SIGNATURE = _q("X-Hub-Signature-256", required=True)
SUBJECT = (_q("subject_type", choices=SUBJECT_TYPES, required=True), _q("subject_id", float, required=True))

_OPERATIONS = (
    # Users and authorization
    Operation("get_current_user", "GET", "/users/me", "user", summary="The key owner (authorization check)."),
    Operation(
        "list_users", "GET", "/users", items_key="users",
        query=(*PAGE, _q("search_term"), _q("status", choices=USER_STATUSES),
               _q("statuses", choices=USER_STATUSES, many=True), _q("ids", int, many=True),
               _q("role", choices=USER_ROLES), _q("has_authentication_token", bool), _q("exclude_deleted", bool),
               _q("sort", choices=USER_SORTS)),
    ),
    Operation("update_user", "PUT", "/users/{id}", None, wrapper="user", summary="Answers the User unwrapped."),
    Operation("delete_user", "DELETE", "/users/{id}", summary="Soft delete; answers {message}."),
    Operation("invite_users", "POST", "/users/invite", "job", creates=True, starts_job=True),
    Operation("is_email_used", "GET", "/users/check_holistics_user", "is_already_user", query=(_q("email"),)),
    Operation("restore_user", "POST", "/users/{id}/restore", summary="Undo a soft delete; answers {message}."),
    Operation("resend_user_invite", "POST", "/users/{id}/resend_invite", "job", creates=True, starts_job=True,
              summary="E-mails a pending user's invitation again."),
    Operation("revoke_user_api_key", "POST", "/users/{id}/revoke_authentication_token",
              summary="The user's API key stops working; answers {message}."),
    # Jobs
    Operation("get_job", "GET", "/jobs/{id}", "job", query=JOB_DETAILS),
    Operation("list_jobs", "GET", "/jobs", "jobs",
              query=(_q("ids", int, required=True, many=True, argument="job_ids", max_items=MAX_JOB_IDS),
                     *JOB_DETAILS)),
    Operation("list_job_queues", "GET", "/job_queues", "job_queues"),
    Operation("get_job_result", "GET", "/jobs/{id}/result"),
    Operation("get_job_logs", "GET", "/jobs/{id}/logs", "job_logs"),
    # Exports
    Operation("submit_widget_export", "POST", "/dashboard_widgets/{id}/submit_export", "job", starts_job=True,
              text_params=("id",)),
    Operation("download_export", "GET", "/exports/download", query=(_q("job_id", int, required=True),)),
    # Dashboards and widgets
    Operation("get_dashboard", "GET", "/dashboards/{id}", "dashboard"),
    Operation("delete_dashboard", "DELETE", "/dashboards/{id}"),
    Operation("list_dashboards_metadata", "GET", "/dashboards/list_metadata", "dashboards_metadata",
              query=(_q("version", int, many=True), _q("permission_action", choices=PERMISSION_ACTIONS))),
    Operation("clone_canvas_dashboard", "POST", "/dashboards/{id}/clone_canvas_dashboard", "job", creates=True,
              starts_job=True),
    Operation("list_dashboards", "GET", "/dashboards", items_key="dashboards",
              query=(*PAGE, _q("sort", choices=BASIC_SORTS), _q("include_embed_info", bool))),
    Operation("build_dashboard_url", "POST", "/dashboards/{id}/build_url"),
    Operation("preload_dashboard", "POST", "/dashboards/{id}/submit_preload", "job", starts_job=True),
    Operation("get_dashboard_widget", "GET", "/dashboard_widgets/{id}", "dashboard_widget",
              query=(_q("include_dashboard", bool), _q("include_report", bool), _q("include_url", bool))),
    Operation("delete_dashboard_widget", "DELETE", "/dashboard_widgets/{id}"),
    # Data schedules
    Operation("create_data_schedule", "POST", "/data_schedules", "data_schedule", wrapper="data_schedule",
              creates=True, status=201),
    Operation("list_data_schedules", "GET", "/data_schedules", items_key="data_schedules",
              query=(*PAGE, _q("page", int), _q("search_term"), _q("sort", choices=SCHEDULE_SORTS),
                     _q("dest_type", choices=SCHEDULE_DEST_TYPES),
                     _q("source_type", choices=("QueryReport", "Dashboard")),
                     _q("source_id", int), _q("creator_roles", choices=CREATOR_ROLES, many=True))),
    Operation("get_data_schedule", "GET", "/data_schedules/{id}", "data_schedule"),
    Operation("update_data_schedule", "PUT", "/data_schedules/{id}", "data_schedule", wrapper="data_schedule"),
    Operation("delete_data_schedule", "DELETE", "/data_schedules/{id}"),
    Operation("execute_data_schedule", "POST", "/data_schedules/{id}/submit_execute", "job", starts_job=True),
    Operation("test_data_schedule", "POST", "/data_schedules/submit_execute", "job", wrapper="test_data_schedule",
              starts_job=True, summary="Run an unsaved schedule once."),
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
              query=(_q("id", int, required=True, argument="object_id"),
                     _q("type", choices=DEPENDANT_TYPES, required=True, argument="object_type"))),
    # Groups
    Operation("create_group", "POST", "/groups", "group", wrapper="group", creates=True, status=201),
    Operation("list_groups", "GET", "/groups", items_key="groups",
              query=(*PAGE, _q("sort", choices=BASIC_SORTS), INCLUDE_USERS)),
    Operation("get_group", "GET", "/groups/{id}", "group", query=(INCLUDE_USERS,)),
    Operation("update_group", "PUT", "/groups/{id}", "group", wrapper="group"),
    Operation("delete_group", "DELETE", "/groups/{id}"),
    Operation("add_user_to_group", "POST", "/groups/{id}/add_user/{user_id}"),
    Operation("remove_user_from_group", "POST", "/groups/{id}/remove_user/{user_id}"),
    # Shareable links
    Operation("create_shareable_link", "POST", "/shareable_links", "shareable_link", wrapper="shareable_link",
              creates=True, status=201),
    Operation("list_shareable_links", "GET", "/shareable_links", items_key="shareable_links",
              query=(*PAGE, _q("sort", choices=BASIC_SORTS), _q("resource_type", choices=("Dashboard",)),
                     _q("resource_id", int))),
    Operation("get_shareable_link", "GET", "/shareable_links/{id}", "shareable_link"),
    Operation("update_shareable_link", "PUT", "/shareable_links/{id}", "shareable_link", wrapper="shareable_link"),
    Operation("delete_shareable_link", "DELETE", "/shareable_links/{id}"),
    # Embedding
    Operation("create_shortened_embed_token", "POST", "/embed/{hashcode}/shorten_token", "shortened_token",
              creates=True, status=201),
    # Data sources, sets, models, reports
    Operation("get_data_source", "GET", "/data_sources/{id}", "data_source"),
    Operation("update_data_source", "PUT", "/data_sources/{id}", "data_source", wrapper="data_source"),
    Operation("delete_data_source", "DELETE", "/data_sources/{id}"),
    Operation("bust_data_source_cache", "POST", "/data_sources/{id}/bust_exploration_cache", "job",
              starts_job=True),
    Operation("upload_dbt_manifests", "POST", "/data_sources/upload_multiple_dbt_manifests", "job", creates=True,
              starts_job=True, body_type="multipart/form-data",
              summary=f"Streams up to {MAX_MANIFEST_FILES} manifest.json files, {MAX_MANIFEST_BYTES >> 20} MB each."),
    Operation("get_data_set", "GET", "/data_sets/{id}", "data_set",
              query=(_q("include_models", bool), _q("include_reports", bool))),
    Operation("delete_data_set", "DELETE", "/data_sets/{id}"),
    Operation("submit_data_set_query", "POST", "/data_sets/{id}/submit_query", starts_job=True,
              summary="The rows at once when cached, else a job whose result holds them."),
    Operation("generate_data_set_sql", "POST", "/data_sets/{id}/generate_sql", "sql"),
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
    Operation("delete_user_attribute", "DELETE", "/user_attributes/{id}"),
    Operation("list_user_attribute_entries", "GET", "/user_attribute_entries",
              items_key="user_attribute_entries", query=(*PAGE, *SUBJECT)),
    Operation("compute_user_attribute_values", "GET", "/user_attribute_entries/computed_values",
              "user_attribute_values", query=SUBJECT),
    Operation("upsert_user_attribute_entries", "PUT", "/user_attribute_entries/upsert", "user_attribute_entries",
              wrapper="user_attribute_entries"),
    # AML projects
    Operation("publish_aml_project", "POST", "/aml_studio/projects/submit_publish", "job", starts_job=True),
    Operation("validate_aml_project", "POST", "/aml_studio/projects/submit_validate", "job", starts_job=True),
    Operation("validate_ddl", "POST", "/data_model_persistences/validate_ddl", "status",
              summary="Check a data model persistence's custom DDL; answers status success."),
    # Tags
    Operation("list_tags", "GET", "/tags", "tags"),
    Operation("add_object_tags", "POST", "/tags/submit_add_object_tags", "job", starts_job=True),
    Operation("remove_object_tags", "POST", "/tags/submit_remove_object_tags", "job", starts_job=True),
    Operation("recommend_archivable_objects", "GET", "/tags/recommend_archivable_objects", "archivable_objects",
              summary="AML dashboards and data sets not viewed for 30 days."),
    # AI
    Operation("list_ai_skills", "GET", "/ai/skills", "skills"),
    # Git webhooks: relayed events, authenticated by their signature instead of a key
    Operation("send_github_event", "POST", "/git_webhooks/github_event", "data", creates=True, keyless=True,
              headers=(_q("X-GitHub-Event", choices=GITHUB_EVENTS, required=True),
                       _q("X-GitHub-Hook-ID", required=True), SIGNATURE)),
    Operation("send_gitlab_event", "POST", "/git_webhooks/gitlab_event", "data", creates=True, keyless=True,
              headers=(_q("X-Gitlab-Event", choices=GITLAB_EVENTS, required=True),
                       _q("X-Gitlab-Token", required=True))),
    Operation("send_github_app_event", "POST", "/git_webhooks/github_app_event", creates=True, keyless=True,
              headers=(_q("X-GitHub-Event", required=True), SIGNATURE)),
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

