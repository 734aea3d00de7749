"""The hook's machinery: the connection, a ``requests`` driver, waits and downloads.

:class:`~analytics_provider.hooks.analytics.AnalyticsHook` adds one small method per operation
on top of :meth:`AnalyticsClientHook.call`. The rules of a call (retries, quotas, deadlines,
errors) are :mod:`analytics_provider.api.call.exchange`'s; the hook holds its driver
(:class:`~analytics_provider.hooks.sync_client.AnalyticsClient`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import cached_property
from typing import Any
from urllib.parse import urljoin, urlsplit

from airflow.providers.common.compat.sdk import BaseHook

from analytics_provider.api.call.events import Steps
from analytics_provider.api.call.exchange import Exchange
from analytics_provider.api.call.limits import DownloadLimits, download_overrides
from analytics_provider.api.call.quota import Quota, RateLimit
from analytics_provider.api.call.request import build_request, encode_query
from analytics_provider.api.call.retry import RetryPolicy
from analytics_provider.api.call.settings import (
    USER_AGENT,
    ConnectionConfigError,
    ConnectionSettings,
    TransportOptions,
    mask_secret,
)
from analytics_provider.api.jobs.status import JobState
from analytics_provider.api.jobs.wait import JobWatch, WaitResult, final_state, first_look, follow_job
from analytics_provider.api.wire.choices import DEFAULT_MAX_OUTAGE, wait_argument_problem
from analytics_provider.api.wire.operations import operation
from analytics_provider.api.wire.pagination import Pages
from analytics_provider.exceptions import (
    AnalyticsApiError,
    AnalyticsDeadlineExceeded,
    AnalyticsParameterError,
    IncompleteDownloadError,
    error_from_response,
)
from analytics_provider.file_modes import check_file_mode
from analytics_provider.hooks.completeness import content_coding, decoded, wire_length
from analytics_provider.hooks.disposition import filename_from_disposition
from analytics_provider.hooks.download import Destination, check_destination, save_stream
from analytics_provider.hooks.sync_client import AnalyticsClient

__all__ = ["USER_AGENT", "AnalyticsClientHook"]

MAX_REDIRECTS = 5
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
        self.options = TransportOptions(connect_timeout=connect_timeout, read_timeout=timeout)
        self.client = AnalyticsClient(
            lambda: self.settings,
            (retry_policy or RetryPolicy()).with_overrides(max_attempts, max_retry_time),
            clock=lambda: self.clock(),
            sleep=lambda seconds: self.sleep(seconds),
        )

    @property
    def retry_policy(self) -> RetryPolicy:
        """The policy of every call that names none (the client's)."""
        return self.client.retry_policy

    @retry_policy.setter
    def retry_policy(self, policy: RetryPolicy) -> None:
        self.client.retry_policy = policy

    def __repr__(self) -> str:
        return f"{type(self).__name__}(analytics_conn_id={self.analytics_conn_id!r})"

    @cached_property
    def settings(self) -> ConnectionSettings:
        conn = self.get_connection(self.analytics_conn_id)
        if conn.password:
            mask_secret(conn.password)  # as saved, whitespace and all
        settings = self.options.apply(ConnectionSettings.from_connection(conn, self.analytics_conn_id)).masked()
        settings.network.warn_if_unverified(self.analytics_conn_id, urlsplit(settings.base_url).hostname or "")
        return settings

    def quota(self, endpoint: str) -> Quota:
        """The quota of one endpoint (``"GET /jobs/{id}"``), shared by the hook's threads."""
        return self.client.quota(endpoint)

    @property
    def rate_limits(self) -> dict[str, RateLimit]:
        """The latest ``RateLimit-*`` values per endpoint (``"GET /jobs/{id}"``)."""
        quotas = list(self.client.quotas.items())
        return {ep: q.state.latest for ep, q in quotas if q.state.latest is not None}

    def close(self) -> None:
        self.client.close()

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
        included: see :mod:`analytics_provider.api.call.retry`.
        """
        return self.client.call(name, *path_args, query=query, body=body, retry_policy=retry_policy,
                                deadline=deadline)

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

    # -- jobs ----------------------------------------------------------------------------------

    def wait_for_job(
        self,
        job_id: int,
        *,
        poll_interval: float = 5.0,
        timeout: float = 3600.0,
        max_outage: float = DEFAULT_MAX_OUTAGE,
    ) -> JobState:
        """Poll a job until it is final and return its state (:mod:`~analytics_provider.api.jobs.wait`).

        Follows ``already_existed``; outlasts transient failures for ``max_outage`` seconds.
        Raises :class:`AnalyticsJobTimeout` when it is still pending after ``timeout`` seconds
        (no read or sleep goes past that), :class:`AnalyticsJobError` when it cannot be waited on.
        """
        for name, value in (("poll_interval", poll_interval), ("timeout", timeout), ("max_outage", max_outage)):
            if wait_argument_problem(name, value):
                raise AnalyticsParameterError(f"wait_for_job: {name} must be {wait_argument_problem(name, value)}, "
                                              f"got {value!r}")
        watch = JobWatch(job_id, poll_interval=poll_interval, deadline=self.clock() + timeout,
                         max_outage=max_outage, clock=self.clock)
        return final_state(self.client.run(follow_job(watch)))

    def look_at_job(self, watch: JobWatch) -> WaitResult | None:
        """One look of a wait that spans pokes or tries (:func:`~analytics_provider.api.jobs.wait.first_look`):
        how it ended, or None while it goes on (``watch`` keeps what the look learnt)."""
        return self.client.run(first_look(watch))

    # -- downloads -----------------------------------------------------------------------------

    def download_export(
        self, job_id: int, destination: Destination, *, file_mode: int | None = None, deadline: float | None = None,
        max_download_bytes: int | None = None, max_decode_ratio: float | None = None,
        max_download_seconds: float | None = None,
    ) -> dict[str, Any]:
        """Download an export job's file to ``destination`` (a local path or an ObjectStoragePath).

        ``file_mode`` and the destination are checked first, before any request (see
        :func:`~analytics_provider.hooks.download.check_destination`).
        Streams in chunks, asks for the file uncompressed (``identity``) from the first request,
        follows the redirect to the file's host without the key, checks the bytes that arrived
        against ``Content-Length`` and writes atomically; an incomplete transfer is retried. The
        file gets the mode a plain write would give (``0666`` less the umask) unless
        ``file_mode`` says another. The file is decoded in bounded pieces and refused
        (:class:`~analytics_provider.exceptions.DownloadTooLargeError`, before it replaces
        anything) past ``max_download_bytes`` decoded or ``max_decode_ratio`` times the bytes
        received (the connection's, or :mod:`~analytics_provider.api.call.limits`' defaults, when
        None); a download (retries included) that takes past ``max_download_seconds`` is refused
        (:class:`~analytics_provider.exceptions.DownloadTooSlowError`) the same way. Returns
        ``{"path", "bytes", "content_type"}``.
        """
        check_file_mode(file_mode)
        overrides = download_overrides(max_download_bytes, max_decode_ratio, max_download_seconds, "download_export")
        check_destination(destination)
        request = build_request("download_export", query={"job_id": job_id})
        exchange = self.client.exchange(request, deadline=deadline)
        limits = exchange.settings.download_limits.with_overrides(*overrides, "the operator's argument")
        exchange.plan.deadline = ends = limits.deadline(exchange.plan.clock(), deadline)  # retries included
        try:
            return self.client.run(exchange.retried(lambda: self._download(exchange, destination, file_mode, limits)))
        except AnalyticsDeadlineExceeded:
            if ends != deadline and exchange.plan.clock() >= ends - 0.01:  # the download's own limit ended it
                raise limits.too_slow(f"export of job {job_id}", str(destination)) from None
            raise

    def _download(
        self, exchange: Exchange, destination: Destination, file_mode: int | None, limits: DownloadLimits
    ) -> Steps[dict[str, Any]]:
        answer = yield from exchange.send(headers=IDENTITY, stream=True)
        for _ in range(MAX_REDIRECTS):
            if answer.status not in (301, 302, 303, 307, 308) or "Location" not in answer.headers:
                break
            answer.raw.close()
            answer = yield from exchange.send(urljoin(answer.url, answer.headers["Location"]),
                                              headers=IDENTITY, stream=True)
        job_id = dict(exchange.request.params)["job_id"]
        with answer.raw:
            if answer.status in (301, 302, 303, 307, 308):
                raise AnalyticsApiError(  # final: the file host would send the same redirects again
                    f"export of job {job_id}: more than {MAX_REDIRECTS} redirects (the last from "
                    f"{urlsplit(answer.url).hostname}); not retried", status=answer.status,
                    error_type="TooManyRedirects", method=exchange.request.method, path=exchange.request.path)
            if not 200 <= answer.status < 300:
                limit = exchange.settings.body_limit.to_read(answer.status, answer.headers)
                answer.body = b"".join(self.client.iter_body(answer, exchange, limit=limit))
                if not exchange.settings.is_same_origin(answer.url):
                    raise _file_host_error(answer.status, answer.body, answer.url, job_id)
                exchange.result(answer)
            what, coding = f"export of job {job_id}", content_coding(answer.headers)
            expected = wire_length(answer.headers, what)
            limits.check_declared(expected, coding, what, str(destination))
            path, size = save_stream(
                decoded(self.client.iter_body(answer, exchange, IncompleteDownloadError, decode=False), coding, what,
                        limits=limits, destination=str(destination), received=answer.raw.raw.tell),
                destination,
                expected_bytes=expected,
                arrived=answer.raw.raw.tell,
                suggested_name=filename_from_disposition(answer.headers.get("Content-Disposition"))
                or f"export-{job_id}",
                what=what,
                file_mode=file_mode,
            )
        content_type = answer.headers.get("Content-Type", "application/octet-stream").split(";")[0].strip()
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
