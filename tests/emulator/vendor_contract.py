"""Judging the emulator's exchanges by the vendor's OpenAPI document (with :mod:`.vendor_patches`).

:func:`judge` takes one request the emulator received and the answer it gave, and says whether
the vendor's schemas allow the request, whether the emulator refused it in the documented error
shape, and whether the answer validates against the vendor's response schema.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

import openapi_core
from openapi_core import OpenAPI
from openapi_core.testing import MockRequest, MockResponse

from analytics_provider.testing.emulator.wire import Incoming, Outcome

try:
    from analytics_provider.testing.emulator.errors import BUSINESS_RULES
except ImportError:  # an emulator from before the rules were named (the "before" figures of the report)
    BUSINESS_RULES = {}

from .vendor_patches import patched_spec

RATE_LIMIT_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
# status: the error types it may carry (API document, Errors; ENDPOINTS.md, Errors)
STATUS_TYPES = {
    400: {"InvalidParameterError"},
    401: {"AuthError"},
    403: {"PermissionDeniedError", "SubscriptionError"},
    404: {"BaseError"},
    422: {"RecordError", "InvalidOperationError", "InvalidEmailsInvitationError", "ExportJobNotReady", "BaseError",
          "InvalidParameterError"},
    429: {"RateLimitExceedError"},
    500: {"InternalHolisticsError"},
    502: {"InternalHolisticsError"},
    503: {"MaintenanceError"},
    504: {"InternalHolisticsError"},
}
# a response the vendor declares by name: the error type it must carry
DECLARED_TYPES = {
    "RecordError": {"RecordError"},
    "InvalidEmailsInvitationError": {"InvalidEmailsInvitationError"},
    "UnauthorizedError": {"AuthError"},
    "RateLimitExceedError": {"RateLimitExceedError"},
}


@functools.cache
def vendor(key_header: str) -> OpenAPI:
    return OpenAPI.from_dict(patched_spec(key_header))


@dataclass
class Verdict:
    method: str
    path: str
    status: int
    request_valid: bool
    request_problem: str = ""
    refused: bool = False
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"{self.method} {self.path} -> {self.status}: " + "; ".join(self.problems)


# openapi-core 0.22 (the newest that Airflow 3.0's pins of ``referencing`` allow) does not convert a
# query value for a ``oneOf`` schema (``version=3`` for integer-or-array), and so calls requests the
# vendor accepts refused: the emulator is judged where openapi-core is 0.23 or later (every other
# cell of the version matrix; the emulator's code is the same on all of them).
JUDGES = tuple(int(part) for part in openapi_core.__version__.split(".")[:2]) >= (0, 23)


def _query(raw: dict[str, list[str]]) -> dict[str, list[str]]:
    """``name[]`` as the vendor's ``name`` (ENDPOINTS.md: array query parameters are written with brackets)."""
    found: dict[str, list[str]] = {}
    for name, values in raw.items():
        found.setdefault(name[:-2] if name.endswith("[]") else name, []).extend(values)
    return found


def openapi_request(request: Incoming, host_url: str, body: bytes | None = None) -> MockRequest:
    return MockRequest(
        host_url, request.method, request.path, args=_query(request.query), headers=dict(request.headers),
        data=request.body if body is None else body,
        content_type=request.headers.get("content-type", "").lower() if request.body or body else "",
    )


def judge(request: Incoming, outcome: Outcome, key_header: str, host_url: str, body: bytes | None = None) -> Verdict:
    api = vendor(key_header)
    verdict = Verdict(request.method, request.path, outcome.status, request_valid=True)
    mock = openapi_request(request, host_url, body)
    try:
        api.validate_request(mock)
    except Exception as exc:  # any refusal of the vendor's document
        verdict.request_valid = False
        verdict.request_problem = _reason(exc)
    missing = [h for h in RATE_LIMIT_HEADERS if h not in outcome.headers]
    if missing:
        verdict.problems.append(f"no {', '.join(missing)} header")
    verdict.refused = 400 <= outcome.status < 500
    if outcome.status >= 400:
        _check_error(verdict, outcome, api, mock)
    elif verdict.request_valid:
        content_type = outcome.headers.get("Content-Type", "").split(";")[0]
        response = MockResponse(outcome.body or b"", outcome.status, dict(outcome.headers),
                                content_type=content_type)
        try:
            api.validate_response(mock, response)
        except Exception as exc:
            verdict.problems.append(f"answer not valid: {_reason(exc)}")
    if not verdict.request_valid and not verdict.refused:
        verdict.problems.append(f"accepted a request the vendor refuses ({verdict.request_problem})")
    if verdict.request_valid and outcome.status in (400, 422) and not _business_rule(outcome):
        verdict.problems.append(f"refused a request the vendor allows by no business rule: {outcome.body[:300]!r}")
    return verdict


def _business_rule(outcome: Outcome) -> bool:
    """Whether a refusal names one of the emulator's business rules (``details.description``)."""
    try:
        payload = json.loads(outcome.body)
    except ValueError:
        return False
    error = payload.get("error") if isinstance(payload.get("error"), dict) else payload
    details = error.get("details") if isinstance(error, dict) else None
    description = details.get("description", "") if isinstance(details, dict) else ""
    return any(description.startswith(f"Business rule {name}:") for name in BUSINESS_RULES)


def _check_error(verdict: Verdict, outcome: Outcome, api: OpenAPI, mock: MockRequest) -> None:
    try:
        payload = json.loads(outcome.body)
    except ValueError:
        verdict.problems.append("error answer is not JSON")
        return
    error = payload.get("error") if isinstance(payload.get("error"), dict) else payload
    error_type = error.get("type")
    if error_type not in STATUS_TYPES.get(outcome.status, set()):
        verdict.problems.append(f"error type {error_type!r} does not go with status {outcome.status}")
    if not isinstance(error.get("message"), str) or not error["message"]:
        verdict.problems.append("error answer has no message")
    declared = _declared_response(api, mock, outcome.status)
    if declared in DECLARED_TYPES and error_type not in DECLARED_TYPES[declared]:
        verdict.problems.append(f"the vendor declares {declared} for {outcome.status}, got {error_type}")
    if verdict.request_valid:
        response = MockResponse(outcome.body, outcome.status, dict(outcome.headers), content_type="application/json")
        try:
            api.validate_response(mock, response)
        except Exception as exc:
            verdict.problems.append(f"error answer not valid: {_reason(exc)}")


def _declared_response(api: OpenAPI, mock: MockRequest, status: int) -> str | None:
    spec = patched_spec_cache()
    for template, item in sorted(spec["paths"].items(), key=lambda pair: pair[0].count("{")):
        if _matches(template, mock.path.removeprefix("/api/v2")) and mock.method in item:
            answer = item[mock.method]["responses"].get(str(status), {})
            ref = answer.get("$ref", "")
            return ref.split("/")[-1] or None
    return None


@functools.cache
def patched_spec_cache() -> dict[str, Any]:
    return patched_spec("X-Service-Key")


def _matches(template: str, path: str) -> bool:
    left, right = template.strip("/").split("/"), path.strip("/").split("/")
    return len(left) == len(right) and all(a == b or a.startswith("{") for a, b in zip(left, right, strict=True))


def _reason(exc: BaseException) -> str:
    causes = [exc, *(c for c in (exc.__cause__, exc.__context__) if c is not None)]
    for cause in causes:
        errors = getattr(cause, "schema_errors", None)
        if errors:
            return f"{type(exc).__name__}: {str(errors[0].message)[:200]}"
    return f"{type(exc).__name__}: {str(exc)[:200]}"
