"""One API call without I/O: every rule of a call, written once for both transports.

An :class:`Exchange` is one call in progress. Its methods are generators of the events of
:mod:`~analytics_provider.api.call.events` (pause, await a quota probe, send), as a wait
(:mod:`~analytics_provider.api.jobs.wait`) is, and receive what the driver got.
:meth:`Exchange.call` is a whole call: the quota turn, the request, what the answer or failure
means, retry or not and for how long, the error to raise. :meth:`Exchange.send` is
one raw exchange (uploads and downloads build their attempts on it) and :meth:`Exchange.retried`
runs any attempt under the call's retry policy and deadline.

The drivers, ``AnalyticsClient`` (``requests``) and ``AsyncAnalyticsClient`` (``aiohttp``),
only carry the events out.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import tenacity

from analytics_provider.api.call.events import Answer, Failure, Pause, Send, Steps
from analytics_provider.api.call.limits import BodyPastItsBound, HeadNotRead
from analytics_provider.api.call.quota import Quota, parse_retry_after
from analytics_provider.api.call.request import ApiRequest, parse_response
from analytics_provider.api.call.retry import Clock, RetryPolicy, is_retryable
from analytics_provider.api.call.settings import ConnectionSettings
from analytics_provider.exceptions import (
    AnalyticsApiError,
    AnalyticsDeadlineExceeded,
    AnalyticsTlsError,
    AnalyticsTransportError,
    CodingError,
    RateLimitExceedError,
    UndecodableAnswerError,
    cause_of,
    tls_problem,
)

T = TypeVar("T")


class CallPlan:
    """One call's retries under its policy and deadline; shared by both transports.

    ``left()`` is the time an attempt may take; ``tenacity_kwargs()`` adds a stop before any
    backoff that would pass the deadline; ``final_error()`` turns the error of a call that the
    deadline ended into :class:`AnalyticsDeadlineExceeded`.
    """

    __slots__ = ("clock", "deadline", "deadline_stopped", "op", "policy", "request")

    def __init__(self, policy: RetryPolicy, request: ApiRequest, deadline: float | None, clock: Clock) -> None:
        self.policy = policy
        self.request = request
        self.op = request.operation
        self.deadline = deadline
        self.clock = clock
        self.deadline_stopped = False

    def left(self) -> float | None:
        """Seconds left before the deadline (None: no deadline); raises when none are left."""
        if self.deadline is None:
            return None
        left = self.deadline - self.clock()
        if left <= 0:
            raise AnalyticsDeadlineExceeded(
                "the deadline passed before the request could be sent", method=self.op.method, path=self.request.path
            )
        return left

    def quota_wait_allowed(self, delay: float) -> float | None:
        """Refuse a quota wait that would pass the deadline (or, without one, outlast the call's
        retry time); return the seconds left (None: no deadline)."""
        left = self.left()
        if left is not None and delay >= left:
            raise AnalyticsDeadlineExceeded(
                f"the quota of {self.op.endpoint} is spent for {delay:.1f} s more, past the deadline",
                method=self.op.method, path=self.request.path,
            )
        if left is None and delay > self.policy.max_elapsed:  # with a deadline, the deadline rules
            raise RateLimitExceedError(
                f"the quota of {self.op.endpoint} is spent for {delay:.1f} s more, "
                f"longer than this call may wait ({self.policy.max_elapsed:g} s)",
                status=429,
                method=self.op.method,
                path=self.request.path,
                retry_after=delay,
            )
        return left

    def tenacity_kwargs(self) -> dict[str, Any]:
        kwargs = self.policy.tenacity_kwargs(self.op)
        if self.deadline is not None:
            kwargs["stop"] = kwargs["stop"] | self._past_deadline
        return kwargs

    def _past_deadline(self, retry_state: tenacity.RetryCallState) -> bool:
        assert self.deadline is not None
        if self.clock() + retry_state.upcoming_sleep < self.deadline:
            return False
        self.deadline_stopped = True
        return True

    def final_error(self, exc: BaseException) -> BaseException:
        """The error the call raises: ``exc``, or a deadline error carrying it."""
        if self.deadline_stopped and not isinstance(exc, AnalyticsDeadlineExceeded) and is_retryable(exc, self.op):
            return AnalyticsDeadlineExceeded(
                "the next retry would come after the deadline", last_error=exc,
                method=self.op.method, path=self.request.path,
            )
        return exc


@dataclass(slots=True, eq=False)
class Exchange:
    """One call: its request, the connection's settings, its plan (policy, deadline, clock) and
    the quotas of the transport (``quota_of(endpoint)``)."""

    request: ApiRequest
    settings: ConnectionSettings
    plan: CallPlan
    quota_of: Callable[[str], Quota]

    def call(self) -> Steps[Any]:
        """The whole call: its unwrapped result, or the error it ends in."""
        try:  # the first attempt inline: every poll of a wait runs this and nothing more
            answer = yield from self.send()
            return self.result(answer)
        except Exception as exc:
            first = exc
        return (yield from self._retry(self.once, first))

    def once(self) -> Steps[Any]:
        """One attempt of a JSON call."""
        answer = yield from self.send()
        return self.result(answer)

    def retried(self, attempt: Callable[[], Steps[T]]) -> Steps[T]:
        """``attempt`` under the retry policy and the deadline; a first attempt that succeeds
        builds no retry machinery."""
        try:
            return (yield from attempt())
        except Exception as exc:
            first = exc
        return (yield from self._retry(attempt, first))

    def _retry(self, attempt: Callable[[], Steps[T]], first: Exception) -> Steps[T]:
        """The attempts after a ``first`` that failed, as tenacity decides them."""
        if self.plan.policy.max_attempts == 1 or not is_retryable(first, self.request.operation):
            raise first
        retrying = tenacity.Retrying(**self.plan.tenacity_kwargs())
        retrying.begin()
        state = tenacity.RetryCallState(retrying, fn=None, args=(), kwargs={})
        retrying.iter(state)  # the first attempt, already made
        state.set_exception((type(first), first, first.__traceback__))
        try:
            while True:
                action = retrying.iter(state)
                if isinstance(action, tenacity.DoAttempt):
                    try:
                        state.set_result((yield from attempt()))
                    except Exception as exc:
                        state.set_exception((type(exc), exc, exc.__traceback__))
                elif isinstance(action, tenacity.DoSleep):
                    state.prepare_for_next_attempt()
                    yield Pause(float(action))
                else:
                    return action
        except AnalyticsApiError as exc:
            final = self.plan.final_error(exc)
            if final is exc:
                raise
            raise final from exc

    def send(
        self,
        url: str | None = None,
        *,
        data: Any = None,
        headers: Mapping[str, str] | None = None,
        stream: bool = False,
    ) -> Steps[Answer]:
        """One exchange with no retry: the quota's turn (requests to the service only), the
        request with the key only for the service's host, the answer taught to the quota.
        ``url`` is another address than the request's own (a redirect). Returns the
        :class:`Answer` whatever its status; raises the transport's failure."""
        settings, request, plan = self.settings, self.request, self.plan
        params = request.params or None if url is None else None  # a redirect's URL carries its own
        if not url:  # the request's own address: the service's, its proxy known
            url, ours, proxy = settings.base_url + request.path, True, settings.api_proxy
        else:
            ours, proxy = settings.is_same_origin(url), settings.network.proxy_for(url)
        key = settings.key_header if ours else {}  # the key goes to the service only
        quota = self.quota_of(request.operation.endpoint) if ours else None
        if quota is not None:
            yield from quota.turn(plan.quota_wait_allowed)
        left = plan.left()
        connect, read = settings.connect_timeout, settings.read_timeout
        bound = left  # an API answer comes whole within connect + read timeout; an upload or a download per read
        head = connect + read if left is None or left > connect + read else left  # any answer's head too
        if data is None and not stream:
            bound = head
        if left is not None:  # neither timeout outlasts the deadline
            connect, read = min(connect, max(left, 0.001)), min(read, max(left, 0.001))
        sent = Send(
            method=request.operation.method,
            url=url,
            headers={**key, **headers} if headers else key,
            timeout=(connect, read),
            left=bound,
            network=settings.network,
            proxy=proxy,
            params=params,
            json=request.json if data is None else None,
            data=data,
            stream=stream,
            body_limit=settings.body_limit,
            head_within=head,
        )
        outcome = yield sent
        if quota is not None:
            quota.answered(outcome.headers if isinstance(outcome, Answer) else None)
            if isinstance(outcome, Answer) and outcome.status == 429:
                quota.exhausted(parse_retry_after(outcome.headers))
        if isinstance(outcome, Failure):
            raise self.failure(outcome.error, sent=outcome.sent, url=url) from None
        if not stream:
            sent.body_limit.check(outcome.status, outcome.headers, outcome.body, method=request.method,
                                  path=request.path)
        return outcome

    def result(self, answer: Answer) -> Any:
        """The unwrapped result of an answer, or its error raised (no secret in its text)."""
        return parse_response(self.request, answer.status, answer.headers, answer.body, secrets=self.settings.secrets)

    def failure(
        self,
        exc: BaseException,
        *,
        sent: bool,
        url: str = "",
        cls: type[AnalyticsTransportError] = AnalyticsTransportError,
    ) -> AnalyticsApiError:
        """The error for a transport library's exception: a certificate or handshake problem is
        final and says which setting fixes it; a failure at the deadline is the deadline's."""
        request, plan = self.request, self.plan
        head = cause_of(exc, HeadNotRead)
        if head is not None:
            error = self.settings.body_limit.head_error(
                head, urlsplit(url or self.settings.base_url).hostname or "", self._time_settings(),
                method=request.method, path=request.path)
            if head.kind == "size" or plan.deadline is None or plan.clock() < plan.deadline - 0.01:
                return error
            return AnalyticsDeadlineExceeded("the deadline passed while waiting for the answer's head",
                                             last_error=error, method=request.method, path=request.path)
        past = cause_of(exc, BodyPastItsBound)
        if past is not None:
            return self.settings.body_limit.past_error(past, urlsplit(url or self.settings.base_url).hostname or "",
                                                       method=request.method, path=request.path)
        coding = cause_of(exc, CodingError)
        if coding is not None:
            host = urlsplit(url or self.settings.base_url).hostname or ""
            if coding.cut:  # the connection may have been cut: transient
                return cls(f"the body of the answer of {host} could not be decoded whole: {coding}", sent=sent,
                           method=request.method, path=request.path)
            return UndecodableAnswerError(
                f"the body of the answer of {host} could not be decoded: {coding}; not retried (the host would "
                "send the same)", method=request.method, path=request.path)
        tls = tls_problem(exc)
        if tls is not None:
            return AnalyticsTlsError(
                describe_tls(tls, urlsplit(url or self.settings.base_url).hostname or "", self.settings),
                method=request.method, path=request.path,
            )
        error = cls.from_exception(exc, sent=sent, method=request.method, path=request.path,
                                   secrets=self.settings.secrets)
        if plan.deadline is not None and plan.clock() >= plan.deadline - 0.01:
            return AnalyticsDeadlineExceeded(
                "the deadline passed while waiting for the answer", last_error=error,
                method=request.method, path=request.path,
            )
        return error


    def _time_settings(self) -> str:
        settings = self.settings
        told = (f"the connection's connect_timeout={settings.connect_timeout:g} and timeout={settings.read_timeout:g}"
                " seconds bound it")
        return told if self.plan.deadline is None else told + ", and the call's deadline"


def describe_tls(error: ssl.SSLError, host: str, settings: ConnectionSettings) -> str:
    advice = settings.network.tls_advice()
    if isinstance(error, ssl.SSLCertVerificationError):
        why = str(getattr(error, "verify_message", None) or error.reason or "not trusted")
        if "mismatch" in why.lower() or "hostname" in why.lower():
            return (f"the certificate presented for {host} is not valid for that name ({why}): check "
                    f"the region or base_url, or the proxy that answers for {host}; {advice}")
        return f"the certificate of {host} is not trusted ({why}); {advice}"
    why = str(error.reason or error.strerror or type(error).__name__)
    return f"the TLS handshake with {host} failed ({why}); {advice}"

