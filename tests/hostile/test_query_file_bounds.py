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


WIDE = [f"f{n}_" + "n" * 5000 for n in range(20)]  # the service names the fields: 20 names of 5 KB
WIDE_PAGE = Answer(200, {"fields": WIDE, "values": [[""] * 20] * PAGE_SIZE, "meta": {}})  # 0.1 MB on the wire


def test_wide_field_names_are_written_in_bounded_batches(server, connect, tmp_path) -> None:
    """A JSON record repeats every field name: a batch of 1000 such rows was 100 MB of text before the
    file's bound was checked (100 names of 5 KB: 1.5 GB of memory from a 0.86 MiB page)."""
    connect(max_download_bytes=4 * 1_048_576)
    server.answer = always(WIDE_PAGE)
    operator = AnalyticsQueryDataSetOperator(task_id="rows_to_file", data_set_id=1, query=QUERY,
                                             destination=str(tmp_path / "rows.json"))
    with measured() as cost, pytest.raises(DownloadTooLargeError, match="passes 4,194,304 bytes"):
        operator.execute({"ti": FakeTaskInstance()})
    assert cost.peak_memory < 24 * 1_048_576, cost  # a batch of about 1 MiB, the page, the file's bound
    assert list(tmp_path.iterdir()) == []


def test_returned_rows_are_bounded_by_their_json_not_only_their_count(server, connect) -> None:
    """Without a destination, 999 rows under max_return_rows made an XCom of 478 MiB from a 0.86 MiB answer."""
    from analytics_provider.operators.query import AnalyticsQueryResultTooLargeError

    server.answer = always(Answer(200, {"fields": WIDE, "values": [[""] * 20] * 999, "meta": {"num_rows": 999}}))
    operator = AnalyticsQueryDataSetOperator(task_id="rows", data_set_id=1, query=QUERY)
    with pytest.raises(AnalyticsQueryResultTooLargeError) as refused:
        operator.execute({"ti": FakeTaskInstance()})
    assert "rows: the query on data set 1 gives rows of more than 4,194,304 bytes of JSON (max_xcom_bytes)" in str(
        refused.value)
    server.answer = always(Answer(200, {"fields": WIDE, "values": [[""] * 20] * 100, "meta": {"num_rows": 100}}))
    allowed = AnalyticsQueryDataSetOperator(task_id="rows", data_set_id=1, query=QUERY, max_xcom_bytes=16 * 1_048_576)
    assert len(allowed.execute({"ti": FakeTaskInstance()})["rows"]) == 100  # 10 MB of JSON, when asked for


ODD = {  # answers from the cache that are neither a job nor rows, and what the error says of each
    "a list": ([["north-east", 1]], "not an object but list"),
    "rows as objects": ({"fields": ["region"], "values": [{"region": "north"}]}, "its row 1 is dict"),
    "a row as a string": ({"fields": ["region"], "values": [["north"], "south"]}, "its row 2 is str"),
    "no values": ({"fields": ["region"], "rows": []}, "no list of values"),
    "fields as a string": ({"fields": "region", "values": [["north"]]}, "its fields are str"),
    "meta as a list": ({"fields": ["region"], "values": [["north"]], "meta": []}, "its meta is list"),
}


@pytest.mark.parametrize("page", [1, 2])
@pytest.mark.parametrize("odd", ODD)
def test_an_odd_answer_from_the_cache_is_an_error_naming_it_not_rows_made_up(server, connect, tmp_path, odd,
                                                                           page) -> None:
    """Before (fifth attack): a KeyError or a TypeError, or, for rows given as objects, a file of their
    keys written as if they were the values."""
    from analytics_provider.exceptions import UnexpectedResponseError
    from hostile.server import in_turn

    body, said = ODD[odd]
    connect()
    server.answer = in_turn(*([FULL_PAGE] * (page - 1)), Answer(200, body))
    with pytest.raises(UnexpectedResponseError) as refused:
        query(tmp_path).execute({"ti": FakeTaskInstance()})
    text = str(refused.value)
    assert f"rows_to_file: the answer from the cache to the query on data set 1 (page {page}) is neither a job " \
           f"nor rows ({said}" in text, text
    assert list(tmp_path.iterdir()) == []
