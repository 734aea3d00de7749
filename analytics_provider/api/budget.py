"""The quota of one endpoint, kept the same way by both transports.

The service counts requests per key and endpoint in frames and reports the count in
``RateLimit-*`` headers. :class:`QuotaState` is the arithmetic (no waiting, injected clock);
:class:`QuotaBudget` waits for turns on an event loop (the triggers, hundreds of waits sharing
one budget) and :class:`SyncQuota` in threads (the hook). Both react the same to every answer,
to a 429 and to a frame's end.

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

import asyncio
import contextlib
import math
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from analytics_provider.api.ratelimit import MAX_HEADER_SECONDS, RateLimit, parse_rate_limit

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
        self.remaining: int | None = None
        self.reset_at: float | None = None
        self.latest: RateLimit | None = None
        self.probe_out = False
        self._next_turn = 0.0
        self.share = 1.0  # our part of the key's use of the endpoint, as the answers show it
        self._seen: int | None = None  # the count in this frame's latest answer
        self._ours = 0  # answers of this frame that were ours
        self._theirs = 0  # requests of other processes counted between them

    @property
    def reserve(self) -> int:
        return math.floor((self.limit or 0) * self.reserve_fraction)

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
        if headers is not None:
            self._update(headers)
        self.probe_out = False

    def _update(self, headers: Mapping[str, str]) -> None:
        wall = time.time()  # header dates and epochs are wall-clock times; the state keeps its own clock
        found = parse_rate_limit(headers, now=wall)
        if found is None or found.remaining is None:
            return
        self.latest = found
        count = found.remaining
        now = self._clock()
        if found.reset_at is not None:
            found = RateLimit(found.limit, found.remaining, now + (found.reset_at - wall))
        new_frame = (
            self.remaining is None
            or self.reset_at is None
            or found.reset_at is None
            or found.reset_at > self.reset_at + _NEW_FRAME_SLACK
        )
        self.limit = found.limit if found.limit is not None else self.limit
        if new_frame:
            self.remaining, self.reset_at = found.remaining, found.reset_at
            self._next_turn = now
            self._seen, self._ours, self._theirs = found.remaining, 0, 0  # the baseline of the count
        else:  # same frame: answers of other turns (ours or other processes') may be older
            self.remaining = min(self.remaining, found.remaining)  # type: ignore[type-var]
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


class QuotaBudget:
    """Turns for one endpoint's quota on an event loop (every wait of a triggerer shares it).

    ``sleep`` is how it waits (tests inject one); a probe that gets no answer within
    ``probe_timeout`` lets the next caller probe.
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.time,
        probe_timeout: float = 10.0,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        pace_from: float = 1.0,
    ) -> None:
        self.state = QuotaState(clock, pace_from=pace_from)
        self._probe_timeout = probe_timeout
        self._sleep = sleep
        self._lock = asyncio.Lock()
        self._probe_done: asyncio.Event | None = None

    async def acquire(
        self, check: CheckWait | None = None, sleep: Callable[[float], Awaitable[None]] | None = None
    ) -> None:
        """Wait for this caller's turn; call :meth:`answered` when its answer (or failure) is in.

        Callers queue on a fair lock (first come, first served); the one at the head waits its
        turn (or the probe's answer) while the others queue behind it. ``check`` bounds the
        whole wait, the queue included.
        """
        sleep = sleep or self._sleep or asyncio.sleep
        left = check(0.0) if check is not None else None
        if left is None or not self._lock.locked():  # uncontended: no timer, no task (once per poll)
            await self._lock.acquire()
        else:
            try:
                await asyncio.wait_for(self._lock.acquire(), left)
            except asyncio.TimeoutError:
                assert check is not None
                check(math.inf)  # raises: the deadline passed in the queue
                raise
        try:
            while True:
                claim = self.state.claim(check)
                if claim.kind == PROBE:
                    self._probe_done = asyncio.Event()
                    return
                if claim.kind == AWAIT_PROBE:
                    done = self._probe_done or asyncio.Event()
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(done.wait(), _probe_wait(self._probe_timeout, check))
                    if not done.is_set():  # no answer came: the next caller probes
                        self.state.probe_out = False
                    continue
                if claim.delay > 0:
                    await sleep(claim.delay)
                if claim.kind == GO:
                    return
                self.state.waited(claim)
        finally:
            self._lock.release()

    def answered(self, headers: Mapping[str, str] | None = None) -> None:
        self.state.answered(headers)
        if self._probe_done is not None:
            self._probe_done.set()

    def exhausted(self, retry_after: float | None) -> None:
        self.state.exhausted(retry_after)
        if self._probe_done is not None:
            self._probe_done.set()

    # the state's figures, for logs and tests
    @property
    def remaining(self) -> int | None:
        return self.state.remaining

    @property
    def reset_at(self) -> float | None:
        return self.state.reset_at


class SyncQuota:
    """Turns for one endpoint's quota among threads (the hook); the same rules as :class:`QuotaBudget`."""

    def __init__(
        self, clock: Callable[[], float] = time.time, probe_timeout: float = 10.0, pace_from: float = 0.5
    ) -> None:
        self.state = QuotaState(clock, pace_from=pace_from)
        self._probe_timeout = probe_timeout
        self._lock = threading.Lock()
        self._probe_done = threading.Event()

    def acquire(self, sleep: Callable[[float], None], check: CheckWait | None = None) -> None:
        while True:
            with self._lock:
                claim = self.state.claim(check)
                if claim.kind == PROBE:
                    self._probe_done = threading.Event()
                    return
                done = self._probe_done
            if claim.kind == AWAIT_PROBE:
                if not done.wait(_probe_wait(self._probe_timeout, check)):
                    with self._lock:
                        self.state.probe_out = False
                continue
            if claim.delay > 0:
                sleep(claim.delay)
            if claim.kind == GO:
                return
            with self._lock:
                self.state.waited(claim)

    def answered(self, headers: Mapping[str, str] | None = None) -> None:
        with self._lock:
            self.state.answered(headers)
            self._probe_done.set()

    def exhausted(self, retry_after: float | None) -> None:
        with self._lock:
            self.state.exhausted(retry_after)
            self._probe_done.set()


def _probe_wait(probe_timeout: float, check: CheckWait | None) -> float:
    left = check(0.0) if check is not None else None
    return probe_timeout if left is None else min(probe_timeout, left)
