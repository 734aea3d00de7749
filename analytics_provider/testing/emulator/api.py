"""The API origin: route through the operations table, then rate limit, faults, key, role, checks, handler."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from analytics_provider.api.wire.operations import OPERATIONS, Operation, match_route
from analytics_provider.testing.emulator.errors import (
    ApiError,
    error_for_status,
    invalid_parameter,
    new_debug_id,
    whole_seconds,
)
from analytics_provider.testing.emulator.faults import Fault, FaultPlan, rewrite_body
from analytics_provider.testing.emulator.handlers import Call, Reply, load_handlers
from analytics_provider.testing.emulator.multipart import read_form
from analytics_provider.testing.emulator.permissions import allowed
from analytics_provider.testing.emulator.ratelimit import RateLimiter, Verdict
from analytics_provider.testing.emulator.state import Json
from analytics_provider.testing.emulator.validation import check_content_type, check_headers, parse_query, unwrap
from analytics_provider.testing.emulator.wire import Incoming, Outcome, error_outcome, json_outcome, parse_json
from analytics_provider.testing.emulator.world import World

log = logging.getLogger(__name__)

PREFIX = "/api/v2"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
UNROUTED = Operation("unrouted", "ANY", "/*")
"""The rate-limit bucket of requests that match no operation (they carry RateLimit-* headers too)."""
ANONYMOUS: Json = {"id": 0, "role": "user", "name": "(webhook sender)"}


def route(method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
    """The operation of a path below the prefix; ``POST /users/me`` is accepted as the current user too."""
    found = match_route(method, path)
    if found is None and method == "POST" and path == OPERATIONS["get_current_user"].path:
        return OPERATIONS["get_current_user"], {}
    return found


class ApiService:
    """Answers the requests of the API origin from the :class:`World`."""

    def __init__(
        self,
        world: World,
        limiter: RateLimiter,
        faults: FaultPlan,
        key_headers: tuple[str, ...],
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.world = world
        self.limiter = limiter
        self.faults = faults
        self.key_headers = key_headers
        self._sleep = sleep
        self.handlers = load_handlers()

    def answer(self, request: Incoming) -> Outcome:
        path = request.path
        found = route(request.method, path[len(PREFIX):]) if path.startswith(PREFIX + "/") else None
        key = next((value for name in self.key_headers if (value := request.headers.get(name.lower()))), "")
        if found is None:
            verdict = self.limiter.hit(key or f"address:{request.client}", UNROUTED)
            error = ApiError(404, "BaseError", f"No route matches [{request.method}] {path}")
            return error_outcome(error, verdict.headers())
        op, params = found
        verdict = self.limiter.hit(key or f"address:{request.client}", op)
        try:
            outcome = self._answer(op, params, key, verdict, request)
        except ApiError as error:
            outcome = error_outcome(error)
        except Exception:
            debug_id = new_debug_id()
            log.exception("emulator: %s %s failed (debug id %s)", request.method, path, debug_id)
            outcome = error_outcome(ApiError(500, "InternalHolisticsError", f"Internal error (debug id {debug_id})",
                                             extra={"debug_id": debug_id}))
        outcome.headers = {**verdict.headers(), **outcome.headers}
        self.limiter.retry_after_header(outcome.headers)
        outcome.operation = op.name
        return outcome

    def _answer(self, op: Operation, params: dict[str, str], key: str, verdict: Verdict, request: Incoming) -> Outcome:
        fault = self.faults.take(op.name)
        if fault is not None:
            injected = self._fault(fault, verdict)
            if injected is not None:
                injected.injected = True
                return injected
        outcome = self._serve(op, params, key, verdict, request)
        outcome.truncate = fault is not None and fault.truncate
        if fault is not None and fault.rewrite is not None and outcome.status == 200:
            outcome.body, outcome.injected = rewrite_body(fault.rewrite, outcome.body), True
        return outcome

    def _fault(self, fault: Fault, verdict: Verdict) -> Outcome | None:
        if fault.delay:
            self._sleep(fault.delay)
        if fault.drop:
            return Outcome(drop=True)
        if fault.status is None:
            return None
        if fault.status < 300:
            return json_outcome(fault.status, fault.body)
        error = error_for_status(fault.status, retry_after=fault.retry_after, body=fault.body)
        if fault.status == 429:  # the quota reads as spent until the Retry-After (1 s unless told)
            wait = str(whole_seconds(fault.retry_after if fault.retry_after is not None else 1))
            error.headers.update({"RateLimit-Remaining": "0", "RateLimit-Reset": wait, "Retry-After": wait})
        return error_outcome(error)

    def _serve(self, op: Operation, params: dict[str, str], key: str, verdict: Verdict, request: Incoming) -> Outcome:
        user = ANONYMOUS if op.keyless else self._key_owner(key)
        if not verdict.allowed:
            raise ApiError(429, "RateLimitExceedError",
                           f"Rate limit exceeded on {op.endpoint}: {verdict.limit} requests per "
                           f"{self.limiter.frame:g} s; retry after {verdict.reset} s")
        if not op.keyless and not allowed(user["role"], op.name):
            raise ApiError(403, "PermissionDeniedError",
                           f"A user with role {user['role']} is not allowed to call {op.endpoint}")
        query = parse_query(op, request.query)
        check_headers(op, request.headers)
        body: Any = {}
        if op.method in BODY_METHODS:
            check_content_type(op, request.headers, request.body)
            if op.body_type == "multipart/form-data":
                body = read_form(request)
            else:
                parsed = parse_json(request.body)
                if parsed is None and request.body.strip():
                    raise invalid_parameter("the request body must be a JSON object, not null")
                body = unwrap(op, parsed, required=op.keyless)
        handler = self.handlers[op.name]
        with self.world.lock:
            result = handler(Call(op, params, query, body, user, self.world, self.world.clock(), request.headers))
        if isinstance(result, Reply):
            return json_outcome(result.status, result.body, result.headers)
        return json_outcome(op.status, result)

    def _key_owner(self, key: str) -> Json:
        if not key:
            raise ApiError(401, "AuthError", f"Missing API key: send it in the {' or '.join(self.key_headers)} header")
        with self.world.lock:
            user = self.world.state.key_owner(key)
        if user is None or user["is_deleted"]:
            raise ApiError(401, "AuthError", "Invalid or expired API key")
        if not user["allow_authentication_token"]:
            raise ApiError(401, "AuthError", "API access is not allowed for this user")
        return user
