"""Who may call what: user and explorer < analyst < admin, growth_admin and it_admin.

- everyone with a key: the current user, their own jobs, dashboards, widgets, reports, data sets,
  data models, dependants, exports (when ``enable_export_data``), preloads, dashboard URLs, and
  reading schedules and alerts;
- analysts and up: managing and running schedules and alerts, reading a data source, busting
  its cache, shortened embed tokens, deleting dashboards and widgets, cloning canvas dashboards,
  shareable links, tagging, archive recommendations, DDL validation;
- admins (admin, growth_admin, it_admin): users, groups, user attributes and their entries,
  updating or deleting a data source, deleting a data set, publishing and validating the AML
  project, uploading dbt manifests, job queues, and reading every user's jobs;
- everyone may revoke their own API key (admins anyone's); the git webhooks need no key.
"""

from __future__ import annotations

ROLE_RANK = {"user": 0, "explorer": 0, "analyst": 1, "admin": 2, "growth_admin": 2, "it_admin": 2}
ROLE_ALIASES = {"viewer": "user"}

ANALYST_OPERATIONS = frozenset({
    "create_data_schedule", "update_data_schedule", "delete_data_schedule", "execute_data_schedule",
    "create_data_alert", "update_data_alert", "delete_data_alert", "execute_data_alert", "test_data_alert",
    "get_data_source", "bust_data_source_cache", "create_shortened_embed_token",
    "delete_dashboard", "delete_dashboard_widget", "clone_canvas_dashboard", "test_data_schedule",
    "create_shareable_link", "update_shareable_link", "delete_shareable_link", "add_object_tags",
    "remove_object_tags", "recommend_archivable_objects", "validate_ddl",
})
ADMIN_OPERATIONS = frozenset({
    "list_users", "update_user", "delete_user", "invite_users", "is_email_used",
    "create_group", "list_groups", "get_group", "update_group",
    "create_user_attribute", "list_user_attributes", "update_user_attribute",
    "list_user_attribute_entries", "compute_user_attribute_values", "upsert_user_attribute_entries",
    "update_data_source", "delete_data_set", "publish_aml_project", "validate_aml_project",
    "restore_user", "resend_user_invite", "delete_group", "add_user_to_group", "remove_user_from_group",
    "delete_data_source", "upload_dbt_manifests", "delete_user_attribute", "list_job_queues",
})


def required_rank(operation: str) -> int:
    if operation in ADMIN_OPERATIONS:
        return 2
    return 1 if operation in ANALYST_OPERATIONS else 0


def is_admin(role: str) -> bool:
    return ROLE_RANK.get(role, 0) >= 2


def allowed(role: str, operation: str) -> bool:
    return ROLE_RANK.get(role, 0) >= required_rank(operation)
