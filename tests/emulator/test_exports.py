"""Exports: the redirect to the files origin, real csv/xlsx/pdf files, filters, exact sizes."""

from __future__ import annotations

import csv
import io
import math
import re
import time
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
import requests

from analytics_provider.testing.emulator.pdf import ROWS_PER_PAGE, write_pdf
from analytics_provider.testing.emulator.writers import write_sized_csv

from .conftest import Api, error_of

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}


def download(api: Api, job_id: int) -> requests.Response:
    """Follow the redirect by hand, without the key, as the hook does."""
    redirect = api.get("/exports/download", params={"job_id": job_id})
    assert redirect.status_code == 302, redirect.text
    return requests.get(redirect.headers["Location"], timeout=10)


def test_download_redirects_to_the_files_origin(api: Api, emu) -> None:
    job_id = api.export("101", "csv")
    redirect = api.get("/exports/download", params={"job_id": job_id})
    assert redirect.status_code == 302
    location = redirect.headers["Location"]
    assert location.startswith(emu.files_url + "/files/") and location.endswith(f"-{job_id}.csv")
    assert emu.files_url != emu.base_url[: len(emu.files_url)]  # another origin
    answer = requests.get(location, timeout=10)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("text/csv")
    assert int(answer.headers["Content-Length"]) == len(answer.content) > 0
    assert answer.headers["Content-Disposition"] == f'attachment; filename="{location.rsplit("/", 1)[1]}"'
    files = [r for r in emu.requests if r.origin == "files"]
    assert len(files) == 1 and files[0].operation == "download_file" and files[0].status == 200
    assert files[0].carried_key is False


def test_download_before_success_is_export_job_not_ready(api: Api, emu) -> None:
    emu.job_duration = 30
    job_id = api.post("/dashboard_widgets/101/submit_export", json={"output": "csv"}).json()["job"]["id"]
    answer = api.get("/exports/download", params={"job_id": job_id})
    assert answer.status_code == 422 and error_of(answer)["type"] == "ExportJobNotReady"
    emu.job_duration = 0.05
    emu.fail_next_job("submit_widget_export", last_error_log="Query timed out")
    failed = api.post("/dashboard_widgets/102/submit_export", json={"output": "csv"}).json()["job"]["id"]
    assert api.wait_job(failed)["status"] == "failure"
    assert error_of(api.get("/exports/download", params={"job_id": failed}))["type"] == "ExportJobNotReady"
    other = api.post("/data_sources/1/bust_exploration_cache").json()["job"]["id"]
    assert api.get("/exports/download", params={"job_id": other}).status_code == 422
    assert api.get("/exports/download", params={"job_id": 999999}).status_code == 404


def test_csv_has_the_header_and_rows(api: Api) -> None:
    rows = list(csv.reader(io.StringIO(download(api, api.export("101", "csv")).text)))
    assert rows[0] == ["month", "region", "orders", "revenue"] and len(rows) == 21
    assert {r[1] for r in rows[1:]} == {"EU", "US", "APAC", "LATAM"}


def test_filter_conditions_filter_the_rows(api: Api) -> None:
    eu = {"dynamic_filter_id": 1, "condition": {"operator": "is", "values": ["EU"]}}
    rows = list(csv.reader(io.StringIO(download(api, api.export("101", dashboard_filter_conditions=[eu])).text)))
    assert len(rows) == 6 and {r[1] for r in rows[1:]} == {"EU"}
    channel = {"dynamic_filter_id": 2, "condition": {"operator": "is", "values": ["Web"]}}
    rows = list(csv.reader(io.StringIO(download(api, api.export("101", dashboard_filter_conditions=[channel])).text)))
    assert len(rows) == 21  # the channel filter is not mapped to widget 101
    big = {"dynamic_filter_id": 6, "condition": {"operator": "greater_than", "values": [100000]}}
    rows = list(csv.reader(io.StringIO(download(api, api.export("301", dashboard_filter_conditions=[big])).text)))
    assert rows[1:] and all(float(r[2]) > 100000 for r in rows[1:])
    foreign = api.post("/dashboard_widgets/101/submit_export", json={"output": "csv", "dashboard_filter_conditions": [
        {"dynamic_filter_id": 3, "condition": {"operator": "is", "values": ["x"]}}]})
    assert foreign.status_code == 422 and error_of(foreign)["type"] == "RecordError"
    bad = api.post("/dashboard_widgets/101/submit_export", json={"output": "csv", "dashboard_filter_conditions": "EU"})
    assert bad.status_code == 400


