"""The quota of one endpoint, kept the same way by both transports.

The service counts requests per key and endpoint in frames and reports the count in
``RateLimit-*`` headers, read here (:func:`parse_rate_limit`, :func:`parse_retry_after`) with every
number finite and capped. The API document does not show the value format of
``RateLimit-Reset`` and ``Retry-After``: both are read as the standards write them,
delta-seconds (digits only) or an HTTP date; a ``RateLimit-Reset`` of more than 10⁹ seconds is a
Unix epoch time; any other value is ignored. :class:`QuotaState` is the arithmetic (no waiting, injected clock);
:class:`Quota` hands out turns as steps that either transport's driver carries out (the
hook's threads, the hundreds of waits of a triggerer's event loop).

The rules, chosen so that several processes on one key (HA triggerers, many workers), each
learning only from the headers, stay clear of 429:

* an unknown quota is learnt first: one request (the probe) goes, the others wait for its answer;
* a frame is never assumed to refill: when the known reset passes, the quota is unknown again
  and is learnt anew from one answer;
* a reserve of the quota (``reserve``, 15% of the limit) is never spent: what other processes
  sent since this one's last answer is not known yet (the shared-quota benchmark measured 5%
  of answers 429 with three processes and a 5% reserve, none with 15%);
* each process spends only its share of what is left: between two of its answers the count
  drops by one for its own request and by one for each request of another process, so each
  learns the part of the key's use that is its own (kept from frame to frame) and spaces its
  turns so that its share lasts until the reset (from ``pace_from`` of the limit down; the
  hook's calls run unspaced while more than half is left);
* after a 429 nothing is sent until its ``Retry-After`` (or the known reset).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

from analytics_provider.api.call.events import AwaitSignal, Pause

_EPOCH_THRESHOLD = 1_000_000_000  # a larger number is a timestamp, not a delay
MAX_HEADER_SECONDS = 3600.0
"""The longest wait a header may ask for; a larger (or infinite) value is read as this."""
MAX_COUNT = 10**9


@dataclass(frozen=True)
class RateLimit:
    """The latest quota an endpoint reported: ``reset_at`` is a Unix time."""

    limit: int | None
    remaining: int | None
    reset_at: float | None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:  # plain dicts (tests, other transports) are not case-insensitive
        lowered = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == lowered), None)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _seconds_until(value: str, now: float, *, epoch_allowed: bool) -> float | None:
    """A delay in seconds, at most :data:`MAX_HEADER_SECONDS`; None when the value is neither
    delta-seconds (digits only) nor an HTTP date. ``1e400``, ``-5`` or ``2.5`` are ignored,
    never read as a number."""
    if value.isascii() and value.isdigit():
        number = float(int(value[:30]))  # 30 digits already mean far beyond the cap
        if epoch_allowed and number > _EPOCH_THRESHOLD:
            number -= now
    else:
        try:
            number = parsedate_to_datetime(value).timestamp() - now
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return min(max(0.0, number), MAX_HEADER_SECONDS)


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds a 429 or 503 asked to wait (at most :data:`MAX_HEADER_SECONDS`), or None."""
    value = _header(headers, "Retry-After")
    return None if value is None else _seconds_until(value, time.time() if now is None else now, epoch_allowed=True)


def parse_rate_limit(headers: Mapping[str, str], *, now: float) -> RateLimit | None:
    get = headers.get  # every answer passes here: the names as the service writes them first
    limit, remaining, reset = get("RateLimit-Limit"), get("RateLimit-Remaining"), get("RateLimit-Reset")
    if limit is None and remaining is None and reset is None:
        limit, remaining, reset = (_header(headers, f"RateLimit-{n}") for n in ("Limit", "Remaining", "Reset"))
        if limit is None and remaining is None and reset is None:
            return None
    delay = None if not reset else _seconds_until(reset.strip(), now, epoch_allowed=True)
    return RateLimit(
        limit=_count(limit),
        remaining=_count(remaining),
        reset_at=None if delay is None else now + delay,
    )


def _count(value: str | None) -> int | None:
    """A finite, non-negative count of at most :data:`MAX_COUNT`, or None."""
    if value is None:
        return None
    if len(value) < 12 and value.isdigit() and value.isascii():  # the usual case
        return min(int(value), MAX_COUNT)
    try:
        number = float(value)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    return int(min(max(number, 0.0), MAX_COUNT))


_NEW_FRAME_SLACK = 1.0  # seconds: a reset time that moved further is a new frame
_NO_RESET_PAUSE = 1.0  # seconds to hold back when a spent quota reports no reset
GO, PROBE, AWAIT_PROBE, WAIT = "go", "probe", "await_probe", "wait"

