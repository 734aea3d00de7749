"""A body's content coding undone here, in bounded pieces, for both drivers and the download.

Neither HTTP client decodes for us: how much one decompress call of ``urllib3`` or ``aiohttp``
may make depends on their release (some make all that a read's compressed bytes hold, a thousand
times their size), and what they made is counted only after it is in memory. :class:`Decoder`
gives at most :data:`PIECE` bytes a call, the compressed rest fed back in; :class:`BoundedBody`
keeps an answer's decoded bytes up to its limit and tells the driver to stop reading there.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Mapping

from analytics_provider.exceptions import CodingError

__all__ = ["ACCEPTED", "COMPRESSED", "PIECE", "BoundedBody", "CodingError", "Decoder", "content_coding", "decode_all"]

COMPRESSED = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
"""The content codings decoded (zlib's window bits), each ending in a mark (gzip's trailer: CRC
and size; zlib's checksum) that tells a whole body from a cut one."""
ACCEPTED = "gzip, deflate"
"""What both drivers offer in ``Accept-Encoding``: the codings :class:`Decoder` undoes."""
PIECE = 256 * 1024
"""Decoded bytes one decompress call gives at most (``max_length``): what a read costs in memory,
however much its compressed bytes hold."""


def content_coding(headers: Mapping[str, str]) -> str:
    return headers.get("Content-Encoding", "").strip().lower()


class Decoder:
    """Undoes ``coding`` (gzip, deflate; none or ``identity`` passes as it is) chunk by chunk; a
    body in any other coding (``br``, ``zstd``: not asked for) raises :class:`CodingError`."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._bits = COMPRESSED.get(coding)
        self._zlib = None if self._bits is None else zlib.decompressobj(self._bits)
        self._unknown = self._bits is None and coding not in ("", "identity")

    @property
    def compressed(self) -> bool:
        return self._zlib is not None

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The decoded bytes of ``chunk``, in pieces of at most :data:`PIECE` bytes."""
        if self._bits is None or self._zlib is None:
            if chunk and self._unknown:
                raise CodingError(f"it is encoded as {self.coding!r}, which was not asked for (Accept-Encoding: "
                                  f"{ACCEPTED}) and is not decoded")
            if chunk:
                yield chunk
            return
        try:
            while chunk:
                if self._zlib.eof:  # a gzip file may hold several members
                    self._zlib = zlib.decompressobj(self._bits)
                piece = self._zlib.decompress(chunk, PIECE)
                if piece:
                    yield piece
                chunk = self._zlib.unused_data if self._zlib.eof else self._zlib.unconsumed_tail
        except zlib.error as exc:
            raise CodingError(f"the compressed body is corrupt ({self.coding}: {exc})") from None

    def end(self) -> Iterator[bytes]:
        """What the decoder still holds once the body ended; :class:`CodingError` when the
        compressed stream had not ended."""
        if self._zlib is None:
            return
        try:
            while not self._zlib.eof:
                piece = self._zlib.decompress(b"", PIECE)
                if not piece:
                    break
                yield piece
            if not self._zlib.eof:
                raise CodingError(f"the compressed body ends before its end ({self.coding})", cut=True)
            rest = self._zlib.flush()
        except zlib.error as exc:
            raise CodingError(f"the compressed body is corrupt ({self.coding}: {exc})") from None
        if rest:
            yield rest


def decode_all(chunks: Iterable[bytes], coding: str) -> Iterator[bytes]:
    """``chunks`` decoded from ``coding``, piece by piece, the decoder's end checked."""
    decoder = Decoder(coding)
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.end()


class BoundedBody:
    """An answer's body, decoded, kept up to ``limit`` bytes: a driver adds what it reads until
    :meth:`add` says the body is full (or the answer ends), then takes :meth:`value`. Memory holds
    ``limit`` bytes and one piece, whatever the compressed bytes would decode to: the body grows
    in place in one ``bytearray``, which :meth:`value` gives as it is (joining pieces, or copying
    into ``bytes``, would hold the limit twice)."""

    def __init__(self, coding: str, limit: int) -> None:
        self._decoder = Decoder(coding)
        self._body = bytearray()
        self._left = limit
        self.wire = 0

    @property
    def full(self) -> bool:
        return self._left <= 0

    def add(self, chunk: bytes) -> bool:
        """Take ``chunk`` (bytes as they came over the wire); True once the body is full."""
        self.wire += len(chunk)
        for piece in self._decoder.feed(chunk):
            self._keep(piece)
            if self.full:
                break
        return self.full

    def value(self) -> bytes:
        """The body read (its decoder's end checked when the answer ended within the limit)."""
        if not self.full:
            for piece in self._decoder.end():
                self._keep(piece)
        return self._body  # type: ignore[return-value]  # a bytearray, read as bytes are (json.loads, errors)

    def _keep(self, piece: bytes) -> None:
        self._body += piece if len(piece) <= self._left else memoryview(piece)[: max(self._left, 0)]
        self._left -= len(piece)
