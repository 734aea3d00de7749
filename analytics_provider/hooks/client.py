"""The hook's machinery: connection, ``requests`` transport, retries, rate limits, downloads.

:class:`~analytics_provider.hooks.analytics.AnalyticsHook` adds one small method per operation
on top of :meth:`AnalyticsClientHook.call`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from functools import cached_property
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
import tenacity
from airflow.providers.common.compat.sdk import BaseHook

from analytics_provider.api.budget import SyncQuota
from analytics_provider.api.follow import DEFAULT_MAX_OUTAGE, ONE_LOOK, JobWatch, Read, drive, final_state
from analytics_provider.api.jobs import JobState
from analytics_provider.api.operations import operation
from analytics_provider.api.pagination import Pages
from analytics_provider.api.ratelimit import RateLimit, parse_retry_after
from analytics_provider.api.request import ApiRequest, build_request, encode_query, parse_response
from analytics_provider.api.retry import CallPlan, RetryPolicy
from analytics_provider.api.settings import USER_AGENT, ConnectionConfigError, ConnectionSettings, TransportOptions
from analytics_provider.exceptions import (
    AnalyticsApiError,
    AnalyticsDeadlineExceeded,
    AnalyticsParameterError,
    AnalyticsTransportError,
    IncompleteDownloadError,
    error_from_response,
)
from analytics_provider.hooks.download import (
    CHUNK_SIZE,
    Destination,
    check_destination,
    filename_from_disposition,
    save_stream,
)

log = logging.getLogger(__name__)

__all__ = ["USER_AGENT", "AnalyticsClientHook"]

MAX_REDIRECTS = 5
MAX_ERROR_BODY = 1024 * 1024  # bytes of an error answer read (its text is bounded further)
IDENTITY = {"Accept-Encoding": "identity"}  # downloads: the bytes counted are the bytes of the file


class AnalyticsClientHook(BaseHook):
    """Authenticated access to the service, with retries and rate limits handled inside.

    ``clock`` and ``sleep`` are how the hook tells time and waits (retries, quotas, polls);
    tests swap both. A ``deadline`` given to :meth:`call` is a time on ``clock``.
    """

    conn_name_attr = "analytics_conn_id"
    default_conn_name = "analytics_default"
    conn_type = "analytics"
    hook_name = "Analytics Service"
    sleep = staticmethod(time.sleep)
    clock = staticmethod(time.monotonic)

    def __init__(
        self,
        analytics_conn_id: str = default_conn_name,
        *,
        retry_policy: RetryPolicy | None = None,
        max_attempts: int | None = None,
        max_retry_time: float | None = None,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.analytics_conn_id = analytics_conn_id
        self.retry_policy = (retry_policy or RetryPolicy()).with_overrides(max_attempts, max_retry_time)
        self.options = TransportOptions(connect_timeout=connect_timeout, read_timeout=timeout)
        self._quotas: dict[str, SyncQuota] = {}
        self._quotas_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(analytics_conn_id={self.analytics_conn_id!r})"

    @cached_property
    def settings(self) -> ConnectionSettings:
        from airflow.sdk.log import mask_secret

        conn = self.get_connection(self.analytics_conn_id)
        if conn.password:
            mask_secret(conn.password)
        settings = ConnectionSettings.from_connection(conn, self.analytics_conn_id)
        mask_secret(settings.api_key)
        return self.options.apply(settings)

    @cached_property
    def session(self) -> requests.Session:
        """Shared connections; the key is never a session default, so no redirect can carry it."""
        session = requests.Session()
        session.headers.update({"User-Agent": USER_AGENT, "Accept": "application/json"})
        return session

    def quota(self, endpoint: str) -> SyncQuota:
        """The quota of one endpoint (``"GET /jobs/{id}"``), shared by the hook's threads."""
        with self._quotas_lock:
            if endpoint not in self._quotas:
                self._quotas[endpoint] = SyncQuota(clock=lambda: self.clock())
            return self._quotas[endpoint]

    @property
    def rate_limits(self) -> dict[str, RateLimit]:
        """The latest ``RateLimit-*`` values per endpoint (``"GET /jobs/{id}"``)."""
        return {ep: q.state.latest for ep, q in list(self._quotas.items()) if q.state.latest is not None}

    def close(self) -> None:
        if "session" in self.__dict__:
            self.session.close()

    # -- calls ---------------------------------------------------------------------------------

    def call(
        self,
        name: str,
        *path_args: Any,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        retry_policy: RetryPolicy | None = None,
        deadline: float | None = None,
    ) -> Any:
        """Run the operation ``name`` of the API table and return its unwrapped result.

        ``deadline`` (a time on :attr:`clock`) bounds the whole call, retries and waits
        included: see :mod:`analytics_provider.api.retry`.
        """
        request = build_request(name, path_args, query, body)
        return self._run(request, self._send, retry_policy, deadline)

    def paginate(self, name: str, query: Mapping[str, Any]) -> Pages:
        """A lazy iterator over a list operation's items; the options are checked now."""
        op = operation(name)
        given = {k: v for k, v in query.items() if v is not None}
        encode_query(op, given)
        first_after, first_before = given.pop("after", None), given.pop("before", None)
        if first_after is not None and first_before is not None:
            raise AnalyticsParameterError(f"{name}: give after (walk forward) or before (walk back), not both")
        cursor_name = "after" if first_before is None else "before"

        def fetch(cursor: str | None) -> Mapping[str, Any]:
            page: Mapping[str, Any] = self.call(name, query={**given, cursor_name: cursor} if cursor else given)
            return page

        assert op.items_key is not None
        first = first_after if first_before is None else first_before
        return Pages(fetch, op.items_key, after=first, operation=name, backwards=first_before is not None)

    def _run(
        self,
        request: ApiRequest,
        attempt: Callable[..., Any],
        retry_policy: RetryPolicy | None,
        deadline: float | None,
        *args: Any,
    ) -> Any:
        plan = CallPlan(retry_policy or self.retry_policy, request, deadline, self.clock)
        retrying = tenacity.Retrying(sleep=self.sleep, **plan.tenacity_kwargs())
        try:
            return retrying(attempt, request, plan, *args)
        except AnalyticsApiError as exc:
            final = plan.final_error(exc)
            if final is exc:
                raise
            raise final from exc

    def _send(
        self,
        request: ApiRequest,
        plan: CallPlan,
        data: Any = None,
        headers_extra: Mapping[str, str] | None = None,
    ) -> Any:
        """One attempt: the request's JSON body, or ``data`` (a stream or bytes) with its headers."""
        url = self.settings.url(request.path)
        payload: dict[str, Any] = {"json": request.json} if data is None else {"data": data}
        with self._exchange(request, url, plan, headers_extra, params=request.params, **payload) as response:
            limit = None if response.ok else MAX_ERROR_BODY
            body = b"".join(self._stream(response, request, plan, AnalyticsTransportError, limit))
        return parse_response(request, response.status_code, response.headers, body, secrets=self._secrets())

    def _secrets(self) -> tuple[str, ...]:
        return (self.settings.api_key,)

    def _exchange(
        self,
        request: ApiRequest,
        url: str,
        plan: CallPlan,
        headers_extra: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        """One HTTP exchange up to the answer's headers (the body is streamed by the caller).

        Waits its turn in the endpoint's quota first (requests to the service only), and caps the
        connect and read timeouts by the time left before the deadline.
        """
        settings = self.settings
        same_origin = settings.is_same_origin(url)
        quota = self.quota(request.operation.endpoint) if same_origin else None
        if quota is not None:
            quota.acquire(self.sleep, plan.quota_wait_allowed)
        headers: Mapping[str, str] | None = None
        try:
            response = self.session.request(
                request.method,
                url,
                headers={**settings.auth_headers(url), **(headers_extra or {})},
                timeout=settings.timeouts(plan.left()),
                allow_redirects=False,
                stream=True,
                **kwargs,
            )
            headers = response.headers
        except AnalyticsDeadlineExceeded:
            raise
        except Exception as exc:  # every library error is wrapped: none may quote a header
            raise self._transport_error(exc, request, plan, sent=_was_sent(exc)) from None
        finally:
            if quota is not None:
                quota.answered(headers)
        if quota is not None and response.status_code == 429:
            quota.exhausted(parse_retry_after(response.headers))
        return response

    def _stream(
        self,
        response: requests.Response,
        request: ApiRequest,
        plan: CallPlan,
        error: type[AnalyticsTransportError],
        limit: int | None = None,
    ) -> Iterator[bytes]:
        """The body as it arrives; each read is bounded by the deadline, so a trickle cannot hold
        the call past it. Reading stops after ``limit`` bytes."""
        raw = response.raw
        received = 0
        while limit is None or received < limit:
            left = plan.left()
            try:
                if left is not None:
                    _set_read_timeout(response, min(self.settings.read_timeout, left))
                chunk = raw.read1(CHUNK_SIZE, decode_content=True)
            except Exception as exc:
                failure = self._transport_error(exc, request, plan, sent=True, cls=error)
                raise failure from None
            if not chunk:
                return
            received += len(chunk)
            yield chunk

    def _transport_error(
        self,
        exc: BaseException,
        request: ApiRequest,
        plan: CallPlan,
        *,
        sent: bool,
        cls: type[AnalyticsTransportError] = AnalyticsTransportError,
    ) -> AnalyticsApiError:
        failure = cls.from_exception(
            exc, sent=sent, method=request.method, path=request.path, secrets=self._secrets_if_known()
        )
        if plan.deadline is not None and self.clock() >= plan.deadline - 0.01:
            return AnalyticsDeadlineExceeded(
                "the deadline passed while waiting for the answer", last_error=failure,
                method=request.method, path=request.path,
            )
        return failure

    def _secrets_if_known(self) -> tuple[str, ...]:
        settings = self.__dict__.get("settings")
        return (settings.api_key,) if settings is not None else ()

    # -- jobs ----------------------------------------------------------------------------------

    def wait_for_job(
        self,
        job_id: int,
        *,
        poll_interval: float = 5.0,
        timeout: float = 3600.0,
        max_outage: float = DEFAULT_MAX_OUTAGE,
    ) -> JobState:
        """Poll a job until it is final and return its state (:mod:`~analytics_provider.api.follow`).

        Follows ``already_existed``; outlasts transient failures for ``max_outage`` seconds.
        Raises :class:`AnalyticsJobTimeout` when it is still pending after ``timeout`` seconds
        (no read or sleep goes past that), :class:`AnalyticsJobError` when it cannot be waited on.
        """
        watch = JobWatch(job_id, poll_interval=poll_interval, deadline=self.clock() + timeout,
                         max_outage=max_outage, clock=self.clock)
        result = drive(watch, self.look_at_job, self.sleep)
        assert result is not None
        return final_state(result)

    def look_at_job(self, read: Read) -> Any:
        """One read of a wait (no retries: the wait outlasts failures), over by the read's deadline."""
        deadline = None if math.isinf(read.deadline) else read.deadline
        return self.call("get_job", read.job_id, retry_policy=ONE_LOOK, deadline=deadline)

    # -- downloads -----------------------------------------------------------------------------

    def download_export(
        self, job_id: int, destination: Destination, *, file_mode: int | None = None, deadline: float | None = None
    ) -> dict[str, Any]:
        """Download an export job's file to ``destination`` (a local path or an ObjectStoragePath).

        The destination is checked first (see :func:`~analytics_provider.hooks.download.check_destination`).
        Streams in chunks, asks for the file uncompressed (``identity``) from the first request,
        follows the redirect to the file's host without the key, checks the bytes that arrived
        against ``Content-Length`` and writes atomically; an incomplete transfer is retried. The
        file gets the mode a plain write would give (``0666`` less the umask) unless
        ``file_mode`` says another. Returns ``{"path", "bytes", "content_type"}``.
        """
        check_destination(destination)
        request = build_request("download_export", query={"job_id": job_id})
        return self._run(request, self._download, None, deadline, destination, file_mode)

    def _download(
        self, request: ApiRequest, plan: CallPlan, destination: Destination, file_mode: int | None
    ) -> dict[str, Any]:
        url = self.settings.url(request.path)
        response = self._exchange(request, url, plan, params=request.params, headers_extra=IDENTITY)
        for _ in range(MAX_REDIRECTS):
            if not response.is_redirect:
                break
            url = urljoin(response.url, response.headers["Location"])
            response.close()
            response = self._exchange(request, url, plan, headers_extra=IDENTITY)
        job_id = dict(request.params)["job_id"]
        with response:
            if response.is_redirect:
                raise AnalyticsTransportError(f"more than {MAX_REDIRECTS} redirects from {request.describe()}")
            if not 200 <= response.status_code < 300:
                body = b"".join(self._stream(response, request, plan, AnalyticsTransportError, MAX_ERROR_BODY))
                if not self.settings.is_same_origin(url):
                    raise _file_host_error(response.status_code, body, url, job_id)
                parse_response(request, response.status_code, response.headers, body, secrets=self._secrets())
            expected = response.headers.get("Content-Length")
            path, size = save_stream(
                self._stream(response, request, plan, IncompleteDownloadError),
                destination,
                expected_bytes=int(expected) if expected and expected.isdigit() else None,
                arrived=response.raw.tell,
                suggested_name=filename_from_disposition(response.headers.get("Content-Disposition"))
                or f"export-{job_id}",
                what=f"export of job {job_id}",
                file_mode=file_mode,
            )
        content_type = response.headers.get("Content-Type", "application/octet-stream").split(";")[0].strip()
        return {"path": path, "bytes": size, "content_type": content_type}

    # -- connection test -------------------------------------------------------------------------

    def test_connection(self) -> tuple[bool, str]:
        """Ask the service who the key belongs to; a failure names the field or the answer."""
        try:
            user = self.call("get_current_user", retry_policy=RetryPolicy(max_attempts=2, max_elapsed=10))
        except ConnectionConfigError as exc:
            return False, exc.reason  # the UI tests under a temporary connection id: name the field only
        except Exception as exc:
            return False, str(exc)
        return True, f"Connected as {user.get('email')} (role {user.get('role')})"


def _file_host_error(status: int, body: bytes, url: str, job_id: str) -> AnalyticsApiError:
    """The error of the file host behind the download redirect: it, not the API, refused."""
    parts = urlsplit(url)
    error = error_from_response(status, body, method="GET", path=f"{parts.scheme}://{parts.netloc}{parts.path}")
    error.message = (
        f"the file host refused the signed download link of job {job_id}'s export "
        f"(the link may have expired; download again to get a new one): {error.message}"
    )
    error.args = (error._text(),)
    return error


def _set_read_timeout(response: requests.Response, seconds: float) -> None:
    """Bound the next read of a streamed answer (the socket is urllib3's; absent when pooled)."""
    sock = getattr(getattr(response.raw, "_connection", None), "sock", None)
    if sock is not None:
        sock.settimeout(max(seconds, 0.001))


def _was_sent(exc: BaseException) -> bool:
    """False only when the request surely never reached the service (no connection was made)."""
    from urllib3.exceptions import NewConnectionError

    if isinstance(exc, requests.ConnectTimeout):
        return False
    if not isinstance(exc, requests.RequestException) or isinstance(exc, requests.exceptions.InvalidHeader):
        return not isinstance(exc, (ValueError, UnicodeError))  # refused before sending
    reason = exc.args[0] if exc.args else None
    reason = getattr(reason, "reason", reason)
    return not isinstance(reason, NewConnectionError)
