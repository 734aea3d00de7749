"""How much an answer or a downloaded file may weigh: the bounds both transports and downloads keep.

An answer's body is read up to a limit (:class:`BodyLimit`): a successful answer up to the
connection's ``max_answer_bytes`` (past it, :class:`~analytics_provider.exceptions.AnswerTooLargeError`),
an error answer up to :data:`MAX_ERROR_BODY` (its text is cut, never refused). The drivers ask
:meth:`BodyLimit.to_read` how much to read and the exchange judges what they read
(:meth:`BodyLimit.check`): the rule is written once, for ``requests`` and ``aiohttp`` alike.

A downloaded file (an export) is no answer: it may be large, and it goes to disk in pieces. What
it may weigh decoded is :class:`DownloadLimits`: an absolute size, and a ratio to the bytes that
came over the wire (a compressed body that decodes to far more than any real file: a gzip bomb).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from analytics_provider.exceptions import (
    AnalyticsApiError,
    AnalyticsParameterError,
    AnalyticsTransportError,
    AnswerTooLargeError,
    DownloadTooLargeError,
    DownloadTooSlowError,
)

MiB = 1024 * 1024
GiB = 1024 * MiB
MAX_ERROR_BODY = MiB
"""Bytes of an error answer read (its text is bounded further)."""
DEFAULT_MAX_ANSWER_BYTES = 64 * MiB
"""A successful answer's bytes, at most (``max_answer_bytes``). The largest answers are pages of
a list (a hundred records) and a data set query's page: kilobytes to a few MiB."""
DEFAULT_MAX_DOWNLOAD_BYTES = 16 * GiB
"""A downloaded file's bytes, decoded, at most (``max_download_bytes``): a million rows of a
hundred 100-byte columns are 10 GB, past what a widget's export holds."""
DEFAULT_MAX_DECODE_RATIO = 100.0
"""Decoded bytes per byte on the wire, at most (``max_decode_ratio``), once past
:data:`RATIO_FREE`. gzip (level 6) makes a csv of orders 4.2 times smaller and one of 60 empty
columns 26 times (measured on 200,000 rows each); deflate cannot pass about 1,030, a bomb's ratio."""
DEFAULT_MAX_DOWNLOAD_SECONDS = 21_600.0
"""Seconds a download (its requests, redirect and body, retries included) may take at most
(``max_download_seconds``): 6 hours. The largest file allowed by default (16 GiB) comes in 4.6
hours at 1 MiB/s, a slow link; a real export of a widget is megabytes to a few GiB."""
RATIO_FREE = 16 * MiB
"""Decoded bytes any download may have whatever its ratio (a small, very regular file)."""
DEFAULT_MAX_HEADER_BYTES = 64 * 1024
"""An answer's head (status line and header lines), at most (``max_header_bytes``). The service
answers about 1 KiB of headers; a proxy or a load balancer adds cookies and a trace, rarely past
8 KiB (the line limit of nginx and aiohttp)."""


def size_text(size: int | float) -> str:
    """``1073741824`` as ``1,073,741,824 bytes (1.0 GiB)``."""
    size = int(size)
    if size < MiB:
        return f"{size:,} bytes"
    unit, scale = ("GiB", GiB) if size >= GiB else ("MiB", MiB)
    return f"{size:,} bytes ({size / scale:.1f} {unit})"


TiB = 1024 * GiB


@dataclass(frozen=True)
class SizeSetting:
    """A size or ratio setting's rules: its unit, and the values it takes (``low`` to ``high``)."""

    unit: str
    low: float
    high: float
    why_high: str
    whole: bool = True  # a whole number (bytes); else a decimal number is taken too

    def allowed(self) -> str:
        kind = "a whole number" if self.whole else "a number"
        return (f"{kind} of {self.unit} from {self.low:,g} to {self.high:,.0f} ({self.why_high}), as a number or a "
                "string of ASCII digits")


SIZE_SETTINGS = {
    "max_answer_bytes": SizeSetting("bytes", 1, GiB, "1 GiB: an answer is parsed whole, in memory"),
    "max_download_bytes": SizeSetting("bytes", 1, TiB, "1 TiB: past any export a widget holds"),
    "max_decode_ratio": SizeSetting("decoded bytes per byte received", 1, 1100,
                                    "deflate cannot pass about 1,030, so 1,100 already lets any gzip through",
                                    whole=False),
    "max_download_seconds": SizeSetting("seconds", 1, 604_800, "7 days: no task should hold a worker longer",
                                        whole=False),
    "max_header_bytes": SizeSetting("bytes", 1024, 16 * MiB, "16 MiB: a head is held whole, in memory"),
    "max_xcom_bytes": SizeSetting("bytes", 1, 16 * MiB,
                                  "16 MiB: an XCom lives in Airflow's database, a larger plan goes by reference"),
}
"""Every size and ratio setting, whether a connection's extra or an operator's argument sets it:
:func:`size_setting` reads them all by these rules."""

