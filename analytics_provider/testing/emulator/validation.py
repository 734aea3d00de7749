"""Checks like the service's: query options from the operations table (400), bodies (400 or 422)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from analytics_provider.api.wire.operations import MAX_PAGE_SIZE, Operation
from analytics_provider.testing.emulator.errors import ApiError, by_rule, invalid_parameter, record_error

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_TRUE = ("true", "1", "t", "y", "yes", "on")
_FALSE = ("false", "0", "f", "n", "no", "off")
"""The spellings of a boolean query value the service (a Rails application) and openapi-core both read."""


NUMBER = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


def parse_query(op: Operation, raw: Mapping[str, list[str]]) -> dict[str, Any]:
    """The operation's query options, typed; unknown options are ignored, as the service does.

    An array option is read from ``name[]`` (or repeated ``name``); another option takes its last value.
    """
    parsed: dict[str, Any] = {}
    for param in op.query:
        values = (raw.get(param.name + "[]") or []) + (raw.get(param.name) or [])
        if "" in values:  # the vendor's parameters do not allow empty values
            raise invalid_parameter(f"param is missing or the value is empty: {param.name}")
        if not values:
            if param.required:
                raise invalid_parameter(f"param is missing or the value is empty: {param.name}")
            continue
        if param.max_items is not None and len(values) > param.max_items:
            raise by_rule(invalid_parameter(f"{param.name}: at most {param.max_items} values, got {len(values)}"),
                          "ids-limit")
        typed = [typed_value(param.name, param.kind, param.choices, value) for value in values]
        parsed[param.name] = typed if param.many else typed[-1]
    limit = parsed.get("limit")
    if limit is not None and not 1 <= limit <= MAX_PAGE_SIZE:
        raise invalid_parameter(f"limit must be between 1 and {MAX_PAGE_SIZE}, got {limit}")
    if parsed.get("page") is not None and parsed["page"] < 1:
        raise invalid_parameter(f"page must be at least 1, got {parsed['page']}")
    return parsed


def typed_value(name: str, kind: type, choices: tuple[str, ...], value: str) -> Any:
    """A query or header value as its table type; a 400 naming ``name`` when it is not one."""
    result: Any = value
    if kind is bool:
        if value.lower() not in _TRUE + _FALSE:
            raise invalid_parameter(f"{name} must be true or false, got {value!r}")
        result = value.lower() in _TRUE
    elif kind is int:
        if not re.fullmatch(r"-?\d+", value):
            raise invalid_parameter(f"{name} must be an integer, got {value!r}")
        result = int(value)
    elif kind is float:
        if not NUMBER.match(value):
            raise invalid_parameter(f"{name} must be a number, got {value!r}")
        result = float(value)
    if choices and value not in choices:
        raise invalid_parameter(f"{name} does not have a valid value: {value!r}; allowed values: {', '.join(choices)}")
    return result


def check_headers(op: Operation, headers: Mapping[str, str]) -> None:
    """The headers the operation requires (webhook event names and signatures)."""
    for param in op.headers:
        value = headers.get(param.name.lower())
        if not value:
            raise invalid_parameter(f"missing header: {param.name}")
        typed_value(param.name, param.kind, param.choices, value)


def check_content_type(op: Operation, headers: Mapping[str, str], body: bytes) -> None:
    """A body must come with the operation's media type (JSON: ``application/json``); a 400 otherwise."""
    if not body.strip():
        return
    sent = headers.get("content-type", "").split(";")[0].strip().lower()
    wanted = op.body_type
    if wanted == "application/json":
        accepted = sent == wanted or (sent.startswith("application/") and sent.endswith("+json"))
    else:
        accepted = sent == wanted
    if not accepted:
        raise invalid_parameter(f"the request body must be sent as {wanted}, got Content-Type {sent or 'none'!r}")


def unwrap(op: Operation, body: Any, *, required: bool = False) -> Any:
    """The request body without its wrapper key; a wrong structure is a 400."""
    if op.wrapper is None:
        if body is None:
            if required:
                raise invalid_parameter("the request body is required")
            return {}
        if not isinstance(body, dict):
            raise invalid_parameter("the request body must be a JSON object")
        return body
    if not isinstance(body, dict) or op.wrapper not in body:
        raise invalid_parameter(f"param is missing or the value is empty: {op.wrapper}")
    inner = body[op.wrapper]
    expected = list if op.name == "upsert_user_attribute_entries" else dict
    if not isinstance(inner, expected):
        kind = "an array" if expected is list else "an object"
        raise invalid_parameter(f"{op.wrapper} must be {kind}")
    return inner


class Record:
    """Collects per-field messages of a body, then raises one 422 RecordError."""

    def __init__(self) -> None:
        self.errors: dict[str, list[str]] = {}
        self.rules: list[str] = []
        self.unruled = False

    def add(self, field: str, message: str, rule: str | None = None) -> None:
        """One problem; ``rule`` names the business rule it breaks (else the vendor's schema refuses it too)."""
        self.errors.setdefault(field, []).append(message)
        if rule is None:
            self.unruled = True
        else:
            self.rules.append(rule)

    def require(self, body: Mapping[str, Any], field: str, kind: type | tuple[type, ...] | None = None) -> Any:
        value = _dig(body, field)
        if value is None:
            self.add(field, "can't be blank")
        elif value == "" or value == []:
            self.add(field, "can't be blank", rule="not-blank")
        elif kind is not None and not isinstance(value, kind):
            self.add(field, "is invalid")
        return value

    def choice(
        self, body: Mapping[str, Any], field: str, choices: Iterable[Any], *, required: bool = True,
        rule: str | None = None,
    ) -> Any:
        """``rule``: the business rule the choice is (when the vendor's schema does not list the values)."""
        value = _dig(body, field)
        allowed = list(choices)
        if value is None:
            if required:
                self.add(field, "can't be blank")
        elif value not in allowed:
            self.add(field, f"is not included in the list ({', '.join(map(str, allowed))})", rule=rule)
        return value

    def emails(self, field: str, values: Any) -> None:
        if values is None:
            return
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            self.add(field, "must be a list of e-mail addresses")
        elif not all(EMAIL.match(v) for v in values):
            self.add(field, "must be a list of valid e-mail addresses", rule="email")

    def check(self) -> None:
        if self.errors:
            raise record_error(self.errors, rules=() if self.unruled else tuple(self.rules))


def _dig(body: Mapping[str, Any], dotted: str) -> Any:
    value: Any = body
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def as_int(value: Any, what: str) -> int:
    """An integer id from a body or path; else a 422."""
    if isinstance(value, bool):
        raise record_error({what: ["is not a number"]})
    try:
        return int(value)
    except (TypeError, ValueError):
        raise record_error({what: ["is not a number"]}) from None


def object_list(value: Any, what: str, present: bool = False) -> list[dict[str, Any]]:
    """A list of objects, or a 400 naming ``what`` (``present``: the key was sent, so null is wrong)."""
    if value is None and not present:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ApiError(400, "InvalidParameterError", f"{what} must be an array of objects")
    return value
