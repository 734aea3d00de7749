"""Checks like the service's: query options from the operations table (400), bodies (400 or 422)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from analytics_provider.api.operations import MAX_PAGE_SIZE, Operation
from analytics_provider.testing.emulator.errors import ApiError, invalid_parameter, record_error

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_TRUE, _FALSE = ("true", "1"), ("false", "0")


def parse_query(op: Operation, raw: Mapping[str, list[str]]) -> dict[str, Any]:
    """The operation's query options, typed; unknown options are ignored, as the service does."""
    parsed: dict[str, Any] = {}
    for param in op.query:
        values = raw.get(param.name) or raw.get(param.name + "[]")
        if not values or values[-1] == "":
            if param.required:
                raise invalid_parameter(f"param is missing or the value is empty: {param.name}")
            continue
        value = values[-1]
        if param.kind is bool:
            if value.lower() not in _TRUE + _FALSE:
                raise invalid_parameter(f"{param.name} must be true or false, got {value!r}")
            parsed[param.name] = value.lower() in _TRUE
        elif param.kind is int:
            if not re.fullmatch(r"-?\d+", value):
                raise invalid_parameter(f"{param.name} must be an integer, got {value!r}")
            parsed[param.name] = int(value)
        else:
            parsed[param.name] = value
        if param.choices and value not in param.choices:
            raise invalid_parameter(
                f"{param.name} does not have a valid value: {value!r}; allowed values: {', '.join(param.choices)}"
            )
    limit = parsed.get("limit")
    if limit is not None and not 1 <= limit <= MAX_PAGE_SIZE:
        raise invalid_parameter(f"limit must be between 1 and {MAX_PAGE_SIZE}, got {limit}")
    return parsed


def unwrap(op: Operation, body: Any) -> Any:
    """The request body without its wrapper key; a wrong structure is a 400."""
    if op.wrapper is None:
        if body is None:
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

    def add(self, field: str, message: str) -> None:
        self.errors.setdefault(field, []).append(message)

    def require(self, body: Mapping[str, Any], field: str, kind: type | tuple[type, ...] | None = None) -> Any:
        value = _dig(body, field)
        if value is None or value == "" or value == []:
            self.add(field, "can't be blank")
        elif kind is not None and not isinstance(value, kind):
            self.add(field, "is invalid")
        return value

    def choice(self, body: Mapping[str, Any], field: str, choices: Iterable[Any], *, required: bool = True) -> Any:
        value = _dig(body, field)
        allowed = list(choices)
        if value is None:
            if required:
                self.add(field, "can't be blank")
        elif value not in allowed:
            self.add(field, f"is not included in the list ({', '.join(map(str, allowed))})")
        return value

    def emails(self, field: str, values: Any) -> None:
        if values is None:
            return
        if not isinstance(values, list) or not all(isinstance(v, str) and EMAIL.match(v) for v in values):
            self.add(field, "must be a list of valid e-mail addresses")

    def check(self) -> None:
        if self.errors:
            raise record_error(self.errors)


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


def object_list(value: Any, what: str) -> list[dict[str, Any]]:
    """A list of objects, or a 400 naming ``what``."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ApiError(400, "InvalidParameterError", f"{what} must be an array of objects")
    return value
