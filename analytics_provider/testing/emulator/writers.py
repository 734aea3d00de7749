"""Export files on disk: csv (optionally of an exact size, streamed), xlsx and pdf."""

from __future__ import annotations

import csv
import io
import itertools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analytics_provider.testing.emulator.pdf import write_pdf
from analytics_provider.testing.emulator.xlsx import write_xlsx

CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pdf": "application/pdf",
}
BLOCK = 64 * 1024


def file_name(title: str, job_id: int, output: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "export"
    return f"{slug}-{job_id}.{output}"


def csv_line(values: Sequence[Any]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(values)
    return buffer.getvalue().encode("utf-8")


def write_csv(path: Path, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    with path.open("wb") as out:
        out.write(csv_line(columns))
        out.writelines(csv_line(row) for row in rows)


def _pad(line: bytes, size: int) -> bytes:
    """``line`` widened to ``size`` bytes with spaces inside its first field (or before the newline)."""
    at = line.find(b",") if not line.startswith(b'"') else -1
    at = at if at >= 0 else len(line) - 1
    return line[:at] + b" " * (size - len(line)) + line[at:]


def write_sized_csv(path: Path, columns: Sequence[str], rows: Sequence[Sequence[Any]], nbytes: int) -> None:
    """A csv of exactly ``nbytes``: the header, the rows over and over, the last row padded.

    Written in blocks of 64 KiB, so a file of hundreds of megabytes never sits in memory.
    """
    header = csv_line(columns)
    if nbytes < len(header):
        raise ValueError(f"an export of {nbytes} bytes cannot hold even the header ({len(header)} bytes)")
    lines = [csv_line(row) for row in rows] or [header]
    longest = max(len(line) for line in lines)
    with path.open("wb") as out:
        if nbytes - len(header) < longest:
            out.write(_pad(header, nbytes))
            return
        out.write(header)
        written = len(header)
        block = b"".join(lines) * max(1, BLOCK // max(1, sum(map(len, lines))))
        while written + len(block) + longest <= nbytes:
            out.write(block)
            written += len(block)
        for line in itertools.cycle(lines):
            if written + len(line) + longest > nbytes:
                out.write(_pad(line, nbytes - written))
                return
            out.write(line)
            written += len(line)


def write_export(
    path: Path, output: str, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], size: int | None = None
) -> None:
    """Write one export; ``size`` (csv only) makes the file exactly that many bytes."""
    if output == "csv":
        if size is None:
            write_csv(path, columns, rows)
        else:
            write_sized_csv(path, columns, rows, size)
    elif output == "xlsx":
        write_xlsx(path, title, columns, rows)
    elif output == "pdf":
        write_pdf(path, title, columns, rows)
    else:
        raise ValueError(f"unknown export output {output!r}")
