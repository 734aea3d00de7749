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


def record_error(record: Mapping[str, list[str]], message: str | None = None) -> ApiError:
    text = message or "; ".join(f"{field} {', '.join(msgs)}" for field, msgs in record.items())
    return ApiError(422, "RecordError", text, record=record)


def invalid_operation(message: str) -> ApiError:
    return ApiError(422, "InvalidOperationError", message)


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
