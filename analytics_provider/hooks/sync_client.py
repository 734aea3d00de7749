"""The worker's driver: carries out the events of :mod:`analytics_provider.api.call.events` with ``requests``.

Twin of :class:`~analytics_provider.hooks.async_client.AsyncAnalyticsClient` (same methods, same
names); every rule lives in the exchange, so this holds only I/O.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import requests

from analytics_provider.api.call.events import Answer, AwaitSignal, Failure, Pause, ReadJob, Send, Steps
from analytics_provider.api.call.exchange import CallPlan, Exchange
from analytics_provider.api.call.quota import Quota
from analytics_provider.api.call.request import ApiRequest, build_request
from analytics_provider.api.call.retry import RetryPolicy
from analytics_provider.api.call.settings import ConnectionSettings, user_agent
from analytics_provider.api.jobs.wait import ONE_LOOK
from analytics_provider.exceptions import AnalyticsApiError, AnalyticsTransportError
from analytics_provider.hooks.decoding import ACCEPTED, BoundedBody, content_coding, decode_all
from analytics_provider.hooks.download import CHUNK_SIZE
from analytics_provider.hooks.head_bound import AnswerLate, BoundedAdapter, bounded_head, read_by

T = TypeVar("T")


class AnalyticsClient:
    """Calls the API from threads: one ``requests`` session, one quota per endpoint.

    ``settings`` gives the connection's settings when first needed; ``clock`` and ``sleep`` are
    how it tells time and waits (a ``deadline`` is a time on ``clock``).
    """

    def __init__(
        self,
        settings: Callable[[], ConnectionSettings],
        retry_policy: RetryPolicy,
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
    ) -> None:
        self._settings = settings
        self.retry_policy = retry_policy
        self.clock = clock
        self.sleep = sleep
        self.quotas: dict[str, Quota] = {}
        self._lock = threading.Lock()
        self._session: requests.Session | None = None

    def quota(self, endpoint: str) -> Quota:
        """The quota of one endpoint (``"GET /jobs/{id}"``), shared by the client's threads."""
        with self._lock:
            if endpoint not in self.quotas:
                self.quotas[endpoint] = Quota(clock=self.clock, pace_from=0.5)
            return self.quotas[endpoint]

    def exchange(self, request: ApiRequest, retry_policy: RetryPolicy | None = None,
                 deadline: float | None = None) -> Exchange:
        plan = CallPlan(retry_policy or self.retry_policy, request, deadline, self.clock)
        return Exchange(request, self._settings(), plan, self.quota)

    def call(self, name: str, *path_args: Any, query: Mapping[str, Any] | None = None, body: Any = None,
             retry_policy: RetryPolicy | None = None, deadline: float | None = None) -> Any:
        """Run the operation ``name`` of the API table and return its unwrapped result."""
        return self.run(self.exchange(build_request(name, path_args, query, body), retry_policy, deadline).call())

    def read_job(self, job_id: int, deadline: float = math.inf) -> Any:
        """One read of a wait (no retries: the wait outlasts failures), over by ``deadline``."""
        request = build_request("get_job", (job_id,))
        return self.run(self.exchange(request, ONE_LOOK, None if math.isinf(deadline) else deadline).call())

    def run(self, steps: Steps[T], *, sleep: Callable[[float], None] | None = None) -> T:
        """Carry out the events of a call or a wait; returns what it returns, raises what it
        raises. ``sleep``: how its pauses are slept (the client's ``sleep`` otherwise)."""
        sleep = sleep or self.sleep
        reply: Any = None
        try:
            while True:
                try:
                    event = steps.send(reply)
                except StopIteration as done:
                    return done.value
                reply = None
                if isinstance(event, Send):
                    reply = self._send(event)
                elif isinstance(event, ReadJob):
                    try:
                        reply = self.read_job(event.job_id, self.clock() + event.left)
                    except Exception as exc:  # the wait decides what a failed read means
                        reply = exc
                elif isinstance(event, Pause):
                    sleep(event.seconds)
                elif isinstance(event, AwaitSignal):
                    event.done.wait(event.seconds)
        finally:
            steps.close()  # an exchange's own cleanup (a quota's turn handed over) runs however it ends

    def iter_body(self, answer: Answer, exchange: Exchange,
                  error: type[AnalyticsTransportError] = AnalyticsTransportError, limit: int | None = None,
                  decode: bool = True) -> Iterator[bytes]:
        """A streamed answer's body as it arrives, each read bounded by the deadline; ``decode``:
        undone its ``Content-Encoding`` (False: as sent, for a caller that checks the coding's end)."""
        try:
            chunks = _chunks(answer.raw, exchange.settings.read_timeout, exchange.plan.left)
            received = 0
            for piece in decode_all(chunks, content_coding(answer.headers)) if decode else chunks:
                yield piece if limit is None else piece[: limit - received]
                received += len(piece)
                if limit is not None and received >= limit:
                    return
        except AnalyticsApiError:
            raise
        except Exception as exc:
            raise exchange.failure(exc, sent=True, url=answer.url, cls=error) from None

    def close(self) -> None:
        """Close the session's connections now. urllib3 2 closes a pool only once nothing refers
        to it, and an answer kept by an error (its traceback) does: clearing the session alone
        would leave the socket open until a garbage collection."""
        session, self._session = self._session, None
        if session is None:
            return
        for adapter in session.adapters.values():
            for manager in [getattr(adapter, "poolmanager", None), *getattr(adapter, "proxy_manager", {}).values()]:
                pools = getattr(manager, "pools", None)
                if pools is None:
                    continue
                for key in list(pools.keys()):
                    pool = pools.get(key)
                    if pool is not None:
                        pool.close()
        session.close()

    def _send(self, step: Send) -> Answer | Failure:
        if self._session is None:
            self._session = requests.Session()  # the key is never a session default: no redirect carries it
            self._session.headers.update({"User-Agent": user_agent("worker"), "Accept": "application/json",
                                          "Accept-Encoding": ACCEPTED})
            self._session.trust_env = False  # the environment is read once, by the settings (network.py)
            for scheme in ("http://", "https://"):
                self._session.mount(scheme, BoundedAdapter())
        try:
            with bounded_head(step.head_within, step.body_limit.head):
                response = self._session.request(
                    step.method, step.url, params=step.params, json=step.json, data=step.data, headers=step.headers,
                    timeout=step.timeout, allow_redirects=False, stream=True, verify=step.network.verify,
                    proxies={urlscheme(step.url): step.proxy} if step.proxy else None,
                )
        except Exception as exc:
            return Failure(exc, sent=_was_sent(exc))
        answer = Answer(response.status_code, response.headers, url=response.url, raw=response)
        if step.stream:
            return answer
        # an I/O bound: real time, as aiohttp's; an upload's answer (its body took its time) comes whole
        # within the head's bound of its head
        end = time.monotonic() + (step.head_within if step.left is None else step.left)
        left = lambda: end - time.monotonic()  # noqa: E731
        with response:
            try:
                body = BoundedBody(content_coding(response.headers),
                                   step.body_limit.to_read(response.status_code, response.headers))
                for chunk in [] if body.full else _chunks(response, step.timeout[1], left):
                    if body.add(chunk):
                        break
                answer.body = body.value()
            except Exception as exc:
                return Failure(exc, sent=True)
        return answer


