"""Issue 33, problems 5 and 6, and destinations whose store is not installed: everything known
about where a file goes is checked before any request, and errors name the destination (and the
task, from an operator); the file host's file name is read as RFC 6266 says."""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

import pytest

from analytics_provider.exceptions import AnalyticsParameterError
from analytics_provider.hooks import download
from analytics_provider.hooks.disposition import filename_from_disposition
from analytics_provider.operators import AnalyticsExportWidgetOperator
from analytics_provider.testing.task_instance import FakeTaskInstance
from hostile.server import Answer, Seen, always

CSV = b"a,b\n1,2\n"


def file_host(disposition: str) -> Any:
    return always(Answer(200, CSV, {"Content-Type": "text/csv", "Content-Disposition": disposition}))


def export(**kwargs: Any) -> AnalyticsExportWidgetOperator:
    options: dict[str, Any] = {"task_id": "export", "widget_id": 5, "destination": "/tmp/unused.csv",
                               "poll_interval": 0.01}
    options.update(kwargs)
    return AnalyticsExportWidgetOperator(**options)


def job_service(seen: Seen) -> Answer:
    route = f"{seen.method} {seen.route}"
    if route == "GET /api/v2/dashboard_widgets/5":
        return Answer(200, {"dashboard_widget": {"dashboard": {"url": "https://x/d/1"}}})
    if route == "POST /api/v2/dashboard_widgets/5/submit_export":
        return Answer(200, {"job": {"id": 9, "status": "created"}})
    if route == "GET /api/v2/jobs/9":
        return Answer(200, {"job": {"id": 9, "status": "success"}})
    return Answer(200, CSV, {"Content-Type": "text/csv"})


# -- problem 5: file_mode -------------------------------------------------------------------------

BAD_MODES = [-1, 0o4777, 0o1000, 0o107777, "0640", "640", 6.4, True]


@pytest.mark.parametrize("mode", BAD_MODES)
def test_a_file_mode_outside_0_to_0o777_is_refused_before_any_request(hook, server, tmp_path, mode) -> None:
    with pytest.raises(AnalyticsParameterError, match=r"^file_mode must be an int from 0 to 0o777 \(such as 0o640\)"):
        hook.download_export(9, tmp_path / "out.csv", file_mode=mode)
    assert server.requests == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("mode", BAD_MODES)
def test_the_operator_refuses_a_bad_file_mode_when_the_dag_is_parsed(mode) -> None:
    with pytest.raises(AnalyticsParameterError, match=r"^export: file_mode must be an int from 0 to 0o777"):
        export(file_mode=mode)


def test_a_good_mode_gives_exactly_those_bits(hook, server, tmp_path) -> None:
    server.answer = always(Answer(200, CSV))
    hook.download_export(9, tmp_path / "out.csv", file_mode=0o600)
    assert stat.S_IMODE((tmp_path / "out.csv").stat().st_mode) == 0o600


# -- problem 6: the destination's file name, a full disk --------------------------------------------


@pytest.mark.parametrize(("name", "why"), [
    ("a\0b.csv", "holds a NUL character"),
    ("a" * 296 + ".csv", "is 300 bytes long; a file name has at most 255"),
    ("é" * 130 + ".csv", "is 264 bytes long; a file name has at most 255"),
])
def test_a_file_name_the_disk_cannot_take_is_refused_before_any_request(hook, server, tmp_path, name, why) -> None:
    destination = str(tmp_path / name)
    with pytest.raises(AnalyticsParameterError) as refused:
        hook.download_export(9, destination)
    assert str(refused.value).startswith(f"destination {destination!r}: the file name {why}")
    assert server.requests == [] and list(tmp_path.iterdir()) == []


def test_the_operator_names_the_task_and_the_destination_before_the_job(server, connect, tmp_path) -> None:
    server.answer = job_service
    destination = str(tmp_path / "a\0b.csv")
    with pytest.raises(AnalyticsParameterError,
                       match=r"^export: destination '.*a\\x00b.csv': the file name holds a NUL"):
        export(destination=destination).execute({"ti": FakeTaskInstance()})
    assert server.requests == []


class FullDisk:
    """The scratch file of a disk that fills after ``room`` bytes (ENOSPC, as a full disk answers)."""

    def __init__(self, real: Any, room: int) -> None:
        self.real, self.room = real, room

    def __call__(self, fd: int, mode: str) -> Any:
        handle = self.real(fd, mode)
        room = self.room

        class Filling:
            def __enter__(self) -> Any:
                return self

            def __exit__(self, *exc: object) -> None:
                handle.close()

            def fileno(self) -> int:
                return handle.fileno()

            def write(self, data: bytes) -> int:
                nonlocal room
                if len(data) > room:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                room -= len(data)
                return handle.write(data)

        return Filling()


