"""The errors of the API, one class per error type of the API document.

Every error the hook raises for an answer of the service is an :class:`AnalyticsApiError`
(itself an ``AirflowException``), so a DAG can catch them all at once or one type at a time.
Failures of the transport (no answer at all) are :class:`AnalyticsTransportError`.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from airflow.providers.common.compat.sdk import AirflowException

MAX_TEXT = 2000
"""Characters of a text taken from an answer (or a library's error) that may reach an error or log."""


def bounded(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` cut to ``limit`` characters, the cut noted with the full length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [cut: {len(text)} characters in all]"


def redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


class AnalyticsApiError(AirflowException):
    """An error answer of the service.

    Its text reads ``403 PermissionDeniedError on GET /dashboards/12: <the service's message>``.
    ``record`` holds a RecordError's per-property messages; ``debug_id`` the id an internal
    error asks you to give to support; ``retry_after`` the seconds a 429 or 503 asked to wait.
    """

    error_type = "BaseError"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        method: str = "",
        path: str = "",
        details: Mapping[str, Any] | None = None,
        record: Mapping[str, list[str]] | None = None,
        debug_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.error_type = bounded(error_type or type(self).error_type, 100)
        self.message = bounded(str(message))
        self.method = method
        self.path = path
        self.details = dict(details or {})
        self.record = {bounded(str(k), 100): [bounded(str(m), 200) for m in list(v)[:20]]
                       for k, v in list((record or {}).items())[:20]}
        self.debug_id = bounded(debug_id, 100) if debug_id else None
        self.retry_after = retry_after
        super().__init__(self._text())

    def _text(self) -> str:
        where = f" on {self.method} {self.path}" if self.method else ""
        head = f"{self.status} {self.error_type}" if self.status else self.error_type
        text = f"{head}{where}: {self.message}"
        if self.record:
            text += " (" + "; ".join(f"{k}: {', '.join(v)}" for k, v in self.record.items()) + ")"
        if self.debug_id and self.debug_id not in self.message:
            text += f" [debug id {self.debug_id}]"
        return bounded(text, 2 * MAX_TEXT)

    def redact(self, secrets: Sequence[str]) -> None:
        """Replace each of ``secrets`` in the text by ``***`` (an answer may echo what was sent)."""
        secrets = [s for s in secrets if s]
        if not secrets or not any(s in self._text() for s in secrets):
            return
        self.message = redact(self.message, secrets)
        self.record = {redact(k, secrets): [redact(m, secrets) for m in v] for k, v in self.record.items()}
        self.debug_id = redact(self.debug_id, secrets) if self.debug_id else None
        self.details = {}
        self.args = (self._text(),)

    def __reduce__(self) -> tuple[Any, ...]:  # keeps the fields across pickling (Airflow does it)
        return (_rebuild, (type(self), str(self), self.__dict__.copy()))


def _rebuild(cls: type[AnalyticsApiError], text: str, state: dict[str, Any]) -> AnalyticsApiError:
    error = cls.__new__(cls)
    Exception.__init__(error, text)
    error.__dict__.update(state)
    return error


class RecordError(AnalyticsApiError):
    error_type = "RecordError"


class InvalidParameterError(AnalyticsApiError):
    error_type = "InvalidParameterError"


class AuthError(AnalyticsApiError):
    error_type = "AuthError"


class MaintenanceError(AnalyticsApiError):
    error_type = "MaintenanceError"


class SubscriptionError(AnalyticsApiError):
    error_type = "SubscriptionError"


class PermissionDeniedError(AnalyticsApiError):
    error_type = "PermissionDeniedError"


class NotFoundError(AnalyticsApiError):
    """A 404: the resource does not exist or cannot be found."""

    error_type = "NotFoundError"


class InternalServiceError(AnalyticsApiError):
    """The service's internal error (type ``InternalHolisticsError``); quote ``debug_id`` to support."""

    error_type = "InternalHolisticsError"


class RateLimitExceedError(AnalyticsApiError):
    error_type = "RateLimitExceedError"


class InvalidOperationError(AnalyticsApiError):
    error_type = "InvalidOperationError"


class InvalidEmailsInvitationError(AnalyticsApiError):
    error_type = "InvalidEmailsInvitationError"


class ExportJobNotReady(AnalyticsApiError):
    """The export's job has not succeeded yet, so there is no file to download."""

    error_type = "ExportJobNotReady"


class AnalyticsTransportError(AnalyticsApiError):
    """No usable answer: the connection failed, timed out, or a download arrived incomplete.

    ``sent`` is False only when the request surely never left this machine (so even a create
    may be sent again).
    """

    error_type = "TransportError"

    def __init__(self, message: str, *, sent: bool = True, **kwargs: Any) -> None:
        self.sent = sent
        super().__init__(message, **kwargs)


    @classmethod
    def from_exception(
        cls, exc: BaseException, *, sent: bool, method: str, path: str, secrets: tuple[str, ...] = ()
    ) -> AnalyticsTransportError:
        """The error for a transport library's exception; no header value can reach its text.

        An exception about a header (``requests``' ``InvalidHeader``, an encoding error) is
        described by its type only; any other text has every secret replaced and is bounded.
        Raise it ``from None``: the library's exception may quote what was sent.
        """
        name = type(exc).__name__
        if isinstance(exc, (ValueError, UnicodeError)) or "header" in name.lower():
            text = f"{name}: a request could not be sent (an invalid header or URL)"
        else:
            detail = redact(str(exc), [*secrets, *(repr(s)[1:-1] for s in secrets if s)])
            text = f"{name}: {bounded(detail, 500)}"
        return cls(text, sent=sent, method=method, path=path)


class AnalyticsTlsError(AnalyticsApiError):
    """A certificate this client does not trust (or a TLS handshake refused): a setting to fix,
    not an outage, so never retried. The text says what was wrong and which setting fixes it."""

    error_type = "TLSError"


_TRANSIENT_TLS = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError, ssl.SSLWantReadError,
                  ssl.SSLWantWriteError)


def tls_problem(exc: BaseException) -> ssl.SSLError | None:
    """The certificate or handshake error inside a library's exception (its causes, its args,
    aiohttp's and urllib3's wrappers), or None. A TLS connection cut short is not one."""
    found: ssl.SSLError | None = None
    for item in _causes(exc):
        if isinstance(item, ssl.SSLError) and not isinstance(item, _TRANSIENT_TLS):
            if type(item).__module__ == "ssl":  # the error itself, not a library's wrapper of it
                return item
            found = found or item
    return found


E = TypeVar("E", bound=BaseException)


def cause_of(exc: BaseException, kind: type[E]) -> E | None:
    """The first exception of ``kind`` inside a library's exception (as :func:`tls_problem` looks), or None."""
    return next((item for item in _causes(exc) if isinstance(item, kind)), None)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps: its causes, its args, aiohttp's and urllib3's wrappers."""
    seen: set[int] = set()
    todo: list[Any] = [exc]
    while todo:
        item = todo.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        todo += [item.__cause__, item.__context__, *item.args,
                 *(getattr(item, name, None) for name in ("reason", "certificate_error", "os_error"))]



class IncompleteDownloadError(AnalyticsTransportError):
    error_type = "IncompleteDownload"


class UnverifiableDownloadError(AnalyticsApiError):
    """A downloaded file whose completeness nothing can tell (no ``Content-Length``, not chunked,
    not compressed): refused, never written, and not retried (the host would answer the same)."""

    error_type = "UnverifiableDownload"


class AnswerTooLargeError(AnalyticsApiError):
    """An answer larger than the connection allows (``max_answer_bytes``): refused after reading
    one byte past the limit (or none, when its ``Content-Length`` says so), and not retried (the
    service would answer the same). The text names the setting that would allow it."""

    error_type = "AnswerTooLarge"


class DownloadTooLargeError(AnswerTooLargeError):
    """A downloaded file that decodes past ``max_download_bytes``, or past ``max_decode_ratio``
    times the bytes received (a compression bomb): refused before it replaces anything, not
    retried. The text names the destination, the sizes and the setting."""

    error_type = "DownloadTooLarge"


class DownloadTooSlowError(AnalyticsApiError):
    """A download that did not end within ``max_download_seconds`` (a file host that drips the
    body, a byte just inside each read timeout): refused before the file replaces anything, not
    retried. The text names the destination and the setting."""

    error_type = "DownloadTooSlow"


class CodingError(ValueError):
    """A compressed body that is corrupt, encoded in a coding not asked for, or (``cut``) that ends
    before its compressed stream does; raised by the decoder, turned into an API error by the exchange."""

    def __init__(self, message: str, *, cut: bool = False) -> None:
        super().__init__(message)
        self.cut = cut


class UndecodableAnswerError(AnalyticsApiError):
    """An answer whose body could not be decoded (a corrupt gzip or deflate stream, a coding not
    asked for): not retried, the host would send the same. The text names the coding and the host."""

    error_type = "UndecodableAnswer"


class UnexpectedResponseError(AnalyticsTransportError):
    """A success status whose body is not what the operation answers: empty, not JSON, or
    without its result (a proxy's login page, a truncated answer). Retried like a transport
    failure; never read as a result or a job state.
    """

    error_type = "UnexpectedResponse"


class PaginationLoopError(AnalyticsApiError):
    """A list operation answered a cursor it had answered before: following it would never end."""

    error_type = "PaginationLoop"


class AnalyticsDeadlineExceeded(AnalyticsApiError):
    """The call's deadline came before it could finish; nothing was slept past the deadline.

    ``last_error`` is the failure of the last attempt, when there was one. Never retried.
    """

    error_type = "DeadlineExceeded"

    def __init__(self, message: str, *, last_error: BaseException | None = None, **kwargs: Any) -> None:
        self.last_error = last_error
        if last_error is not None:
            message = f"{message}; the last attempt failed: {last_error}"
        super().__init__(message, **kwargs)


class AnalyticsJobError(AirflowException):
    """A job ended in a final status other than success."""

    def __init__(self, message: str, *, job_id: int, status: str, last_error_log: str | None = None) -> None:
        self.job_id = job_id
        self.status = bounded(str(status), 100)
        self.last_error_log = bounded(str(last_error_log)) if last_error_log is not None else None
        super().__init__(bounded(message, 2 * MAX_TEXT))  # the service's logs can be long


class AnalyticsJobTimeout(AnalyticsJobError):
    """The job did not finish before the wait's deadline (it may still be running)."""


ERROR_TYPES: dict[str, type[AnalyticsApiError]] = {
    cls.error_type: cls
    for cls in (
        RecordError, InvalidParameterError, AuthError, MaintenanceError, SubscriptionError,
        PermissionDeniedError, InternalServiceError, RateLimitExceedError, InvalidOperationError,
        InvalidEmailsInvitationError, ExportJobNotReady, NotFoundError,
    )
}

_BY_STATUS: dict[int, type[AnalyticsApiError]] = {
    400: InvalidParameterError,
    401: AuthError,
    403: PermissionDeniedError,
    404: NotFoundError,
    422: InvalidOperationError,
    429: RateLimitExceedError,
    500: InternalServiceError,
    503: MaintenanceError,
}


def error_from_response(
    status: int,
    body: bytes | str | Mapping[str, Any] | None,
    *,
    method: str = "",
    path: str = "",
    retry_after: float | None = None,
) -> AnalyticsApiError:
    """The exception for an error answer; reads both the flat and the nested error body."""
    payload = _load(body)
    nested = payload.get("error")
    error: Mapping[str, Any] = nested if isinstance(nested, Mapping) else payload
    error_type = str(error.get("type") or "") or None
    # A generic type (BaseError, or none) takes its class from the status.
    cls = ERROR_TYPES.get(error_type or "") or _BY_STATUS.get(status) or AnalyticsApiError
    if cls is AnalyticsApiError and error_type is None:
        error_type = "HTTPError"
    message = bounded(str(error.get("message") or "")) or _fallback_message(body, status)
    details = error.get("details") if isinstance(error.get("details"), Mapping) else None
    record = error.get("record") if isinstance(error.get("record"), Mapping) else None
    debug_id = error.get("debug_id")
    return cls(
        message,
        status=status,
        error_type=error_type,
        method=method,
        path=path,
        details=details,
        record=record,
        debug_id=str(debug_id) if debug_id else None,
        retry_after=retry_after,
    )


def _load(body: bytes | str | Mapping[str, Any] | None) -> Mapping[str, Any]:
    if isinstance(body, Mapping):
        return body
    if not body:
        return {}
    try:
        loaded = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # (nested thousands deep: its text is shown)
        return {}
    return loaded if isinstance(loaded, Mapping) else {}


def _fallback_message(body: bytes | str | Mapping[str, Any] | None, status: int) -> str:
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    text = body.strip() if isinstance(body, str) else ""
    return bounded(text, 300) if text else f"HTTP {status} with no error body"


class AnalyticsParameterError(ValueError):
    """A parameter the service would refuse, caught before any request is sent.

    An operator's reads ``<task id>: <parameter> must be <what is allowed>; got <value>``.
    """


class AnalyticsLookupError(AnalyticsParameterError):
    """A name (of a dashboard, a widget, a filter) that matches nothing, or more than one thing;
    raised before any job is submitted."""


def refused(task_id: str, parameter: str, value: Any, allowed: str) -> AnalyticsParameterError:
    """The refusal of an operator's argument, in the one style: task, parameter, allowed, value."""
    return AnalyticsParameterError(f"{task_id}: {parameter} must be {allowed}; got {bounded(repr(value), 200)}")


@contextmanager
def naming_the_task(task_id: str) -> Iterator[None]:
    """Refusals raised inside (by checks shared with the hook) name the task first."""
    try:
        yield
    except AnalyticsParameterError as exc:
        if str(exc).startswith(f"{task_id}: "):
            raise
        raise type(exc)(f"{task_id}: {exc}") from None  # a lookup error stays one
