"""The one vocabulary of the code without I/O: what it asks a driver to do, and what it gets back.

A call (:mod:`~analytics_provider.api.call.exchange`) and a wait (:mod:`~analytics_provider.api.jobs.wait`)
are generators of these events. A driver (``requests`` on the worker, ``aiohttp`` in the
triggerer) runs them all the same way, with the generator protocol (``steps.send(reply)`` until
it returns, ``steps.close()`` however that loop ends, so that an exchange's own cleanup, a quota's
turn handed over, runs even when an event fails): it carries out each event and replies ``None``
to a :class:`Pause` or an :class:`AwaitSignal`, an :class:`Answer` or a :class:`Failure` to a
:class:`Send`, and the job (or the exception its read raised) to a :class:`ReadJob`.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union

from analytics_provider.api.call.limits import BodyLimit
from analytics_provider.api.call.network import Network


@dataclass(frozen=True)
class Pause:
    """Sleep ``seconds`` (a backoff, a quota turn, a wait's interval); ``pending`` when a wait
    pauses on a job known to be pending (a sensor's poke ends at any pause)."""

    seconds: float
    pending: bool = False


@dataclass(frozen=True)
class AwaitSignal:
    """Wait until ``done`` (a ``threading.Event`` or an ``asyncio.Event``, as the driver made
    the quota) is set, or ``seconds`` pass (None: no limit): the caller ahead in the quota's
    queue hands over, or a probe's answer comes in."""

    done: Any
    seconds: float | None


@dataclass(slots=True)
class Send:
    """One HTTP exchange, no redirect followed. ``timeout`` is ``(connect, read)``, each read's
    bound when ``left`` is None; ``left`` the seconds the whole exchange may take (what is left
    before the deadline; for an API answer at most connect + read timeout). The answer's body is
    read whole, at most ``body_limit.to_read(status, headers)`` bytes (the exchange judges what
    was read); with ``stream`` it is left to the caller. The head (status line and headers) must
    come whole within ``head_within`` seconds of the request (of its body sent, for an upload:
    ``left`` bounds that in the triggerer), and be at most ``body_limit.head`` bytes: past either,
    the driver fails with :class:`~analytics_provider.api.call.limits.HeadNotRead`."""

    method: str
    url: str
    headers: Mapping[str, str] = field(repr=False)  # the key is among them
    timeout: tuple[float, float]
    left: float | None
    network: Network = field(repr=False)
    proxy: str | None = field(default=None, repr=False)
    params: Any = None
    json: Any = None
    data: Any = None
    stream: bool = False
    body_limit: BodyLimit = field(default_factory=BodyLimit, repr=False)
    head_within: float = 70.0


@dataclass(frozen=True)
class ReadJob:
    """Read the job ``job_id`` (one look of a wait, not retried), over within ``left`` seconds
    (``inf``: no bound). The reply is the job, or the exception the read raised."""

    job_id: int
    left: float


@dataclass(slots=True)
class Answer:
    """The answer of a :class:`Send`: ``body`` read, or ``raw`` (the library's response) with ``stream``."""

    status: int
    headers: Mapping[str, str]
    body: bytes = b""
    url: str = ""
    raw: Any = None


@dataclass(frozen=True)
class Failure:
    """A :class:`Send` that got no answer: the library's exception, and whether the request may
    have reached the service (False only when surely not: no connection was made)."""

    error: BaseException
    sent: bool


Event = Union[Pause, AwaitSignal, Send, ReadJob]  # noqa: UP007 (a runtime alias on Python 3.10)

T = TypeVar("T")
Steps = Generator[Event, Any, T]
"""Code without I/O: a generator of events that returns ``T``."""
