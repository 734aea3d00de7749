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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from analytics_provider.exceptions import AnalyticsParameterError, AnswerTooLargeError, DownloadTooLargeError

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
RATIO_FREE = 16 * MiB
"""Decoded bytes any download may have whatever its ratio (a small, very regular file)."""


def size_text(size: int | float) -> str:
    """``1073741824`` as ``1,073,741,824 bytes (1.0 GiB)``."""
    size = int(size)
    if size < MiB:
        return f"{size:,} bytes"
    unit, scale = ("GiB", GiB) if size >= GiB else ("MiB", MiB)
    return f"{size:,} bytes ({size / scale:.1f} {unit})"


def positive_int(value: Any, name: str) -> int:
    """A byte count setting: a positive integer (``"64"`` taken), else ``ValueError`` naming it."""
    number = value
    if isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ValueError(f"{name} must be a positive integer (bytes), got {value!r}")
    return number


def ratio(value: Any, name: str) -> float:
    """A ratio setting: a finite number of at least 1, else ``ValueError`` naming it."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number < 1:
        raise ValueError(f"{name} must be a number of at least 1 (decoded bytes per byte received), got {value!r}")
    return number


@dataclass(frozen=True)
class BodyLimit:
    """What an answer's body may weigh: ``answer`` bytes when it succeeds (status below 400),
    ``error`` bytes read of an error (cut there)."""

    answer: int = DEFAULT_MAX_ANSWER_BYTES
    error: int = MAX_ERROR_BODY

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


@dataclass(frozen=True)
class DownloadLimits:
    """What a downloaded file may weigh decoded: ``max_bytes``, and ``max_ratio`` decoded bytes per
    byte received once past :data:`RATIO_FREE`. ``source`` names where the values were set."""

    max_bytes: int = DEFAULT_MAX_DOWNLOAD_BYTES
    max_ratio: float = DEFAULT_MAX_DECODE_RATIO
    source: str = "the default; set it in the connection's extra or the operator's argument"

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

    def _refused(self, what: str, destination: str, how: str, setting: str, value: float) -> DownloadTooLargeError:
        shown = str(value) if isinstance(value, int) else f"{value:g}"
        return DownloadTooLargeError(
            f"{what}: the file for destination {destination!r} {how}; refused, the destination is left as "
            f"it was. {setting}={shown} ({self.source}) would have to be raised to allow it",
            method="GET", path="/exports/download")

    def with_overrides(self, max_bytes: int | None, max_ratio: float | None, source: str) -> DownloadLimits:
        if max_bytes is None and max_ratio is None:
            return self
        return DownloadLimits(self.max_bytes if max_bytes is None else max_bytes,
                              self.max_ratio if max_ratio is None else max_ratio, source)


def download_overrides(max_bytes: Any, max_ratio: Any, who: str) -> tuple[int | None, float | None]:
    """``max_download_bytes`` and ``max_decode_ratio`` as given (None: the connection's), or
    :class:`AnalyticsParameterError` naming ``who`` and the parameter."""
    try:
        return (None if max_bytes is None else positive_int(max_bytes, "max_download_bytes"),
                None if max_ratio is None else ratio(max_ratio, "max_decode_ratio"))
    except ValueError as exc:
        raise AnalyticsParameterError(f"{who}: {exc}") from None