CheckWait = Callable[[float], "float | None"]
"""Raises when the caller cannot wait that many seconds (its deadline would pass); else returns
the seconds it has left (None: no limit)."""


@dataclass(frozen=True)
class Claim:
    """What a caller does next: ``go`` after ``delay``; ``probe`` now (its answer teaches the
    quota); ``await_probe`` (another caller's answer will); ``wait`` ``delay``, then ask again."""

    kind: str
    delay: float = 0.0
    until: float | None = None  # a ``wait``: the reset it waits for


class QuotaState:
    """One endpoint's quota as the answers report it; no I/O and no waiting.

    ``clock`` is the owner's (the transport's) clock: every time kept here is on it, and only
    ``latest`` (the last headers as read, for display) holds a Unix time.
    """

    def __init__(
        self, clock: Callable[[], float] = time.time, *, pace_from: float = 1.0, reserve: float = 0.15
    ) -> None:
        self._clock = clock
        self.pace_from = pace_from
        self.reserve_fraction = reserve
        self.limit: int | None = None
        self.reserve = 0  # requests of the limit never spent (``reserve_fraction`` of it)
        self.remaining: int | None = None
        self.reset_at: float | None = None
        self.latest: RateLimit | None = None
        self.probe_out = False
        self._next_turn = 0.0
        self.share = 1.0  # our part of the key's use of the endpoint, as the answers show it
        self._seen: int | None = None  # the count in this frame's latest answer
        self._ours = 0  # answers of this frame that were ours
        self._theirs = 0  # requests of other processes counted between them

    def claim(self, check: CheckWait | None = None) -> Claim:
        """The caller's next step; a ``go`` is counted only once ``check`` accepted its delay."""
        now = self._clock()
        if self.remaining is not None and self.reset_at is not None and now >= self.reset_at:
            self.remaining = None  # the frame ended: learn the new one before spending it
        if self.remaining is None:
            if self.probe_out:
                return Claim(AWAIT_PROBE)
            self.probe_out = True
            return Claim(PROBE)
        usable = (self.remaining - self.reserve) * self.share
        if usable < 1:
            delay = (self.reset_at if self.reset_at is not None else now + _NO_RESET_PAUSE) - now
            if check is not None:
                check(delay)
            if self.reset_at is None:
                self.remaining = None  # no reset reported: ask again after the pause
            return Claim(WAIT, delay, self.reset_at)
        turn = now
        if self.reset_at is not None and self.remaining <= self.pace_from * (self.limit or self.remaining):
            turn = max(now, self._next_turn)
        if check is not None:
            check(turn - now)
        if self.reset_at is not None and turn > now:
            self._next_turn = turn + max(0.0, self.reset_at - turn) / usable
        elif self.reset_at is not None:
            self._next_turn = now + max(0.0, self.reset_at - now) / usable
        self.remaining -= 1
        return Claim(GO, turn - now)

    def waited(self, claim: Claim) -> None:
        """The caller slept out a ``wait``: that frame is over, even on a clock that did not move
        (an injected one); the next caller learns the new frame."""
        if claim.until is not None and self.reset_at == claim.until:
            self.remaining = None

    def answered(self, headers: Mapping[str, str] | None) -> None:
        """Take in an answer's ``RateLimit-*`` headers (None: no answer came)."""
        self.probe_out = False
        if headers is None:
            return
        wall = time.time()  # header dates and epochs are wall-clock times; the state keeps its own clock
        found = parse_rate_limit(headers, now=wall)
        if found is None or found.remaining is None:
            return
        self.latest = found
        count = found.remaining
        now = self._clock()
        reset_at = None if found.reset_at is None else now + (found.reset_at - wall)  # onto our clock
        new_frame = (
            self.remaining is None
            or self.reset_at is None
            or reset_at is None
            or reset_at > self.reset_at + _NEW_FRAME_SLACK
        )
        if found.limit is not None:
            self.limit = found.limit
            self.reserve = math.floor(found.limit * self.reserve_fraction)
        if new_frame:
            self.remaining, self.reset_at = count, reset_at
            self._next_turn = now
            self._seen, self._ours, self._theirs = count, 0, 0  # the baseline of the count
        else:  # same frame: answers of other turns (ours or other processes') may be older
            self.remaining = min(self.remaining, count)  # type: ignore[type-var]
            self._learn_share(count)

    def _learn_share(self, count: int) -> None:
        """Between two of our answers the count drops by one for ours and one for each request of
        another process on the key: our share of the endpoint's use, kept across frames."""
        if self._seen is None or count >= self._seen:
            return  # an older answer, overtaken
        self._ours += 1
        self._theirs += self._seen - count - 1
        self._seen = count
        if self._ours + self._theirs >= 4:
            self.share = max(0.05, self._ours / (self._ours + self._theirs))

    def exhausted(self, retry_after: float | None) -> None:
        """A 429 came back: nothing is left until ``retry_after`` (or the known reset)."""
        now = self._clock()
        self.remaining = 0
        if retry_after is not None:
            self.reset_at = now + min(retry_after, MAX_HEADER_SECONDS)
        elif self.reset_at is None or self.reset_at <= now:
            self.reset_at = now + _NO_RESET_PAUSE
        self.probe_out = False