_WHOLE = re.compile(r"[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?", re.ASCII)


def size_setting(value: Any, name: str) -> Any:
    """``value`` of the size or ratio setting ``name`` (:data:`SIZE_SETTINGS`): an ``int`` (a
    ``float`` too for a ratio) or a string of ASCII digits, within the setting's bounds; else
    ``ValueError`` naming the setting and what it takes. Other digits (``"²"``, ``"٣"``), signs,
    exponents, underscores and booleans are refused."""
    rules = SIZE_SETTINGS[name]
    number: Any = None
    if isinstance(value, str):
        text = value.strip()
        if (_WHOLE if rules.whole else _DECIMAL).fullmatch(text):
            number = int(text) if rules.whole else float(text)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value if rules.whole else float(value)
    elif isinstance(value, float) and not rules.whole and math.isfinite(value):
        number = value
    if number is None or not rules.low <= number <= rules.high:
        raise ValueError(f"{name} must be {rules.allowed()}, got {value!r}")
    return number


def positive_int(value: Any, name: str) -> int:
    """A byte count setting (:func:`size_setting`)."""
    return int(size_setting(value, name))


def ratio(value: Any, name: str) -> float:
    """A ratio setting (:func:`size_setting`)."""
    return float(size_setting(value, name))


class HeadNotRead(Exception):
    """Raised by a driver, inside its HTTP library, when an answer's head (status line and
    headers) passes its bound: ``size`` (more than ``limit`` bytes) or ``time`` (not whole within
    ``limit`` seconds of sending). The exchange turns it into the error (:meth:`BodyLimit.head_error`)."""

    def __init__(self, kind: str, limit: float, received: int | None = None, bound: str = "") -> None:
        super().__init__(f"the answer's head passed its {kind} bound ({limit:g})")
        self.kind, self.limit, self.received = kind, limit, received
        self.bound = bound  # the HTTP library's own bound it passed, said as such ("a line longer than ...")


class BodyPastItsBound(Exception):
    """Raised by a driver, inside its HTTP library, when what follows an answer's head (its body, a
    chunked body's trailers) passes ``bound`` bytes where the library itself bounds no trailers
    (aiohttp before 3.14). The exchange turns it into the error (:meth:`BodyLimit.past_error`)."""

    def __init__(self, bound: int) -> None:
        super().__init__(f"the answer sent more than {bound:,} bytes after its head")
        self.bound = bound


