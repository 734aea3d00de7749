"""The transport-free request model: what to send for an operation, and how to read the answer.

Both transports (``requests`` in the hook, ``aiohttp`` in the triggers) build their requests
and read their answers here, so they cannot drift apart.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from analytics_provider.api.call.quota import parse_retry_after
from analytics_provider.api.wire.operations import MAX_PAGE_SIZE, OPERATIONS, Operation, operation
from analytics_provider.exceptions import (
    AnalyticsApiError,
    AnalyticsParameterError,
    UnexpectedResponseError,
    bounded,
    error_from_response,
)

EXCERPT = 300  # characters of an unusable answer quoted in its error


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
    that nothing the service would refuse is ever sent. A request with only path arguments
    (every poll of a wait) is built once and reused.
    """
    if not query and body is None and all(type(arg) in (int, str) for arg in path_args):
        return _path_only_request(name, tuple(path_args))
    return _build(name, path_args, query, body)


@functools.lru_cache(maxsize=4096)
def _path_only_request(name: str, path_args: tuple[Any, ...]) -> ApiRequest:
    return _build(name, path_args, None, None)


def _build(name: str, path_args: Sequence[Any], query: Mapping[str, Any] | None, body: Any) -> ApiRequest:
    op = OPERATIONS[name]
    if len(path_args) != len(op.path_params):
        raise AnalyticsParameterError(
            f"{name} takes {len(op.path_params)} path argument(s) ({', '.join(op.path_params)}), "
            f"got {len(path_args)}"
        )
    path = op.path.format(**{param: check_path_id(op, param, arg)
                             for param, arg in zip(op.path_params, path_args, strict=True)}) if path_args else op.path
    params = encode_query(op, query or {})
    payload = {op.wrapper: body} if op.wrapper is not None else body
    return ApiRequest(op, path, params, payload)


def check_path_id(op: Operation | str, param: str, value: Any, label: str | None = None) -> str:
    """A path parameter as sent (percent-encoded), refused unless it stays one path segment.

    Empty, ``.`` and ``..`` are refused everywhere (a client or proxy would resolve them and
    send another path); where the operation takes an integer, anything but a positive integer
    is refused. ``label`` names the parameter in the error (default: the operation's name).
    """
    op = operation(op) if isinstance(op, str) else op
    where = f"{op.name}: {param}" if label is None else label
    if op.is_integer_param(param):
        text = str(value).strip() if isinstance(value, str) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return str(value)
        if text is not None and text.isascii() and text.isdigit() and int(text) > 0:
            return str(int(text))
        raise AnalyticsParameterError(f"{where} must be a positive integer, got {value!r}")
    if isinstance(value, bool) or not isinstance(value, (int, str)) or str(value).strip() in ("", ".", ".."):
        raise AnalyticsParameterError(f"{where} must be an integer or a non-empty string other than . and .., "
                                      f"got {value!r}")
    return quote(str(value), safe="")


def encode_query(op: Operation, query: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The query pairs of a call; lists are written ``name[]=v``. ``None`` means "not sent"."""
    unknown = sorted(set(query) - op.query_names)
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
        if param.max_items is not None and isinstance(value, (list, tuple)) and len(value) > param.max_items:
            raise AnalyticsParameterError(f"{op.name}: {param.name} takes at most {param.max_items} values, "
                                          f"got {len(value)}")
        for item in value if isinstance(value, (list, tuple)) else [value]:
            _check_value(op, param.name, param.kind, param.choices, item)
            key = f"{param.name}[]" if isinstance(value, (list, tuple)) else param.name
            pairs.append((key, ("true" if item else "false") if isinstance(item, bool) else str(item)))  # as read
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
    request: ApiRequest,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float | None = None,
    secrets: Sequence[str] = (),
) -> Any:
    """The unwrapped result of a successful answer, or the matching :mod:`exceptions` error raised.

    A success whose body is empty, not JSON, or lacks the operation's result raises
    :class:`UnexpectedResponseError` (so a proxy's page is never read as a result, nor an empty
    answer as a job state). ``secrets`` never appear in an error's text, even if echoed.
    """
    try:
        op = request.operation
        if not 200 <= status < 300:
            raise error_from_response(
                status,
                body,
                method=request.method,
                path=request.path,
                retry_after=parse_retry_after(headers, now=now),
            )
        if not body or body.isspace():
            if status == 204 or op.method == "DELETE":
                return {}
            raise _unexpected(request, status, headers, body, "the answer is empty")
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise _unexpected(request, status, headers, body, "the answer is not JSON") from None
        except RecursionError:  # arrays or objects nested thousands deep: no answer of the service's
            raise _unexpected(request, status, headers, body, "the answer is not JSON of the service's: "
                              "nested deeper than Python reads") from None
        if op.paginated:
            if not isinstance(data, dict) or not isinstance(data.get(op.items_key), list):
                raise _unexpected(request, status, headers, body, f"the answer has no {op.items_key} list")
            return data
        key = op.result_key
        if key is None:
            return data
        if not isinstance(data, dict) or key not in data:
            raise _unexpected(request, status, headers, body, f"the answer has no {key!r}")
        result = data[key]
        if key == "job" and not (isinstance(result, dict) and isinstance(result.get("status"), str)
                                 and result["status"]):
            raise _unexpected(request, status, headers, body, "the answer's job has no status")
        return result
    except AnalyticsApiError as exc:
        exc.redact(secrets)
        raise


def _unexpected(
    request: ApiRequest, status: int, headers: Mapping[str, str], body: bytes, what: str
) -> UnexpectedResponseError:
    kind = str(headers.get("Content-Type") or "no content type").split(";")[0].strip()
    excerpt = body[: EXCERPT * 4].decode("utf-8", "replace").strip()
    text = f"{what} ({kind}, {len(body)} bytes)"
    if excerpt:
        text += f": {bounded(excerpt, EXCERPT)}"
    return UnexpectedResponseError(text, status=status, method=request.method, path=request.path)
