"""Issue 33, problem 4: no file whose completeness is unknown replaces a good one.

A body with a ``Content-Length`` is checked against it; a chunked body must end with its last
chunk; a compressed body must end its compressed stream (gzip's trailer). A body that has none of
these (no length, sent plainly until the connection closes) cannot be told from a cut one: it is
refused as unverifiable, and the file already at the destination stays.
"""

from __future__ import annotations

import gzip
import zlib

import pytest

from analytics_provider.exceptions import IncompleteDownloadError, UnverifiableDownloadError
from hostile.conftest import leaves_only_the_good_file
from hostile.server import Answer, always

CSV = b"id,name\n" + b"".join(b"%d,row number %d\n" % (i, i) for i in range(200))
HEADERS = {"Content-Type": "text/csv"}


def test_a_body_without_length_cut_halfway_leaves_the_good_file(hook, server, target) -> None:
    server.answer = always(Answer(200, CSV, HEADERS, length_header=False, cut=len(CSV) // 2))
    with pytest.raises(UnverifiableDownloadError, match="export of job 9: the file host sent no Content-Length"):
        hook.download_export(9, target)
    assert leaves_only_the_good_file(target)
    assert len(server.requests) == 1  # not retried: the host would answer the same


def test_a_body_without_length_is_refused_even_whole_since_nothing_can_tell(hook, server, target) -> None:
    server.answer = always(Answer(200, CSV, HEADERS, length_header=False))
    with pytest.raises(UnverifiableDownloadError, match="cannot be told from a cut one"):
        hook.download_export(9, target)
    assert leaves_only_the_good_file(target)


def test_a_whole_chunked_body_is_accepted(hook, server, target) -> None:
    server.answer = always(Answer(200, CSV, HEADERS, chunked=True))
    assert hook.download_export(9, target)["bytes"] == len(CSV)
    assert target.read_bytes() == CSV


def test_a_chunked_body_without_its_last_chunk_leaves_the_good_file(hook, server, target) -> None:
    server.answer = always(Answer(200, CSV, HEADERS, chunked=True, cut=len(CSV) // 2))
    with pytest.raises(IncompleteDownloadError):
        hook.download_export(9, target)
    assert leaves_only_the_good_file(target)


def test_a_gzip_body_without_length_is_checked_by_its_trailer(hook, server, target) -> None:
    server.answer = always(Answer(200, CSV, HEADERS, gzip_always=True, length_header=False))
    assert hook.download_export(9, target)["bytes"] == len(CSV)
    assert target.read_bytes() == CSV


@pytest.mark.parametrize("length_header", [True, False], ids=["with-length", "without-length"])
def test_a_gzip_body_missing_its_last_bytes_leaves_the_good_file(hook, server, target, length_header) -> None:
    cut = gzip.compress(CSV)[:-30]  # the length announced is that of what is sent: only gzip can tell
    server.answer = always(Answer(200, cut, {**HEADERS, "Content-Encoding": "gzip"}, length_header=length_header))
    with pytest.raises(IncompleteDownloadError, match="the compressed body ends before its end"):
        hook.download_export(9, target)
    assert leaves_only_the_good_file(target)


def test_a_deflate_body_is_checked_by_its_end_too(hook, server, target) -> None:
    whole = zlib.compress(CSV)
    server.answer = always(Answer(200, whole, {**HEADERS, "Content-Encoding": "deflate"}, length_header=False))
    assert hook.download_export(9, target)["bytes"] == len(CSV)
    server.answer = always(Answer(200, whole[:-4], {**HEADERS, "Content-Encoding": "deflate"}, length_header=False))
    with pytest.raises(IncompleteDownloadError):
        hook.download_export(9, target)
    assert target.read_bytes() == CSV


def test_an_encoding_that_cannot_be_checked_is_refused(hook, server, target) -> None:
    server.answer = always(Answer(200, CSV, {**HEADERS, "Content-Encoding": "br"}, length_header=False))
    with pytest.raises(UnverifiableDownloadError, match="'br'"):
        hook.download_export(9, target)
    assert leaves_only_the_good_file(target)
