"""A query's file is bounded as a download is: a service whose pages never end (every page full,
no row count) wrote on until the disk filled; the connection's ``max_download_bytes`` and
``max_download_seconds`` now end it, naming the task, the destination and the setting, with no file
left (issue 46)."""

from __future__ import annotations

import pytest

from analytics_provider.exceptions import DownloadTooLargeError, DownloadTooSlowError
from analytics_provider.operators.query import PAGE_SIZE, AnalyticsQueryDataSetOperator
from analytics_provider.testing.task_instance import FakeTaskInstance
from hostile.measure import measured
from hostile.server import Answer, always

FULL_PAGE = Answer(200, {"fields": ["region", "revenue"], "values": [["north-east", 1234.5]] * PAGE_SIZE,
                         "meta": {}})  # about 24 KB of CSV, again and again: a page of a service that never ends


QUERY = {"dimensions": [{"id": "region", "field": "orders.region"}],
         "metrics": [{"id": "revenue", "field": "orders.revenue", "aggregation": "sum"}]}


def query(tmp_path, **kwargs):
    return AnalyticsQueryDataSetOperator(task_id="rows_to_file", data_set_id=1, query=QUERY,
                                         destination=str(tmp_path / "rows.csv"), **kwargs)


def test_endless_full_pages_end_at_max_download_bytes_with_no_file(server, connect, tmp_path) -> None:
    connect(max_download_bytes=1_048_576)
    server.answer = always(FULL_PAGE)
    with measured() as cost, pytest.raises(DownloadTooLargeError) as refused:
        query(tmp_path).execute({"ti": FakeTaskInstance()})
    text = str(refused.value)
    assert "rows_to_file: query on data set 1: the file for destination" in text and "rows.csv" in text
    assert "passes 1,048,576 bytes (1.0 MiB)" in text and "max_download_bytes=1048576" in text
    assert "POST /data_sets/1/submit_query" in text
    assert list(tmp_path.iterdir()) == []  # neither the file nor its scratch copy
    assert cost.bytes_written < 1_200_000, cost  # the bound and a batch of rows, not the pages that kept coming
    assert len(server.requests) < 60  # 24 KB a page: about 43 pages to the bound


def test_endless_full_pages_end_at_max_download_seconds(server, connect, tmp_path, monkeypatch) -> None:
    from analytics_provider.hooks.analytics import AnalyticsHook

    connect(max_download_seconds=30)
    server.answer = always(FULL_PAGE)
    now = [1000.0]

    def clock() -> float:  # each read of the clock is a second of a service that drips its pages
        now[0] += 1
        return now[0]

    monkeypatch.setattr(AnalyticsHook, "clock", staticmethod(clock))
    with pytest.raises(DownloadTooSlowError) as refused:
        query(tmp_path).execute({"ti": FakeTaskInstance()})
    assert "did not come whole within 30 s" in str(refused.value) and "max_download_seconds=30" in str(refused.value)
    assert list(tmp_path.iterdir()) == []
