"""How a download knows its body arrived whole: its length, its chunked framing, or its compressed
stream's end; and refusing a body nothing can vouch for."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from analytics_provider.api.call.limits import DownloadLimits
from analytics_provider.exceptions import IncompleteDownloadError, UnverifiableDownloadError
from analytics_provider.hooks.decoding import COMPRESSED, CodingError, content_coding, decode_all

__all__ = ["COMPRESSED", "IDENTITY", "content_coding", "decoded", "wire_length"]

IDENTITY = ("", "identity")


def wire_length(headers: Mapping[str, str], what: str) -> int | None:
    """The bytes the body must have on the wire, or None where its own framing tells its end.

    A chunked body must end with its last chunk (the HTTP client raises otherwise); a compressed
    one (gzip, deflate) with its compressed stream's end (:func:`decoded` raises otherwise);
    otherwise ``Content-Length`` counts it. A body with none of these, sent until the connection
    closes, cannot be told from a cut one: :class:`UnverifiableDownloadError`, before any byte is
    written. So is a coding this module does not decode (``br``, ``zstd``).
    """
    coding = content_coding(headers)
    if coding not in IDENTITY and coding not in COMPRESSED:
        raise UnverifiableDownloadError(
            f"{what}: the file host sent the file encoded as {coding!r} although asked for it uncompressed; "
            f"only gzip and deflate are decoded and checked for completeness, so the file is not written")
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        return None
    length = headers.get("Content-Length", "").strip()
    if length.isdigit():
        return int(length)
    if coding in COMPRESSED:
        return None
    raise UnverifiableDownloadError(
        f"{what}: the file host sent no Content-Length and neither chunked nor compressed the file, "
        "so a whole body cannot be told from a cut one; the file is not written (the file at the "
        "destination, if any, is left as it was)")


def decoded(chunks: Iterable[bytes], coding: str, what: str, *, limits: DownloadLimits | None = None,
            destination: str = "", received: Callable[[], int] | None = None) -> Iterator[bytes]:
    """The body's bytes decoded from ``coding``, in pieces of at most
    :data:`~analytics_provider.hooks.decoding.PIECE` bytes (the compressed rest fed back in); a
    compressed body that ends before its compressed stream does (or is corrupt) raises
    :class:`IncompleteDownloadError`. With ``limits``, a body that decodes past them (against the
    bytes ``received`` so far over the wire) raises
    :class:`~analytics_provider.exceptions.DownloadTooLargeError` before its next piece is given.
    """
    total = wire = 0
    for piece in _decoded(chunks, coding, what):
        total += len(piece)
        if limits is not None:
            wire = received() if received is not None else wire + len(piece)
            limits.check(total, wire, what, destination)
        yield piece


def _decoded(chunks: Iterable[bytes], coding: str, what: str) -> Iterator[bytes]:
    try:
        yield from decode_all(chunks, coding)
    except CodingError as exc:
        raise IncompleteDownloadError(f"{what}: {exc}", method="GET", path="/exports/download") from None
