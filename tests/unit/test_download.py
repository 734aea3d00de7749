"""download_export: redirect without the key, streaming, size check, atomic write."""

from __future__ import annotations

import os

import pytest
import requests

from analytics_provider.exceptions import ExportJobNotReady, IncompleteDownloadError

from .conftest import BASE, KEY

FILES = "https://files.example-bucket.test/exports/abc/report.csv"
CSV = b"region,revenue\nEU,10\nUS,12\n"


def _redirect(mock, body: bytes = CSV, length: int | None = None, **file_kwargs) -> None:
    mock.get(BASE + "/exports/download", status_code=302, headers={"Location": FILES})
    headers = {
        "Content-Type": "text/csv; charset=utf-8",
        "Content-Length": str(len(body) if length is None else length),
        "Content-Disposition": 'attachment; filename="report.csv"',
    }
    mock.get(FILES, content=body, headers=headers, **file_kwargs)


def test_follows_the_redirect_without_the_key(hook, mock, tmp_path) -> None:
    _redirect(mock)
    result = hook.download_export(7, tmp_path / "out.csv")
    assert result == {"path": str(tmp_path / "out.csv"), "bytes": len(CSV), "content_type": "text/csv"}
    assert (tmp_path / "out.csv").read_bytes() == CSV
    api, files = mock.request_history
    assert api.qs == {"job_id": ["7"]} and api.headers["X-Holistics-Key"] == KEY
    assert "X-Holistics-Key" not in files.headers
    assert KEY not in str(files.headers)


def test_a_folder_destination_takes_the_service_file_name(hook, mock, tmp_path) -> None:
    _redirect(mock)
    result = hook.download_export(7, str(tmp_path) + "/")
    assert result["path"] == str(tmp_path / "report.csv")


def test_short_body_leaves_nothing_at_the_destination(hook, mock, tmp_path, sleeps) -> None:
    _redirect(mock, length=len(CSV) + 100)
    target = tmp_path / "out.csv"
    with pytest.raises(IncompleteDownloadError, match=f"received {len(CSV)} of {len(CSV) + 100} bytes"):
        hook.download_export(7, target)
    assert not target.exists()
    assert os.listdir(tmp_path) == []  # no temporary file left behind either
    assert len(sleeps) == 4  # an incomplete transfer is retried like any transport failure


def test_a_broken_stream_is_retried_and_then_succeeds(hook, mock, tmp_path) -> None:
    mock.get(BASE + "/exports/download", status_code=302, headers={"Location": FILES})
    mock.get(
        FILES,
        [
            {"exc": requests.exceptions.ChunkedEncodingError("Connection broken: IncompleteRead")},
            {"content": CSV, "headers": {"Content-Length": str(len(CSV))}},
        ],
    )
    assert hook.download_export(7, tmp_path / "x.csv")["bytes"] == len(CSV)


def test_an_existing_file_is_replaced_only_when_complete(hook, mock, tmp_path) -> None:
    target = tmp_path / "out.csv"
    target.write_bytes(b"yesterday")
    _redirect(mock, length=999)
    hook.retry_policy = type(hook.retry_policy)(max_attempts=1)
    with pytest.raises(IncompleteDownloadError):
        hook.download_export(7, target)
    assert target.read_bytes() == b"yesterday"


def test_not_ready_raises_without_retry(hook, mock, tmp_path) -> None:
    mock.get(
        BASE + "/exports/download",
        status_code=422,
        json={"type": "ExportJobNotReady", "message": "Job 7 is still running"},
    )
    with pytest.raises(ExportJobNotReady, match="422 ExportJobNotReady on GET /exports/download: Job 7"):
        hook.download_export(7, tmp_path / "x.csv")
    assert mock.call_count == 1


def test_the_key_goes_along_only_to_the_same_origin(hook, mock, tmp_path) -> None:
    same = BASE.replace("/api/v2", "") + "/files/report.csv"
    mock.get(BASE + "/exports/download", status_code=302, headers={"Location": same})
    mock.get(same, content=CSV, headers={"Content-Length": str(len(CSV))})
    hook.download_export(7, tmp_path / "x.csv")
    assert mock.request_history[1].headers["X-Holistics-Key"] == KEY


def test_object_storage_destination(hook, mock, tmp_path) -> None:
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    _redirect(mock)
    target = ObjectStoragePath(f"file://{tmp_path}/nested/out.csv")
    result = hook.download_export(7, target)
    assert (tmp_path / "nested" / "out.csv").read_bytes() == CSV
    assert result["bytes"] == len(CSV)


def test_remote_object_storage_receives_one_complete_upload(hook, mock) -> None:
    from upath import UPath  # what ObjectStoragePath builds on; its memory store stands in for s3

    _redirect(mock)
    target = UPath("memory://bucket/exports/out.csv")
    result = hook.download_export(7, target)
    assert result["path"].endswith("bucket/exports/out.csv")
    assert target.read_bytes() == CSV


def test_the_file_is_asked_for_uncompressed_so_its_size_can_be_checked(hook, mock, tmp_path) -> None:
    _redirect(mock)
    hook.download_export(7, tmp_path / "x.csv")
    assert mock.request_history[1].headers["Accept-Encoding"] == "identity"


def test_endless_redirects_end_in_a_final_error(hook, mock, tmp_path) -> None:
    from analytics_provider.exceptions import AnalyticsApiError, AnalyticsTransportError

    mock.get(BASE + "/exports/download", status_code=302, headers={"Location": FILES})
    mock.get(FILES, status_code=302, headers={"Location": FILES})
    with pytest.raises(AnalyticsApiError, match="more than 5 redirects") as raised:
        hook.download_export(7, tmp_path / "x.csv")
    assert not isinstance(raised.value, AnalyticsTransportError)  # not retried: the loop would come again
    assert mock.call_count == 6
    assert not list(tmp_path.iterdir())


def test_a_remote_folder_spelled_with_a_slash_keeps_the_file_name(hook, mock, monkeypatch) -> None:
    from upath import UPath

    from analytics_provider.hooks import download

    monkeypatch.setattr(download, "_remote_path", lambda d: UPath(str(d).rstrip("/")) if "://" in str(d) else None)
    _redirect(mock)
    result = hook.download_export(7, "memory://bucket/daily/")
    assert result["path"].endswith("bucket/daily/report.csv")
    assert UPath("memory://bucket/daily/report.csv").read_bytes() == CSV


def test_an_object_storage_path_is_kept_whole_with_its_connection() -> None:
    """Not rebuilt from its text (which would drop conn_id), whatever universal-pathlib makes of it."""
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    from analytics_provider.hooks.download import _remote_path

    target = ObjectStoragePath("s3://bucket/exports/out.csv", conn_id="aws_reports")
    assert _remote_path(target) is target