@dataclass(frozen=True)
class BodyLimit:
    """What an answer's body may weigh: ``answer`` bytes when it succeeds (status below 400),
    ``error`` bytes read of an error (cut there); and its head (status line and headers): ``head``
    bytes, whatever its status."""

    answer: int = DEFAULT_MAX_ANSWER_BYTES
    error: int = MAX_ERROR_BODY
    head: int = DEFAULT_MAX_HEADER_BYTES

    def head_error(self, problem: HeadNotRead, host: str, timeouts: str, *, method: str,
                   path: str) -> AnalyticsApiError:
        """The error of an answer whose head passed its bound: too large (not retried, the host
        would answer the same) or too slow (a transport failure, retried as a timeout is).
        ``timeouts`` names the settings that bound the time."""
        read = "" if problem.received is None else f"; {size_text(problem.received)} of it read"
        if problem.kind == "size":
            past = problem.bound or f"larger than {size_text(self.head)}"
            return AnswerTooLargeError(
                f"the answer of {host} has a head (status line and headers) {past}{read}; refused. "
                f"max_header_bytes={self.head} (a setting of the "
                "connection's extra, 64 KiB by default) is the limit of an answer's head", method=method, path=path)
        return AnalyticsTransportError(
            f"the answer of {host} did not send its head (status line and headers) whole within "
            f"{problem.limit:.3g} s of the request{read}; gave up ({timeouts})", method=method, path=path)

    def past_error(self, problem: BodyPastItsBound, host: str, *, method: str, path: str) -> AnswerTooLargeError:
        """The error of an answer that sent more after its head than its body and a head's worth."""
        return AnswerTooLargeError(
            f"the answer of {host} sent more than {problem.bound:,} bytes after its head (its body and a chunked "
            f"body's trailers); refused. max_answer_bytes={self.answer} (a setting of the connection's extra, "
            "64 MiB by default) is the limit of a successful answer", method=method, path=path)

    def to_read(self, status: int, headers: Mapping[str, str]) -> int:
        """The bytes a driver reads at most: one past the limit tells an answer too large (none
        when its ``Content-Length`` already says so); an error's first ``error`` bytes."""
        if status >= 400:
            return self.error
        declared = str(headers.get("Content-Length") or "").strip()
        if declared.isdigit() and int(declared) > self.answer:
            return 0
        return self.answer + 1

    def check(self, status: int, headers: Mapping[str, str], body: bytes, *, method: str, path: str) -> None:
        """Refuse a successful answer past the limit (:class:`AnswerTooLargeError`). ``body`` is
        decoded; ``Content-Length`` counts the bytes on the wire (compressed, when the answer is):
        the error says which size it quotes."""
        if status >= 400:
            return
        declared = str(headers.get("Content-Length") or "").strip()
        wire = int(declared) if declared.isdigit() else None
        if (wire is None or wire <= self.answer) and len(body) <= self.answer:
            self._check_values(status, body, method=method, path=path)
            return
        coding = str(headers.get("Content-Encoding") or "").strip().lower()
        if coding in ("", "identity"):
            how = f"announced {size_text(wire)}" if wire is not None else f"more than {size_text(self.answer)}"
        elif wire is not None and wire > self.answer:
            how = f"announced {size_text(wire)} on the wire, {coding}-compressed; its decoded size was not read"
        else:
            how = (f"more than {size_text(self.answer)} decoded, from a {coding}-compressed body"
                   + ("" if wire is None else f" of {size_text(wire)} on the wire"))
        raise AnswerTooLargeError(
            f"the answer is larger than the connection allows ({how}); max_answer_bytes={self.answer} "
            "(a setting of the connection's extra, 64 MiB by default) is the limit of a successful answer: "
            "raise it if this answer is expected", status=status, method=method, path=path)

    @property
    def values(self) -> int:
        """The JSON values (objects, arrays, items) a successful answer may hold: ``answer`` / 32,
        2,097,152 for the default 64 MiB. Parsed, each takes Python 50 to 100 bytes: 60 MiB of
        ``[{},{},...]`` took 3 GiB. A page of 1000 rows of 100 columns holds 100,000."""
        return max(self.answer // 32, 1024)

    def _check_values(self, status: int, body: bytes, *, method: str, path: str) -> None:
        if len(body) <= self.values:
            return  # fewer bytes than values allowed: it cannot hold more
        if _values_at_most(body) <= self.values:
            return  # (counted quickly: separators inside strings too)
        held = _values_at_most(_STRING.sub(b'""', body))  # counted outside strings
        if held > self.values:
            raise AnswerTooLargeError(
                f"the answer holds more JSON values than the connection allows (about {held:,} in "
                f"{size_text(len(body))}; at most {self.values:,}, max_answer_bytes/32): parsed, each takes "
                f"memory of its own; max_answer_bytes={self.answer} (a setting of the connection's extra, 64 MiB "
                "by default) sets both limits: raise it if this answer is expected", status=status,
                method=method, path=path)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.S)
"""A JSON string, or one never closed (to the body's end): a match never fails, so each byte is read
once (one that had to close was tried again from every quote: a 4.4 MB answer of escaped quotes never
closed held the worker, and the triggerer's loop, for hours)."""


def _values_at_most(body: bytes) -> int:
    """The JSON values ``body`` can hold at most: a value's separator or opening, each."""
    return body.count(b",") + body.count(b"[") + body.count(b"{")