def test_xlsx_is_a_real_workbook(api: Api) -> None:
    answer = download(api, api.export("201", "xlsx"))
    assert answer.headers["Content-Type"] == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    archive = zipfile.ZipFile(io.BytesIO(answer.content))
    assert archive.testzip() is None
    names = set(archive.namelist())
    assert {"[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels",
            "xl/worksheets/sheet1.xml", "xl/styles.xml"} <= names
    for name in names:
        ElementTree.fromstring(archive.read(name))  # every part is well-formed XML
    sheet = ElementTree.fromstring(archive.read("xl/worksheets/sheet1.xml"))
    rows = sheet.findall("m:sheetData/m:row", NS)
    assert len(rows) == 21
    header = ["".join(c.itertext()) for c in rows[0].findall("m:c", NS)]
    assert header == ["campaign", "channel", "region", "impressions", "clicks", "spend", "conversions"]
    numbers = rows[1].findall("m:c", NS)[3:]
    assert all(c.get("t") is None and float(c.findtext("m:v", "", NS)) >= 0 for c in numbers)
    openpyxl = pytest.importorskip("openpyxl")
    workbook = openpyxl.load_workbook(io.BytesIO(answer.content))
    assert workbook.active.max_row == 21 and workbook.active["A1"].value == "campaign"


def number_in(pattern: bytes, data: bytes) -> int:
    found = re.search(pattern, data)
    assert found is not None, pattern
    return int(found.group(1))


def check_pdf_structure(data: bytes) -> int:
    """Header, every xref offset pointing at its object, trailer and startxref; returns the page count."""
    assert data.startswith(b"%PDF-1.4\n") and data.rstrip().endswith(b"%%EOF")
    startxref = number_in(rb"startxref\s+(\d+)\s+%%EOF\s*$", data)
    assert data[startxref:].startswith(b"xref\n")
    count = number_in(rb"^xref\n0 (\d+)\n", data[startxref:])
    entries = data[startxref:].split(b"\n")[2 : 2 + count]
    assert entries[0] == b"0000000000 65535 f "
    for number, entry in enumerate(entries[1:], start=1):
        assert len(entry) == 19 and entry.endswith(b" 00000 n ")
        assert data[int(entry[:10]) :].startswith(f"{number} 0 obj".encode())
    trailer = data[data.rindex(b"trailer") :]
    assert f"/Size {count}".encode() in trailer and b"/Root 1 0 R" in trailer
    for stream in re.finditer(rb"<< /Length (\d+) >>\nstream\n", data):
        end = stream.end() + int(stream.group(1))
        assert data[end:].startswith(b"endstream")
    return number_in(rb"/Type /Pages /Kids \[[^\]]*\] /Count (\d+)", data)


def test_pdf_is_a_real_document(api: Api) -> None:
    answer = download(api, api.export("202", "pdf"))
    assert answer.headers["Content-Type"] == "application/pdf"
    assert check_pdf_structure(answer.content) == 1
    assert b"(Signups by country) Tj" in answer.content and b"Germany" in answer.content


def test_pdf_of_many_rows_spans_pages(tmp_path: Path) -> None:
    path = tmp_path / "long.pdf"
    write_pdf(path, "Long (report) \\ test", ["n", "label"], [[i, f"row {i} ü"] for i in range(200)])
    data = path.read_bytes()
    assert check_pdf_structure(data) == math.ceil(200 / ROWS_PER_PAGE) > 1
    assert b"Long \\(report\\) \\\\ test" in data and b"row 199 \xfc" in data


@pytest.mark.parametrize("nbytes", [30, 31, 200, 4097, 65536 * 3 + 7, 1_000_003])
def test_sized_csv_is_exact(tmp_path: Path, nbytes: int) -> None:
    path = tmp_path / "sized.csv"
    write_sized_csv(path, ["month", "region"], [["2025-01", "EU"], ["2025-02", "LATAM"], ['say "hi"', "US"]], nbytes)
    assert path.stat().st_size == nbytes
    rows = list(csv.reader(path.open(newline="")))
    assert rows[0][0].strip() == "month" and all(len(r) == 2 for r in rows)


def test_set_export_size_serves_exactly_that_many_bytes_in_chunks(api: Api, emu) -> None:
    size = 3 * 1024 * 1024 + 11
    emu.set_export_size(101, size)
    job_id = api.export("101", "csv")
    answer = api.get("/exports/download", params={"job_id": job_id})
    with requests.get(answer.headers["Location"], stream=True, timeout=10) as streamed:
        assert int(streamed.headers["Content-Length"]) == size
        received = sum(len(chunk) for chunk in streamed.iter_content(256 * 1024))
    assert received == size
    assert api.export("101", "xlsx")  # the size applies to csv only
    with pytest.raises(ValueError):
        emu.set_export_size(999, 10)


def test_files_origin_checks_its_signed_paths(api: Api, emu) -> None:
    location = api.get("/exports/download", params={"job_id": api.export()}).headers["Location"]
    token = location.split("/")[-2]
    _job_id, expires, signature = token.split(".")
    forged = location.replace(signature, "0" * len(signature))
    assert requests.get(forged, timeout=5).status_code == 403
    expired = location.replace(f".{expires}.", f".{int(time.time()) - 10}.")
    assert requests.get(expired, timeout=5).status_code == 403
    assert requests.get(emu.files_url + "/nothing", timeout=5).status_code == 404
    assert requests.head(location, timeout=5).headers["Content-Length"] != "0"
    emu.reset()
    assert requests.get(location, timeout=5).status_code == 403  # links die with the reset
