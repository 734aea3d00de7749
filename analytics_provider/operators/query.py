"""Running a query on a data set: the rows written to a file (csv or json), or returned when few."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.common.compat.sdk import AirflowFailException

from analytics_provider.api.wire.filters import check_data_set_query
from analytics_provider.exceptions import (
    AnalyticsJobError,
    AnalyticsParameterError,
    UnexpectedResponseError,
    bounded,
    naming_the_task,
    refused,
)
from analytics_provider.lineage_mixin import LineageFunction
from analytics_provider.operators.analytics import is_templated
from analytics_provider.operators.base import AnalyticsJobOperator

if TYPE_CHECKING:
    from airflow.sdk import Context

QUERY_FILE_FORMATS = ("csv", "json")
PAGE_SIZE = 1000
"""Rows asked for in one page: the most the service gives."""
DEFAULT_MAX_RETURN_ROWS = 1000
DEFAULT_MAX_XCOM_BYTES = 4 * 1_048_576
"""The bytes of JSON the rows a query task returns may take in XCom (Airflow's database): 1000 rows
of 20 fields are about 0.5 MB; a record repeats every field name, which the service chooses."""


class AnalyticsQueryResultTooLargeError(AirflowFailException):
    """More rows than ``max_return_rows`` for a task that returns its rows; give it a destination.

    The task fails without retries: another try would get as many rows."""


class _AnsweredAtOnce(Exception):  # not an error: control flow out of ``submit``
    """The service answered from its cache, with the first page itself: there is no job to wait for."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        super().__init__("answered from the cache")
        self.data = data


def file_format_of(destination: Any, file_format: str | None) -> str:
    """``csv`` or ``json``: as given, else from the destination's suffix."""
    if file_format is None:
        suffix = os.path.splitext(str(destination).rstrip("/"))[1].lstrip(".").lower()
        if suffix not in QUERY_FILE_FORMATS:
            raise AnalyticsParameterError(
                f"file_format is needed: the destination {str(destination)!r} does not end in "
                f"{' or '.join('.' + f for f in QUERY_FILE_FORMATS)}"
            )
        return suffix
    if file_format not in QUERY_FILE_FORMATS:
        allowed = ", ".join(QUERY_FILE_FORMATS)
        raise AnalyticsParameterError(f"file_format must be one of {allowed}; got {file_format!r}")
    return file_format


class AnalyticsQueryDataSetOperator(AnalyticsJobOperator):
    """Run a query on a data set and write the rows to a file, or return them.

    :param data_set_id: the data set (templated).
    :param query: the API's Query object: ``metrics``, ``dimensions``, ``filters``, ``order``,
        ``limit``, ``timezone``, ``bust_cache`` (templated; checked before any request). Without
        ``page``/``page_size`` every row is fetched, page after page; with them, that page only.
    :param destination: a local path, a folder (ending in ``/``), or an object-storage URI
        (templated). Without it the rows are returned (see ``max_return_rows``).
    :param file_format: ``csv`` (a header row, then the values) or ``json`` (an array of objects
        keyed by the result's field names); by default from the destination's suffix (templated).
    :param max_return_rows: without a destination, the most rows the task returns (through
        XCom); more fail the task with :class:`AnalyticsQueryResultTooLargeError`.
    :param max_xcom_bytes: without a destination, the most bytes of JSON those rows may take
        (default 4 MiB, at most 16 MiB); more fail the task the same way.

    With a destination, returns ``{"job_id", "data_set_id", "path", "bytes", "rows", "format",
    "fields"}``; the file is written page by page to a temporary file and appears at the
    destination only when complete. Without one, returns ``{"job_id", "data_set_id", "fields",
    "rows"}`` with the rows as ``{field: value}`` (values as the service gives them: strings).
    ``job_id`` is None when the service answered from its cache at once.
    """

    describe_lineage = LineageFunction("describe_query")
    template_fields: Sequence[str] = (
        *AnalyticsJobOperator.template_fields,
        "data_set_id",
        "query",
        "destination",
        "file_format",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {"query": "json"}

    def __init__(
        self,
        *,
        data_set_id: int | str,
        query: Mapping[str, Any],
        destination: Any = None,
        file_format: str | None = None,
        max_return_rows: int = DEFAULT_MAX_RETURN_ROWS,
        max_xcom_bytes: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not isinstance(max_return_rows, int) or isinstance(max_return_rows, bool) or max_return_rows < 1:
            raise refused(self.task_id, "max_return_rows", max_return_rows, "a positive integer")
        self.max_xcom_bytes = DEFAULT_MAX_XCOM_BYTES
        if max_xcom_bytes is not None:
            from analytics_provider.api.call.limits import task_setting  # (5 ms of import: given only)

            self.max_xcom_bytes = task_setting(max_xcom_bytes, "max_xcom_bytes", self.task_id)
        self.data_set_id = data_set_id
        self.query = query
        self.destination = destination
        self.file_format = file_format
        self.max_return_rows = max_return_rows
        with naming_the_task(self.task_id):
            if not is_templated(query):
                check_data_set_query(query)
            if destination and not is_templated(destination) and not is_templated(file_format):
                file_format_of(destination, file_format)

    def check_inputs(self) -> None:
        if self.data_set_id in (None, ""):
            raise refused(self.task_id, "data_set_id", self.data_set_id, "a data set's id")
        self.query = check_data_set_query(self.query)
        if self.destination:
            from analytics_provider.hooks.download import check_destination

            file_format_of(self.destination, self.file_format)
            check_destination(self.destination)

    @property
    def fetches_all_pages(self) -> bool:
        return "page" not in self.query and "page_size" not in self.query

    def page_query(self, page: int) -> dict[str, Any]:
        """The query for one page (the query as given when it names its own page)."""
        if not self.fetches_all_pages:
            return dict(self.query)
        return {**self.query, "page": page, "page_size": PAGE_SIZE}

    # -- the job flow ---------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        with self.closing_hook():
            try:
                return super().execute(context)
            except _AnsweredAtOnce as answer:
                self.log.info("The service answered the query on data set %s from its cache", self.data_set_id)
                self.lineage_result = self.deliver(context, None, answer.data)
                return self.lineage_result

    def submit(self, context: Context) -> dict[str, Any]:
        from analytics_provider.hooks.analytics import is_job

        answer = self.hook.submit_data_set_query(self.data_set_id, self.page_query(1))
        if not isinstance(answer, Mapping) or not is_job(answer):
            raise _AnsweredAtOnce(self.cached(answer, 1))
        return answer

    def on_success(self, context: Context, job_id: int) -> dict[str, Any]:
        return self.deliver(context, job_id, self.job_data(job_id))

    def job_data(self, job_id: int) -> Mapping[str, Any]:
        result = self.hook.get_job_result(job_id) or {}
        inner = result.get("result") if isinstance(result, Mapping) else None
        data = inner.get("data") if isinstance(inner, Mapping) else None
        problem = rows_problem(data)
        if problem:
            raise AnalyticsJobError(f"query job {job_id} succeeded but its result holds no rows ({problem}): "
                                    f"{bounded(repr(result), 300)}", job_id=job_id, status="success")
        return data  # type: ignore[return-value]  # (checked)

    def cached(self, answer: Any, page: int) -> Mapping[str, Any]:
        """An answer from the service's cache (the page itself), checked as a job's result is."""
        problem = rows_problem(answer)
        if problem:
            raise UnexpectedResponseError(
                f"{self.task_id}: the answer from the cache to the query on data set {self.data_set_id} (page "
                f"{page}) is neither a job nor rows ({problem}): {bounded(repr(answer), 300)}",
                status=200, method="POST", path=f"/data_sets/{self.data_set_id}/submit_query")
        return answer

    def fetch_page(self, context: Context, page: int) -> Mapping[str, Any]:
        """One more page: at once from the cache, or through a job waited for here, on the worker."""
        from analytics_provider.hooks.analytics import is_job

        answer = self.hook.submit_data_set_query(self.data_set_id, self.page_query(page))
        if not isinstance(answer, Mapping) or not is_job(answer):
            return self.cached(answer, page)
        state = self.hook.wait_for_job(int(answer["id"]), poll_interval=self.poll_interval, timeout=self.timeout)
        if state.status != "success":
            self.on_failure(context, state.job_id, state.status, state.last_error_log)
        return self.job_data(state.job_id)

    def pages(self, context: Context, first: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
        """The first page, then the next ones until a page is short (or the total is reached)."""
        page, data = 1, first
        while True:
            yield data
            seen = page * PAGE_SIZE
            total = (data.get("meta") or {}).get("num_rows")
            if not self.fetches_all_pages or len(data["values"]) < PAGE_SIZE:
                return
            if isinstance(total, int) and total > len(data["values"]) and total <= seen:
                return  # num_rows counts every row: all of them are here
            page += 1
            data = self.fetch_page(context, page)

    # -- delivering the rows --------------------------------------------------------------------

    def deliver(self, context: Context, job_id: int | None, first: Mapping[str, Any]) -> dict[str, Any]:
        fields = [str(f) for f in first.get("fields") or []]
        summary: dict[str, Any] = {"job_id": job_id, "data_set_id": self.data_set_id, "fields": fields}
        if self.destination:
            return {**summary, **self.write(context, fields, first)}
        total = (first.get("meta") or {}).get("num_rows")
        if isinstance(total, int) and total > len(first["values"]) and total > self.max_return_rows:
            raise self.too_large(str(total))  # num_rows counts every row: known before any more page
        rows: list[dict[str, Any]] = []
        names = sum(len(json.dumps(name)) + 2 for name in fields)  # each record repeats them: '"name": '
        size = 2
        for data in self.pages(context, first):
            rows.extend(as_records(fields, data["values"]))
            if len(rows) > self.max_return_rows:
                raise self.too_large(f"at least {len(rows)}")
            size += sum(names + len(json.dumps(row)) for row in data["values"])  # the XCom's JSON, about
            if size > self.max_xcom_bytes:
                raise AnalyticsQueryResultTooLargeError(
                    f"{self.task_id}: the query on data set {self.data_set_id} gives rows of more than "
                    f"{self.max_xcom_bytes:,} bytes of JSON (max_xcom_bytes) at {len(rows)} rows; give the operator "
                    "a destination to write them to a file, or raise max_xcom_bytes")
        self.log.info("Query on data set %s: %d row(s)", self.data_set_id, len(rows))
        return {**summary, "rows": rows}

    def too_large(self, how_many: str) -> AnalyticsQueryResultTooLargeError:
        return AnalyticsQueryResultTooLargeError(
            f"{self.task_id}: the query on data set {self.data_set_id} gives {how_many} rows, more than "
            f"max_return_rows={self.max_return_rows}; give the operator a destination to write them to a "
            "file, or raise max_return_rows"
        )

    def write(self, context: Context, fields: list[str], first: Mapping[str, Any]) -> dict[str, Any]:
        from analytics_provider.hooks.download import save_stream, task_named_on_write_failure

        counted = {"rows": 0}

        def rows() -> Iterator[list[Any]]:
            for data in self.pages(context, first):
                counted["rows"] += len(data["values"])
                yield from data["values"]

        file_format = file_format_of(self.destination, self.file_format)  # this instance may be a resumed one
        encode = encode_csv if file_format == "csv" else encode_json
        with task_named_on_write_failure(self.task_id):
            path, size = save_stream(
                self.bounded(encode(fields, rows())),
                self.destination,
                expected_bytes=None,
                suggested_name=f"data-set-{self.data_set_id}.{file_format}",
                what=f"query on data set {self.data_set_id}",
            )
        self.log.info("Wrote %d row(s), %d bytes (%s) to %s", counted["rows"], size, file_format, path)
        return {"path": path, "bytes": size, "rows": counted["rows"], "format": file_format}


    def bounded(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """``chunks``, refused once they pass the connection's ``max_download_bytes`` or take past its
        ``max_download_seconds`` (a service whose pages never end would fill the disk)."""
        limits = self.hook.settings.download_limits
        what, where = f"{self.task_id}: query on data set {self.data_set_id}", str(self.destination)
        path = f"/data_sets/{self.data_set_id}/submit_query"
        ends, written = self.hook.clock() + limits.max_seconds, 0
        for chunk in chunks:
            written += len(chunk)
            limits.check_written(written, what, where, "POST", path)
            if self.hook.clock() > ends:
                raise limits.too_slow(what, where, "POST", path)
            yield chunk


def rows_problem(data: Any) -> str | None:
    """What keeps ``data`` from being a page of a query's rows (``{"fields": [names], "values":
    [[value, ...], ...], "meta": {...}}``), or None: a row that is an object or a string would be
    read as rows of its keys or characters."""
    if not isinstance(data, Mapping):
        return f"not an object but {type(data).__name__}"
    if not isinstance(data.get("values"), list):
        return "no list of values"
    fields = data.get("fields")
    if fields is not None and not isinstance(fields, list):
        return f"its fields are {type(fields).__name__}, not a list"
    bad = next((n for n, row in enumerate(data["values"], 1) if not isinstance(row, list)), None)
    if bad is not None:
        return f"its row {bad} is {type(data['values'][bad - 1]).__name__}, not a list of values"
    if data.get("meta") is not None and not isinstance(data["meta"], Mapping):
        return f"its meta is {type(data['meta']).__name__}, not an object"
    return None


def as_records(fields: list[str], values: list[list[Any]]) -> list[dict[str, Any]]:
    if len(set(fields)) != len(fields):
        raise AnalyticsParameterError(
            f"the result has repeated field names {fields}; give each metric and dimension a distinct id"
        )
    return [dict(zip(fields, row, strict=False)) for row in values]


BATCH_ROWS = 1000
BATCH_CHARS = 1_048_576
"""A batch of encoded rows is handed on at 1000 rows or 1 MiB of text, whichever comes first: the
service chooses the fields, and a JSON record repeats their names (100 names of 5 KB each made a
batch of 1000 rows 500 MB before the file's bound was checked)."""


def encode_csv(fields: list[str], rows: Iterator[list[Any]]) -> Iterator[bytes]:
    """A header row, then the rows, as UTF-8 CSV, a batch of rows at a time."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(fields)
    for count, row in enumerate(rows, 1):
        writer.writerow(row)
        if count % BATCH_ROWS == 0 or buffer.tell() >= BATCH_CHARS:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()


def encode_json(fields: list[str], rows: Iterator[list[Any]]) -> Iterator[bytes]:
    """A JSON array of ``{field: value}`` objects, one per line, a batch of rows at a time."""
    as_records(fields, [])  # refuses repeated field names before anything is written
    batch: list[str] = []
    size, first = 0, True
    yield b"["
    for row in rows:
        record = dict(zip(fields, row, strict=False))
        batch.append(("\n" if first else ",\n") + json.dumps(record, ensure_ascii=False))
        size, first = size + len(batch[-1]), False
        if len(batch) == BATCH_ROWS or size >= BATCH_CHARS:
            yield "".join(batch).encode()
            batch, size = [], 0
    yield ("".join(batch) + "\n]\n").encode()