@dataclass(frozen=True)
class DownloadLimits:
    """What a downloaded file may weigh decoded: ``max_bytes``, and ``max_ratio`` decoded bytes per
    byte received once past :data:`RATIO_FREE`; and ``max_seconds`` the whole download may take.
    ``source`` names where a value not in ``sources`` (setting: where it was set) comes from."""

    max_bytes: int = DEFAULT_MAX_DOWNLOAD_BYTES
    max_ratio: float = DEFAULT_MAX_DECODE_RATIO
    source: str = "the default; set it in the connection's extra or the operator's argument"
    max_seconds: float = DEFAULT_MAX_DOWNLOAD_SECONDS
    sources: tuple[tuple[str, str], ...] = ()

    def source_of(self, setting: str) -> str:
        """Where ``setting``'s value was set: an override's source, or :attr:`source`."""
        return dict(self.sources).get(setting, self.source)

    def deadline(self, now: float, deadline: float | None) -> float:
        """The download's deadline: ``max_seconds`` from ``now``, or the caller's when sooner."""
        end = now + self.max_seconds
        return end if deadline is None else min(deadline, end)

    def too_slow(self, what: str, destination: str, method: str = "GET",
                 path: str = "/exports/download") -> DownloadTooSlowError:
        """The error of a download (or a file written from pages of answers) that ``max_seconds`` ended."""
        return DownloadTooSlowError(
            f"{what}: the file for destination {destination!r} did not come whole within "
            f"{self.max_seconds:g} s; refused, the destination is left as it was. max_download_seconds="
            f"{self.max_seconds:g} ({self.source_of('max_download_seconds')}) would have to be raised to allow it",
            method=method, path=path)

    def check_written(self, written: int, what: str, destination: str, method: str, path: str) -> None:
        """Refuse a file written from pages of answers (a query's rows) past ``max_bytes``."""
        if written > self.max_bytes:
            raise self._refused(what, destination, f"passes {size_text(self.max_bytes)}", "max_download_bytes",
                                self.max_bytes, method, path)

    def allowed(self, wire: int) -> int:
        """The decoded bytes allowed after ``wire`` bytes received."""
        return min(self.max_bytes, max(RATIO_FREE, int(self.max_ratio * wire)))

    def check_declared(self, declared: int | None, coding: str, what: str, destination: str) -> None:
        """Refuse before any byte is written a plain body announced past ``max_bytes``."""
        if declared is not None and coding in ("", "identity") and declared > self.max_bytes:
            raise self._refused(what, destination, f"announces {size_text(declared)}", "max_download_bytes",
                                self.max_bytes)

    def check(self, decoded: int, wire: int, what: str, destination: str) -> None:
        """Refuse a body that decoded to more than allowed after ``wire`` bytes received."""
        if decoded <= self.allowed(wire):
            return
        if decoded > self.max_bytes:
            raise self._refused(what, destination, f"decodes to more than {size_text(self.max_bytes)}",
                                "max_download_bytes", self.max_bytes)
        raise self._refused(
            what, destination,
            f"decodes to more than {size_text(decoded)} from {size_text(wire)} received (over "
            f"{decoded / max(wire, 1):.0f} times its size on the wire)", "max_decode_ratio", self.max_ratio)

    def _refused(self, what: str, destination: str, how: str, setting: str, value: float, method: str = "GET",
                 path: str = "/exports/download") -> DownloadTooLargeError:
        shown = str(value) if isinstance(value, int) else f"{value:g}"
        return DownloadTooLargeError(
            f"{what}: the file for destination {destination!r} {how}; refused, the destination is left as "
            f"it was. {setting}={shown} ({self.source_of(setting)}) would have to be raised to allow it",
            method=method, path=path)

    def with_overrides(self, max_bytes: int | None, max_ratio: float | None, max_seconds: float | None,
                       source: str) -> DownloadLimits:
        if max_bytes is None and max_ratio is None and max_seconds is None:
            return self
        given = (("max_download_bytes", max_bytes), ("max_decode_ratio", max_ratio),
                 ("max_download_seconds", max_seconds))
        return DownloadLimits(self.max_bytes if max_bytes is None else max_bytes,
                              self.max_ratio if max_ratio is None else max_ratio, self.source,
                              self.max_seconds if max_seconds is None else max_seconds,
                              (*self.sources, *((name, source) for name, value in given if value is not None)))


def task_setting(value: Any, name: str, who: str) -> Any:
    """An operator's (or a hook method's) size setting as given, None when not given; else
    :class:`AnalyticsParameterError` naming ``who`` (the task) and the setting."""
    try:
        return None if value is None else size_setting(value, name)
    except ValueError as exc:
        raise AnalyticsParameterError(f"{who}: {exc}") from None


def download_overrides(max_bytes: Any, max_ratio: Any, max_seconds: Any,
                       who: str) -> tuple[int | None, float | None, float | None]:
    """``max_download_bytes``, ``max_decode_ratio`` and ``max_download_seconds`` as given (None:
    the connection's), or :class:`AnalyticsParameterError` naming ``who`` and the parameter."""
    size, times = task_setting(max_bytes, "max_download_bytes", who), task_setting(max_ratio, "max_decode_ratio", who)
    seconds = task_setting(max_seconds, "max_download_seconds", who)
    return size, None if times is None else float(times), None if seconds is None else float(seconds)