class Quota:
    """Turns for one endpoint's quota, shared by the callers of a transport (threads or tasks).

    :meth:`turn` is sans-IO: it yields :class:`~analytics_provider.api.call.events.Pause` and
    :class:`~analytics_provider.api.call.events.AwaitSignal` events for the driver to carry out. Turns
    are handed out in the order they are asked for.
    ``event`` makes the probe's "answered" signal: ``threading.Event`` for threads,
    ``asyncio.Event`` for an event loop. A probe that gets no answer within ``probe_timeout``
    lets the next caller probe.
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.time,
        *,
        probe_timeout: float = 10.0,
        pace_from: float = 1.0,
        event: Callable[[], Any] = threading.Event,
    ) -> None:
        self.state = QuotaState(clock, pace_from=pace_from)
        self._probe_timeout = probe_timeout
        self._event = event
        self._lock = threading.Lock()  # never held across a step: safe on an event loop too
        self._probe_done: Any = None
        self._busy = False  # a caller is at the head of the queue
        self._queue: deque[Any] = deque()  # the signals of the callers behind it

    def turn(self, check: CheckWait | None = None) -> Generator[Pause | AwaitSignal, None, None]:
        """The steps to this caller's turn; call :meth:`answered` when its answer (or failure) is in.

        Callers queue first come, first served; the one at the head waits its turn (or the
        probe's answer) while the others wait behind it. ``check`` bounds every wait, the queue
        included (it raises when the deadline would pass).
        """
        first: Claim | None = None
        with self._lock:
            mine = None
            if self._busy:
                mine = self._event()
                self._queue.append(mine)
            else:  # uncontended (once per poll): a turn due now takes one lock, no signal, no queue
                first = self.state.claim(check)
                if first.kind == GO and first.delay <= 0:
                    return
                if first.kind == PROBE:
                    self._probe_done = self._event()
                    return
                self._busy = True
        if mine is not None:
            yield AwaitSignal(mine, check(0.0) if check is not None else None)
            if not mine.is_set():
                with self._lock:
                    handed_over = mine not in self._queue
                    if not handed_over:
                        self._queue.remove(mine)
                if handed_over:
                    self._hand_over()
                if check is not None:
                    check(math.inf)  # raises: the deadline passed in the queue
        try:
            yield from self._claim(check, first)
        finally:
            self._hand_over()

    def _claim(self, check: CheckWait | None, claim: Claim | None = None) -> Generator[Pause | AwaitSignal, None, None]:
        """Claims until a ``go`` or a probe; ``claim`` is one already made (its step is still due)."""
        while True:
            if claim is None:
                with self._lock:
                    claim = self.state.claim(check)
                    if claim.kind == PROBE:
                        self._probe_done = self._event()
                        return
            done = self._probe_done
            if claim.kind == AWAIT_PROBE:
                if done is not None:
                    yield AwaitSignal(done, _probe_wait(self._probe_timeout, check))
                if done is None or not done.is_set():  # no answer came: the next caller probes
                    with self._lock:
                        if self._probe_done is done:
                            self.state.probe_out = False
                claim = None
                continue
            if claim.delay > 0:
                yield Pause(claim.delay)
            if claim.kind == GO:
                return
            with self._lock:
                self.state.waited(claim)
            claim = None

    def _hand_over(self) -> None:
        """The head of the queue is done: the next caller's turn (or no one's)."""
        with self._lock:
            if self._queue:
                self._queue.popleft().set()
            else:
                self._busy = False

    def answered(self, headers: Mapping[str, str] | None = None) -> None:
        """Take in an answer's ``RateLimit-*`` headers (None: no answer came)."""
        with self._lock:
            self.state.answered(headers)
            done = self._probe_done
        if done is not None:
            done.set()

    def exhausted(self, retry_after: float | None) -> None:
        """A 429 came back: nothing is sent until ``retry_after`` (or the known reset)."""
        with self._lock:
            self.state.exhausted(retry_after)
            done = self._probe_done
        if done is not None:
            done.set()

    @property
    def remaining(self) -> int | None:
        return self.state.remaining

    @property
    def reset_at(self) -> float | None:
        return self.state.reset_at


def _probe_wait(probe_timeout: float, check: CheckWait | None) -> float:
    left = check(0.0) if check is not None else None
    return probe_timeout if left is None else min(probe_timeout, left)
