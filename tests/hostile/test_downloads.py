"""Issue 8, cases 6, 8 and 9 (downloads): compressed answers, the destination checked first, file
modes, and a refusal of the file host told apart from one of the API."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

import pytest

from analytics_provider.exceptions import (
    AnalyticsApiError,
    AnalyticsParameterError,
    AnalyticsTransportError,
    IncompleteDownloadError,
    PermissionDeniedError,
)
from analytics_provider.hooks.download import check_destination
from hostile.conftest import GOOD, KEY
from hostile.server import Answer, HostileServer, Seen, always

CSV = b"id,name\n" + b"".join(b"%d,row number %d\n" % (i, i) for i in range(2000))


def direct(**kwargs: object) -> Answer:
    return Answer(200, CSV, {"Content-Type": "text/csv", "Content-Disposition": 'attachment; filename="w.csv"'},
                  **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_direct_download_is_asked_uncompressed_and_arrives_whole(hook, server, tmp_path) -> None:
    server.answer = always(direct(gzip_if_asked=True))
    result = hook.download_export(9, tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_bytes() == CSV and result["bytes"] == len(CSV)
    assert server.requests[0].headers["Accept-Encoding"] == "identity"


def test_a_host_that_compresses_anyway_is_counted_by_what_arrived(hook, server, tmp_path) -> None:
    server.answer = always(direct(gzip_always=True))
    hook.download_export(9, tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_bytes() == CSV  # decoded; Content-Length counted the compressed bytes


def test_a_short_download_leaves_no_file(hook, server, tmp_path) -> None:
    server.answer = always(direct(content_length=len(CSV) + 100))
    with pytest.raises(IncompleteDownloadError):
        hook.download_export(9, tmp_path / "out.csv")
    assert list(tmp_path.iterdir()) == []
    assert len(server.requests) == 5  # retried


def test_the_file_gets_the_mode_of_a_plain_write(hook, server, tmp_path, umask_022) -> None:
    server.answer = always(direct())
    hook.download_export(9, tmp_path / "out.csv")
    assert stat.S_IMODE((tmp_path / "out.csv").stat().st_mode) == 0o644


def test_another_file_mode_can_be_asked_for(hook, server, tmp_path, umask_022) -> None:
    server.answer = always(direct())
    hook.download_export(9, tmp_path / "out.csv", file_mode=0o640)
    assert stat.S_IMODE((tmp_path / "out.csv").stat().st_mode) == 0o640


@pytest.mark.parametrize("destination", ["/proc/x.csv", "/sys/x.csv", "/proc/self/nothing/x.csv"])
def test_an_unwritable_destination_is_refused_before_any_request(hook, server, destination) -> None:
    with pytest.raises(AnalyticsParameterError, match=f"destination '{destination}'"):
        hook.download_export(9, destination)
    assert server.requests == []


def test_a_file_standing_where_the_folder_should_be_is_refused(tmp_path) -> None:
    (tmp_path / "blocker").write_text("")
    with pytest.raises(AnalyticsParameterError, match=r"destination .*cannot be written"):
        check_destination(tmp_path / "blocker" / "x.csv")


def test_a_missing_folder_is_created_and_left_clean(tmp_path) -> None:
    check_destination(tmp_path / "new" / "deeper" / "x.csv")
    assert list((tmp_path / "new" / "deeper").iterdir()) == []  # the probe file is gone


@pytest.mark.parametrize("bad", [None, "", "  ", 42])
def test_no_destination_is_refused_by_name(bad) -> None:
    with pytest.raises(AnalyticsParameterError, match="destination"):
        check_destination(bad)


def test_an_object_store_is_checked_without_a_request() -> None:
    from upath import UPath

    check_destination(UPath("memory://bucket/exports/x.csv"))  # a path object of fsspec's store
    with pytest.raises(AnalyticsParameterError, match="there is no Airflow filesystem for 'memory://' here"):
        check_destination("memory://bucket/exports/x.csv")  # a URL writes through Airflow's, which has none


def test_a_refusal_of_the_file_host_says_so(hook, server, tmp_path) -> None:
    with HostileServer() as files:
        files.answer = always(Answer(403, "<Error><Code>AccessDenied</Code><Message>Request has expired</Message>"
                                          "</Error>", {"Content-Type": "application/xml"}))
        link = f"{files.origin}/bucket/export-9.csv?X-Signature=s3cr3t&Expires=1"
        server.answer = always(Answer(302, b"", {"Location": link}))
        with pytest.raises(PermissionDeniedError) as raised:
            hook.download_export(9, tmp_path / "out.csv")
        text = str(raised.value)
        assert f"on GET {files.origin}/bucket/export-9.csv" in text
        assert "file host refused the signed download link of job 9's export" in text
        assert "/exports/download" not in text and "s3cr3t" not in text
        assert "X-Service-Key" not in files.requests[0].headers
        assert files.requests[0].headers["Accept-Encoding"] == "identity"


def test_a_refusal_of_the_api_still_names_the_api(hook, server, tmp_path) -> None:
    def answer(seen: Seen) -> Answer:
        return Answer(403, {"type": "PermissionDeniedError", "message": "not yours"})

    server.answer = answer
    with pytest.raises(PermissionDeniedError, match="403 PermissionDeniedError on GET /exports/download: not yours"):
        hook.download_export(9, tmp_path / "out.csv")
    assert KEY not in str(server.requests[0].path)


def test_a_redirect_loop_is_a_final_error_not_retried(hook, server, target) -> None:
    """A file host that redirects to itself for ever: six requests (the first and five redirects),
    then one error, not retried (the old download retried the loop: 24 requests)."""
    server.answer = always(Answer(302, b"", {"Location": f"{server.base_url}/exports/download?job_id=9"}))
    with pytest.raises(AnalyticsApiError) as raised:
        hook.download_export(9, target)
    assert not isinstance(raised.value, AnalyticsTransportError)
    assert str(raised.value) == ("302 TooManyRedirects on GET /exports/download: export of job 9: more than 5 "
                                 "redirects "
                                 "(the last from 127.0.0.1); not retried")
    assert len(server.requests) == 6
    assert target.read_bytes() == GOOD  # left as it was
