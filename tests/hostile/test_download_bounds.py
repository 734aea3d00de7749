"""Issue 46, item 1: a download decodes in bounded pieces and refuses a body that decodes past
its limits (a compression bomb; a file past ``max_download_bytes``) before it replaces anything.

The file host is a local server that makes its bodies as it sends them; each test measures what
the bound is for: the worker's peak memory and the bytes it wrote (:mod:`hostile.measure`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from analytics_provider.api.call.settings import ConnectionConfigError
from analytics_provider.exceptions import AnalyticsParameterError, DownloadTooLargeError, DownloadTooSlowError
from analytics_provider.hooks.analytics import AnalyticsHook
from hostile.conftest import leaves_only_the_good_file
from hostile.measure import MiB, measured
from hostile.server import Answer, always, gzip_of_zeros, pieces

DECODED = 64 * MiB  # the bomb's size decoded; the default ratio stops it after 16 MiB


def zeros(size: int) -> Iterator[bytes]:
    block = bytes(MiB)
    for _ in range(size // MiB):
        yield block


def bomb() -> Answer:
    body = gzip_of_zeros(DECODED)
    return Answer(200, headers={"Content-Type": "text/csv", "Content-Encoding": "gzip"},
                  stream=lambda: pieces(body), content_length=len(body))


def test_a_gzip_bomb_is_refused_with_memory_and_disk_bounded(hook, server, target) -> None:
    server.answer = always(bomb())
    with measured() as cost, pytest.raises(DownloadTooLargeError) as refused:
        hook.download_export(9, target)
    text = str(refused.value)
    assert f"export of job 9: the file for destination {str(target)!r} decodes to more than" in text
    received = re.search(r"from ([\d,]+) bytes received", text)  # as much as had come when refused: the
    assert received and 0 < int(received[1].replace(",", "")) <= len(gzip_of_zeros(DECODED)), text  # whole or not
    assert "max_decode_ratio=100 (the default; set it in the connection's extra or the operator's argument)" in text
    assert leaves_only_the_good_file(target)
    assert len(server.requests) == 1  # not retried: the host would send the same
    assert cost.bytes_written < 17 * MiB  # 16 MiB free of the ratio, and one piece
    assert cost.peak_memory < 8 * MiB  # unbounded: the whole 64 MiB from one read


def test_the_connections_ratio_lets_a_regular_file_through(hook, server, target, connect) -> None:
    connect(max_decode_ratio=1100)  # the largest taken: past any gzip
    server.answer = always(bomb())
    with measured() as cost:
        assert hook.download_export(9, target)["bytes"] == DECODED
    assert target.stat().st_size == DECODED
    assert cost.peak_memory < 8 * MiB


def test_the_operators_limit_wins_over_the_connection(hook, server, target, connect) -> None:
    connect(max_decode_ratio=1100)  # the largest taken: past any gzip
    server.answer = always(bomb())
    with pytest.raises(DownloadTooLargeError, match=r"decodes to more than 20,971,520 bytes \(20.0 MiB\); refused.*"
                       r"max_download_bytes=20971520 \(the operator's argument\)"):
        hook.download_export(9, target, max_download_bytes=20 * MiB)
    assert leaves_only_the_good_file(target)


def test_a_plain_file_announced_past_the_limit_is_refused_before_a_byte(hook, server, target, connect) -> None:
    connect(max_download_bytes=8 * MiB)
    server.answer = always(Answer(200, headers={"Content-Type": "text/csv"}, stream=lambda: zeros(32 * MiB),
                                  content_length=32 * MiB))
    with measured() as cost, pytest.raises(DownloadTooLargeError) as refused:
        hook.download_export(9, target)
    assert "announces 33,554,432 bytes (32.0 MiB)" in str(refused.value)
    assert "max_download_bytes=8388608 (connection 'analytics_default''s extra)" in str(refused.value)
    assert cost.bytes_written < MiB and leaves_only_the_good_file(target)


def test_a_chunked_file_past_the_limit_stops_at_the_limit(hook, server, target, connect) -> None:
    connect(max_download_bytes=8 * MiB)
    server.answer = always(Answer(200, headers={"Content-Type": "text/csv"}, stream=lambda: zeros(64 * MiB),
                                  chunked=True))
    with measured() as cost, pytest.raises(DownloadTooLargeError, match="decodes to more than 8,388,608 bytes"):
        hook.download_export(9, target)
    assert cost.bytes_written < 10 * MiB and leaves_only_the_good_file(target)


DRIPPED = b"a,b\n" * 100  # 400 bytes, one every 50 ms: 20 s, each byte well inside the read timeout


def dripped_file() -> Answer:
    return Answer(200, DRIPPED, headers={"Content-Type": "text/csv"}, trickle=0.05)


def test_a_dripped_file_is_refused_at_the_connections_max_download_seconds(server, target, connect) -> None:
    server.answer = always(dripped_file())
    connect(max_download_seconds=1)
    hook = AnalyticsHook()  # the real clock: the limit is the world's time
    started = time.monotonic()
    with pytest.raises(DownloadTooSlowError) as refused:
        hook.download_export(9, target)
    seconds = time.monotonic() - started
    assert seconds < 10  # the old download took the drip's 20 s and wrote it
    assert str(refused.value) == (
        f"DownloadTooSlow on GET /exports/download: export of job 9: the file for destination {str(target)!r} "
        "did not come whole within 1 s; refused, the destination is left as it was. max_download_seconds=1 "
        "(connection 'analytics_default''s extra) would have to be raised to allow it")
    assert leaves_only_the_good_file(target)  # no partial file, nothing replaced
    assert len(server.requests) == 1  # not retried past the limit


def test_the_operators_max_download_seconds_wins_and_a_fast_file_passes(server, target, connect) -> None:
    server.answer = always(dripped_file())
    connect(max_download_seconds=600)
    hook = AnalyticsHook()
    with pytest.raises(DownloadTooSlowError, match=r"within 1.5 s; .* max_download_seconds=1.5 \(the operator's"):
        hook.download_export(9, target, max_download_seconds="1.5")
    server.answer = always(Answer(200, DRIPPED, headers={"Content-Type": "text/csv"}))
    assert hook.download_export(9, target, max_download_seconds=1)["bytes"] == len(DRIPPED)
    assert target.read_bytes() == DRIPPED


@pytest.mark.parametrize(("extra", "why"), [
    ({"max_download_bytes": 0}, r"max_download_bytes must be a whole number of bytes from 1 to .*, got 0"),
    ({"max_download_seconds": "inf"}, r"max_download_seconds must be a number of seconds from 1 to 604,800"),
    ({"max_decode_ratio": "lots"}, "max_decode_ratio must be a number of decoded bytes per byte received"),
])
def test_a_bad_limit_in_the_connection_is_refused_by_name(server, target, connect, extra, why) -> None:
    connect(**extra)
    hook = AnalyticsHook()
    with pytest.raises(ConnectionConfigError, match="connection .analytics_default.: " + why):
        hook.download_export(9, target)
    assert server.requests == []


def test_a_bad_limit_of_the_hook_is_refused_before_any_request(hook, server, target) -> None:
    with pytest.raises(AnalyticsParameterError, match="download_export: max_decode_ratio must be a number of decoded "
                                                      r"bytes per byte received from 1 to 1,100 .*, got 0.5"):
        hook.download_export(9, target, max_decode_ratio=0.5)
    assert server.requests == []


def test_each_setting_is_named_with_where_it_was_set(hook, server, target) -> None:
    """The operator set max_download_bytes; the default ratio stopped the bomb: the error called the
    ratio "the operator's argument" (found by a third attack on issue 46)."""
    server.answer = always(bomb())
    with pytest.raises(DownloadTooLargeError) as refused:
        hook.download_export(9, target, max_download_bytes=60 * MiB)
    assert "max_decode_ratio=100 (the default; set it in the connection's extra or the operator's argument)" in str(
        refused.value)
    assert leaves_only_the_good_file(target)