def test_a_full_disk_says_so_names_the_destination_and_keeps_the_old_file(hook, server, tmp_path,
                                                                          monkeypatch) -> None:
    target = tmp_path / "out.csv"
    target.write_bytes(b"yesterday")
    server.answer = always(Answer(200, CSV))
    monkeypatch.setattr(download.os, "fdopen", FullDisk(os.fdopen, room=0))
    with pytest.raises(OSError) as raised:
        hook.download_export(9, target)
    assert raised.value.errno == errno.ENOSPC
    assert raised.value.strerror.startswith(f"export of job 9: destination {str(target)!r}: the disk is full")
    assert target.read_bytes() == b"yesterday" and [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_the_operator_names_the_task_on_a_full_disk(server, connect, tmp_path, monkeypatch) -> None:
    server.answer = job_service
    monkeypatch.setattr(download.os, "fdopen", FullDisk(os.fdopen, room=0))
    with pytest.raises(OSError, match=r"^\[Errno 28\] export: export of job 9: destination .*: the disk is full"):
        export(destination=str(tmp_path / "out.csv")).execute({"ti": FakeTaskInstance()})


# -- the file host's file name: RFC 6266 ------------------------------------------------------------

@pytest.mark.parametrize(("disposition", "saved"), [
    ("attachment; filename*=UTF-8''a%0Ab.csv", "a_b.csv"),
    ("attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.csv", "résumé.csv"),
    ("attachment; filename=\"plain.csv\"; filename*=UTF-8''r%C3%A9sum%C3%A9.csv", "résumé.csv"),
    ("attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.csv; filename=\"plain.csv\"", "résumé.csv"),
    ("attachment; filename*=iso-8859-1'en'caf%E9.csv", "café.csv"),
    ("attachment; filename=\"café.csv\"".encode().decode("latin-1"), "café.csv"),  # raw UTF-8 on the wire
    ("attachment; filename=\"a \\\"quoted\\\" name.csv\"", "a \"quoted\" name.csv"),
    ("attachment; filename=report.csv", "report.csv"),
    ("attachment; filename*=UTF-8''..%2F..%2Fetc%2Fpasswd", "passwd"),
    ("attachment; filename*=UTF-8''..", "export-9"),
    ("attachment; filename*=UTF-8''%00", "export-9"),
    ("attachment; filename=\"..\\\\..\\\\win.ini\"", "win.ini"),
])
def test_the_file_host_name_is_decoded_as_rfc_6266_says(hook, server, tmp_path, disposition, saved) -> None:
    server.answer = file_host(disposition)
    result = hook.download_export(9, f"{tmp_path}/")
    assert result["path"] == str(tmp_path / saved)
    assert [p.name for p in tmp_path.iterdir()] == [saved]


def test_a_long_proposed_name_is_cut_to_fit_and_keeps_its_extension() -> None:
    name = filename_from_disposition("attachment; filename*=UTF-8''" + "%C3%A9" * 200 + ".xlsx")
    assert name is not None and name.endswith(".xlsx") and len(name.encode()) <= 200


# -- destinations whose store is not installed ----------------------------------------------------

@pytest.mark.parametrize(("destination", "says"), [
    ("s3://reports/2026-01-01/revenue.xlsx", "apache-airflow-providers-amazon[s3fs]"),
    ("gs://reports/revenue.xlsx", "apache-airflow-providers-google"),
    ("abfs://reports@account.dfs.core.windows.net/revenue.xlsx", "apache-airflow-providers-microsoft-azure"),
    ("ftp://example/revenue.xlsx", "no Airflow filesystem for 'ftp://'"),
    # Airflow 2.11 makes a path of any scheme (then it has no filesystem for it); Airflow 3 does not
    ("nosuch://bucket/revenue.xlsx", ("'nosuch://' is no scheme", "no Airflow filesystem for 'nosuch://'")),
])
def test_a_store_that_is_not_installed_is_refused_before_any_request(hook, server, destination, says) -> None:
    with pytest.raises(AnalyticsParameterError) as refused:
        hook.download_export(9, destination)
    assert str(refused.value).startswith(f"destination {destination!r}: ")
    assert any(text in str(refused.value) for text in ((says,) if isinstance(says, str) else says))
    assert server.requests == []


def test_the_export_operator_refuses_it_before_the_job_naming_task_and_package(server, connect) -> None:
    server.answer = job_service
    with pytest.raises(AnalyticsParameterError,
                       match=r"^export: destination 's3://reports/x.xlsx': .*apache-airflow-providers-amazon\[s3fs\]"):
        export(destination="s3://reports/x.xlsx").execute({"ti": FakeTaskInstance()})
    assert server.requests == []


def test_a_store_fsspec_has_is_still_accepted_as_a_path_object(tmp_path) -> None:
    from upath import UPath

    download.check_destination(UPath("memory://bucket/exports/x.csv"))


def test_the_query_operator_checks_its_destination_before_any_request(server, connect) -> None:
    from analytics_provider.operators import AnalyticsQueryDataSetOperator

    query = {"dimensions": [{"id": "region", "field": "orders.region"}],
             "metrics": [{"id": "revenue", "field": "orders.revenue", "aggregation": "sum"}]}
    op = AnalyticsQueryDataSetOperator(task_id="query", data_set_id=1, query=query, destination="s3://reports/x.csv")
    with pytest.raises(AnalyticsParameterError,
                       match=r"^query: destination 's3://reports/x.csv': .*apache-airflow-providers-amazon\[s3fs\]"):
        op.execute({"ti": FakeTaskInstance()})
    assert server.requests == []


@pytest.mark.parametrize(("given", "why"), [
    ({"max_download_bytes": -1}, r"max_download_bytes must be a whole number of bytes .*, got -1"),
    ({"max_download_bytes": 1.5}, r"max_download_bytes must be a whole number of bytes .*, got 1.5"),
    ({"max_decode_ratio": 0}, r"max_decode_ratio must be a number of decoded bytes per byte received .*got 0"),
])
def test_the_operator_refuses_a_bad_download_limit_when_the_dag_is_parsed(given, why) -> None:
    with pytest.raises(AnalyticsParameterError, match="^export: " + why):
        export(**given)
