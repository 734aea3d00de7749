"""The transport-free request model: what to send for an operation, and how to read the answer.

Both transports (``requests`` in the hook, ``aiohttp`` in the triggers) build their requests
and read their answers here, so they cannot drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from analytics_provider.api.operations import MAX_PAGE_SIZE, Operation, encode_query_value, operation
from analytics_provider.api.ratelimit import parse_retry_after
from analytics_provider.exceptions import AnalyticsParameterError, error_from_response


@dataclass(frozen=True)
class ApiRequest:
    """One request, ready for any transport: ``path`` is relative to the base address."""

    operation: Operation
    path: str
    params: tuple[tuple[str, str], ...] = ()
    json: Any = None

    @property
    def method(self) -> str:
        return self.operation.method

    def describe(self) -> str:
        return f"{self.method} {self.path}"


def build_request(
    name: str,
    path_args: Sequence[Any] = (),
    query: Mapping[str, Any] | None = None,
    body: Any = None,
) -> ApiRequest:
    """Check the arguments against the operation's table entry and build the request.

    Raises :class:`AnalyticsParameterError` naming the parameter and the allowed values, so
    that nothing the service would refuse is ever sent.
    """
    op = operation(name)
    if len(path_args) != len(op.path_params):
        raise AnalyticsParameterError(
            f"{name} takes {len(op.path_params)} path argument(s) ({', '.join(op.path_params)}), "
            f"got {len(path_args)}"
        )
    values = {param: _path_value(name, param, arg) for param, arg in zip(op.path_params, path_args, strict=True)}
    path = op.path.format(**values)
    params = encode_query(op, query or {})
    payload = {op.wrapper: body} if op.wrapper is not None else body
    return ApiRequest(op, path, params, payload)


def _path_value(name: str, param: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or value == "":
        raise AnalyticsParameterError(f"{name}: {param} must be an integer or a non-empty string, got {value!r}")
    return quote(str(value), safe="")


def encode_query(op: Operation, query: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The query pairs of a call; lists are written ``name[]=v``. ``None`` means "not sent"."""
    unknown = sorted(set(query) - {p.name for p in op.query})
    if unknown:
        allowed = ", ".join(p.name for p in op.query) or "none"
        raise AnalyticsParameterError(f"{op.name} has no option {', '.join(unknown)}; its options: {allowed}")
    pairs: list[tuple[str, str]] = []
    for param in op.query:
        value = query.get(param.name)
        if value is None:
            if param.required:
                raise AnalyticsParameterError(f"{op.name}: {param.name} is required")
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            _check_value(op, param.name, param.kind, param.choices, item)
            key = f"{param.name}[]" if isinstance(value, (list, tuple)) else param.name
            pairs.append((key, encode_query_value(item)))
    return tuple(pairs)


def _check_value(op: Operation, name: str, kind: type, choices: tuple[str, ...], value: Any) -> None:
    if kind is bool and not isinstance(value, bool):
        raise AnalyticsParameterError(f"{op.name}: {name} must be true or false, got {value!r}")
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind is int and not is_int and not (isinstance(value, str) and value.isdigit()):
        raise AnalyticsParameterError(f"{op.name}: {name} must be an integer, got {value!r}")
    if name == "limit" and not 1 <= int(value) <= MAX_PAGE_SIZE:
        raise AnalyticsParameterError(f"{op.name}: limit must be from 1 to {MAX_PAGE_SIZE}, got {value!r}")
    if choices and value not in choices:
        raise AnalyticsParameterError(f"{op.name}: {name} must be one of {', '.join(choices)}; got {value!r}")


def parse_response(
    request: ApiRequest, status: int, headers: Mapping[str, str], body: bytes, *, now: float | None = None
) -> Any:
    """The unwrapped result of a successful answer, or the matching :mod:`exceptions` error raised."""
    if not 200 <= status < 300:
        raise error_from_response(
            status,
            body,
            method=request.method,
            path=request.path,
            retry_after=parse_retry_after(headers, now=now),
        )
    data = json.loads(body) if body else {}
    key = request.operation.result_key
    if key is None or request.operation.paginated or not isinstance(data, dict):
        return data
    return data.get(key)