def urlscheme(url: str) -> str:
    return url.split(":", 1)[0]


def _chunks(response: requests.Response, read_timeout: float, left: Callable[[], float | None]) -> Iterator[bytes]:
    """The body as it arrives, as it came over the wire (its content coding is undone by
    :mod:`~analytics_provider.hooks.decoding`); each read is bounded by the deadline (``left``), so
    a trickle cannot hold the call past it."""
    received = 0
    while True:
        seconds = left()
        if seconds is not None:
            if seconds <= 0:  # a drip whose every read returns in time: the whole answer did not
                raise _late(received)
            if not read_by(response.raw, seconds, read_timeout):  # each read of the socket, framing included
                _set_read_timeout(response, min(read_timeout, seconds))
        try:
            chunk = response.raw.read1(CHUNK_SIZE, decode_content=False)
        except AnswerLate:  # inside a chunk-size line, a chunk or the trailers
            raise _late(received) from None
        if not chunk:
            return
        received += len(chunk)
        yield chunk


def _late(received: int) -> requests.exceptions.ReadTimeout:
    return requests.exceptions.ReadTimeout(f"the answer did not come whole in time ({received:,} bytes read)")


def _set_read_timeout(response: requests.Response, seconds: float) -> None:
    """Bound the next read of a streamed answer not read through :mod:`~analytics_provider.hooks.head_bound`."""
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
