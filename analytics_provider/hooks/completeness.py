"""How a download knows its body arrived whole: its length, its chunked framing, or its compressed
stream's end; and refusing a body nothing can vouch for."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping

from analytics_provider.api.call.limits import DownloadLimits
from analytics_provider.exceptions import IncompleteDownloadError, UnverifiableDownloadError

IDENTITY = ("", "identity")
COMPRESSED = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
"""The content codings a download decodes itself (zlib's window bits), each ending in a mark
(gzip's trailer: CRC and size; zlib's checksum) that tells a whole body from a cut one."""


def content_coding(headers: Mapping[str, str]) -> str:
    return headers.get("Content-Encoding", "").strip().lower()


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


PIECE = 256 * 1024
"""Decoded bytes one decompress call gives at most (``max_length``): what a read costs in memory,
however much its compressed bytes hold."""


def decoded(chunks: Iterable[bytes], coding: str, what: str, *, limits: DownloadLimits | None = None,
            destination: str = "", received: Callable[[], int] | None = None) -> Iterator[bytes]:
    """The body's bytes decoded from ``coding``, in pieces of at most :data:`PIECE` bytes (the
    compressed rest fed back in); a compressed body that ends before its compressed stream does
    (or is corrupt) raises :class:`IncompleteDownloadError`. With ``limits``, a body that decodes
    past them (against the bytes ``received`` so far over the wire) raises
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
    if coding not in COMPRESSED:
        yield from chunks
        return
    decoder = zlib.decompressobj(COMPRESSED[coding])
    try:
        for chunk in chunks:
            while chunk:
                if decoder.eof:  # a gzip file may hold several members
                    decoder = zlib.decompressobj(COMPRESSED[coding])
                piece = decoder.decompress(chunk, PIECE)
                if piece:
                    yield piece
                chunk = decoder.unused_data if decoder.eof else decoder.unconsumed_tail
        while not decoder.eof:  # output zlib still holds once all the input went in
            piece = decoder.decompress(b"", PIECE)
            if not piece:
                break
            yield piece
        if not decoder.eof:
            raise IncompleteDownloadError(f"{what}: the compressed body ends before its end ({coding})",
                                          method="GET", path="/exports/download")
        yield decoder.flush()
    except zlib.error as exc:
        raise IncompleteDownloadError(f"{what}: the compressed body is corrupt ({coding}: {exc})",
                                      method="GET", path="/exports/download") from None
