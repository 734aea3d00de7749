"""The hook's machinery: connection, ``requests`` transport, retries, rate limits, downloads.

:class:`~analytics_provider.hooks.analytics.AnalyticsHook` adds one small method per operation
on top of :meth:`AnalyticsClientHook.call`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import Any
from urllib.parse import urljoin

import requests
import tenacity
from airflow.sdk import BaseHook

from analytics_provider import __version__
from analytics_provider.api.follow import DEFAULT_MAX_OUTAGE, ONE_LOOK, JobWatch, Read, drive, final_state
from analytics_provider.api.jobs import JobState
from analytics_provider.api.operations import operation
from analytics_provider.api.pagination import Pages
from analytics_provider.api.ratelimit import RateLimit, RateLimitTracker
from analytics_provider.api.request import ApiRequest, build_request, encode_query, parse_response
from analytics_provider.api.retry import RetryPolicy
from analytics_provider.api.settings import ConnectionSettings
from analytics_provider.exceptions import AnalyticsTransportError, IncompleteDownloadError
from analytics_provider.hooks.download import CHUNK_SIZE, Destination, filename_from_disposition, save_stream

log = logging.getLogger(__name__)

USER_AGENT = f"airflow-provider-analytics/{__version__}"
MAX_REDIRECTS = 5


class AnalyticsClientHook(BaseHook):
    """Authenticated access to the service, with retries and rate limits handled inside."""

    conn_name_attr = "analytics_conn_id"
    default_conn_name = "analytics_default"
    conn_type = "analytics"
    hook_name = "Analytics Service"
    sleep = staticmethod(time.sleep)  # how the hook waits (retries, quotas, polls); tests swap both
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
        policy = retry_policy or RetryPolicy()
        if max_attempts:
            policy = dataclasses.replace(policy, max_attempts=max_attempts)
        if max_retry_time:
            policy = dataclasses.replace(policy, max_elapsed=max_retry_time)
        self.retry_policy = policy
        self._timeouts = (connect_timeout, timeout)
        self.rate_limit_tracker = RateLimitTracker()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(analytics_conn_id={self.analytics_conn_id!r})"

    @cached_property
    def settings(self) -> ConnectionSettings:
        from airflow.sdk.log import mask_secret

        conn = self.get_connection(self.analytics_conn_id)
        settings = ConnectionSettings.from_connection(conn, self.analytics_conn_id)
        mask_secret(settings.api_key)
        connect, read = self._timeouts
        if connect or read:
            settings = ConnectionSettings(
                settings.base_url,
                settings.api_key,
                settings.header_name,
                connect or settings.connect_timeout,
                read or settings.read_timeout,
            )
        return settings

    @cached_property
    def session(self) -> requests.Session:
        """Shared connections; the key is never a session default, so no redirect can carry it."""
        session = requests.Session()
        session.headers.update(
            {"User-Agent": USER_AGENT, "Accept": "application/json"}
        )
        return session

    @property
    def rate_limits(self) -> dict[str, RateLimit]:
        """The latest ``RateLimit-*`` values per endpoint (``"GET /jobs/{id}"``)."""
        return self.rate_limit_tracker.snapshot()

    def close(self) -> None:
        if "session" in self.__dict__:
            self.session.close()

    # -- calls ---------------------------------------------------------------------------------

    def call(self, name: str, *path_args: Any, query: Mapping[str, Any] | None = None, body: Any = None) -> Any:
        """Run the operation ``name`` of the API table and return its unwrapped result."""
        request = build_request(name, path_args, query, body)
        return self._retrying(request)(self._send, request)

    def paginate(self, name: str, query: Mapping[str, Any]) -> Pages:
        """A lazy iterator over a list operation's items; the options are checked now."""
        op = operation(name)
        given = {k: v for k, v in query.items() if v is not None}
        encode_query(op, given)
        first_after = given.pop("after", None)

        def fetch(after: str | None) -> Mapping[str, Any]:
            page: Mapping[str, Any] = self.call(name, query={**given, "after": after} if after else given)
            return page

        assert op.items_key is not None
        return Pages(fetch, op.items_key, after=first_after)

    def _retrying(self, request: ApiRequest) -> tenacity.Retrying:
        return tenacity.Retrying(sleep=self.sleep, **self.retry_policy.tenacity_kwargs(request.operation))

    def _send(self, request: ApiRequest) -> Any:
        response = self._http(request, self.settings.url(request.path), params=request.params, json=request.json)
        return parse_response(request, response.status_code, response.headers, response.content)

    def _http(
        self, request: ApiRequest, url: str, headers_extra: Mapping[str, str] | None = None, **kwargs: Any
    ) -> requests.Response:
        """One HTTP exchange: waits out a spent quota first, records the quota after."""
        endpoint = request.operation.endpoint
        same_origin = self.settings.is_same_origin(url)
        if same_origin and (delay := self.rate_limit_tracker.delay(endpoint)) > 0:
            log.info("Quota of %s spent; waiting %.1f s for its reset", endpoint, delay)
            self.sleep(delay)
        headers = {self.settings.header_name: self.settings.api_key} if same_origin else {}
        headers.update(headers_extra or {})
        try:
            response = self.session.request(
                request.method,
                url,
                headers=headers,
                timeout=(self.settings.connect_timeout, self.settings.read_timeout),
                allow_redirects=False,
                **kwargs,
            )
        except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
            raise AnalyticsTransportError(
                f"{type(exc).__name__}: {exc}", sent=_was_sent(exc), method=request.method, path=request.path
            ) from exc
        if same_origin:
            self.rate_limit_tracker.record(endpoint, response.headers)
        return response

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

    def download_export(self, job_id: int, destination: Destination) -> dict[str, Any]:
        """Download an export job's file to ``destination`` (a local path or an ObjectStoragePath).

        Streams in chunks, follows the redirect to the file's host without the key, checks the
        size against ``Content-Length`` and writes atomically; an incomplete transfer is retried.
        Returns ``{"path", "bytes", "content_type"}``.
        """
        request = build_request("download_export", query={"job_id": job_id})
        return self._retrying(request)(self._download, request, destination)

    def _download(self, request: ApiRequest, destination: Destination) -> dict[str, Any]:
        url = self.settings.url(request.path)
        response = self._http(request, url, params=request.params, stream=True)
        for _ in range(MAX_REDIRECTS):
            if not response.is_redirect:
                break
            url = urljoin(response.url, response.headers["Location"])
            response.close()
            # identity: the byte count must match Content-Length, which a decompressed body would not
            response = self._http(request, url, stream=True, headers_extra={"Accept-Encoding": "identity"})
        with response:
            if response.is_redirect:
                raise AnalyticsTransportError(f"more than {MAX_REDIRECTS} redirects from {request.describe()}")
            if not 200 <= response.status_code < 300:
                parse_response(request, response.status_code, response.headers, response.content)
            expected = response.headers.get("Content-Length")
            path, size = save_stream(
                _chunks(response, request),
                destination,
                expected_bytes=int(expected) if expected and expected.isdigit() else None,
                suggested_name=filename_from_disposition(response.headers.get("Content-Disposition"))
                or f"export-{dict(request.params)['job_id']}",
                what=f"export of job {dict(request.params)['job_id']}",
            )
        content_type = response.headers.get("Content-Type", "application/octet-stream").split(";")[0].strip()
        return {"path": path, "bytes": size, "content_type": content_type}

    # -- connection test -------------------------------------------------------------------------

    def test_connection(self) -> tuple[bool, str]:
        """Ask the service who the key belongs to."""
        try:
            user = self.call("get_current_user")
        except Exception as exc:
            return False, str(exc)
        return True, f"Connected as {user.get('email')} (role {user.get('role')})"


def _chunks(response: requests.Response, request: ApiRequest) -> Iterator[bytes]:
    try:
        yield from response.iter_content(chunk_size=CHUNK_SIZE)
    except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError, requests.Timeout) as exc:
        raise IncompleteDownloadError(
            f"the download broke off: {exc}", method=request.method, path=request.path
        ) from exc


def _was_sent(exc: Exception) -> bool:
    """False only when the request surely never reached the service (no connection was made)."""
    from urllib3.exceptions import NewConnectionError

    if isinstance(exc, requests.ConnectTimeout):
        return False
    reason = exc.args[0] if exc.args else None
    reason = getattr(reason, "reason", reason)
    return not isinstance(reason, NewConnectionError)
