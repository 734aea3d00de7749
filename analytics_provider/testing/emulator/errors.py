"""Error answers in the shapes of the API document: flat ``{type, message}`` or nested ``{error: {...}}``."""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from typing import Any

STATUS_TYPES: dict[int, str] = {
    400: "InvalidParameterError",
    401: "AuthError",
    403: "PermissionDeniedError",
    404: "BaseError",
    409: "InvalidOperationError",
    422: "InvalidOperationError",
    429: "RateLimitExceedError",
    500: "InternalHolisticsError",
    502: "InternalHolisticsError",
    503: "MaintenanceError",
    504: "InternalHolisticsError",
}

_MESSAGES: dict[str, str] = {
    "InvalidParameterError": "The request is missing a parameter or has a wrong structure",
    "AuthError": "Invalid or missing API key",
    "PermissionDeniedError": "You do not have permission to perform this action",
    "BaseError": "The resource does not exist or cannot be found",
    "InvalidOperationError": "The action cannot be processed",
    "RateLimitExceedError": "Rate limit exceeded, please retry later",
    "MaintenanceError": "The service is under maintenance, please come back later",
}


BUSINESS_RULES: dict[str, str] = {
    "exists": "what a request refers to exists: a report or dashboard to send, a dashboard's filter, a widget, "
              "a group, a user attribute, a data source (by name), a user to add to a group",
    "unique-name": "group names, user attribute names and cloned dashboards' unames are unique",
    "not-blank": "names, tokens, branch names and commits are not empty",
    "crontab": "schedule.repeat is a five-field crontab expression",
    "email": "recipients and invited addresses are e-mail addresses; an invited address is not a user's yet",
    "attribute": "a user attribute's name is lowercase letters, digits and underscores and its type one of string, "
                 "number, boolean, date, datetime; system attributes cannot be changed or given entries",
    "password": "a new password has at least 8 characters",
    "user-state": "you cannot delete yourself or a deleted user, restore an active one, re-invite one who joined, "
                  "or add a deleted user to a group",
    "aml": "data sets defined in AML cannot be deleted through the API; object_mapping maps data set ids to unames",
    "in-use": "a data source that data sets use cannot be deleted",
    "canvas": "only canvas dashboards (version 4) can be cloned",
    "query-fields": "a data-set query names fields found together in one of the seed's tables",
    "ddl": "a custom DDL creates a table or a view",
    "webhook": "a webhook carries a sha256=<hex> signature, or a GitLab token of at least 8 characters",
    "upload-limits": "at most 5 manifests of at most 200 MB each per upload",
    "cursor": "before and after are cursors the emulator handed out",
    "export": "only a finished export job of the caller can be downloaded; the caller may export data",
    "upsert-limit": "at most 100 user attribute entries per upsert",
    "ids-limit": "at most 100 ids per List Jobs request (the vendor's description of ids says so)",
}
"""The rules by which the emulator refuses a request the vendor's schema allows (docs/emulator.rst lists them)."""


def rule_details(*names: str) -> dict[str, Any]:
    """The ``details`` of an error answer that a business rule caused."""
    for name in names:
        if name not in BUSINESS_RULES:
            raise KeyError(f"no business rule {name!r}")
    text = "; ".join(f"Business rule {name}: {BUSINESS_RULES[name]}" for name in dict.fromkeys(names))
    return {"details": {"description": text, "docs": "https://airflow-provider-analytics.readthedocs.io/"
                                                     "en/latest/emulator.html#business-rules"}}


class ApiError(Exception):
    """An error answer: raise it anywhere in a handler, the server turns it into the body."""

    def __init__(
        self,
        status: int,
        error_type: str,
        message: str,
        *,
        record: Mapping[str, list[str]] | None = None,
        extra: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        nested: bool = False,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message
        self.record = dict(record) if record else None
        self.extra = dict(extra or {})
        self.headers = dict(headers or {})
        self.nested = nested
        self.custom_body = body

    def body(self) -> Any:
        if self.custom_body is not None:
            return self.custom_body
        if self.nested:
            return {"error": {"type": self.error_type, "message": self.message, **self.extra}}
        payload: dict[str, Any] = {"type": self.error_type, "message": self.message}
        if self.record is not None:
            payload["record"] = self.record
        payload.update(self.extra)
        return payload


def invalid_parameter(message: str) -> ApiError:
    return ApiError(400, "InvalidParameterError", message)


def not_found(model: str, value: Any, key: str = "id") -> ApiError:
    return ApiError(404, "BaseError", f"Couldn't find {model} with {key}={value}")


def record_error(
    record: Mapping[str, list[str]], message: str | None = None, rules: tuple[str, ...] = ()
) -> ApiError:
    text = message or "; ".join(f"{field} {', '.join(msgs)}" for field, msgs in record.items())
    return ApiError(422, "RecordError", text, record=record, extra=rule_details(*rules) if rules else None)


def invalid_operation(message: str, rule: str) -> ApiError:
    """A 422 by one of :data:`BUSINESS_RULES` (the action cannot be processed in this state)."""
    return ApiError(422, "InvalidOperationError", message, extra=rule_details(rule))


def by_rule(error: ApiError, rule: str) -> ApiError:
    """``error``, marked as caused by a business rule."""
    error.extra.update(rule_details(rule))
    return error


def whole_seconds(seconds: float) -> int:
    """A Retry-After value: whole seconds, rounded up, at least 1."""
    return max(1, math.ceil(seconds))


def new_debug_id() -> str:
    return secrets.token_hex(8)


def error_for_status(status: int, *, retry_after: float | None = None, body: Any = None) -> ApiError:
    """The answer an injected fault gives: the document's error type for the status."""
    error_type = STATUS_TYPES.get(status, "BaseError")
    headers: dict[str, str] = {}
    if retry_after is not None and status in (429, 503):
        headers["Retry-After"] = str(whole_seconds(retry_after))
    if error_type == "InternalHolisticsError":
        debug_id = new_debug_id()
        message = f"Internal error, please contact support with the debug id {debug_id}"
        # 500 answers the flat body; gateway errors (502, 504) answer the nested form.
        return ApiError(
            status, error_type, message, extra={"debug_id": debug_id}, headers=headers, nested=status != 500, body=body
        )
    message = _MESSAGES.get(error_type, f"HTTP {status}")
    return ApiError(status, error_type, message, headers=headers, body=body)
