"""A real, minimal PDF 1.4 written by hand: the rows as a monospaced table, with a correct xref."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

PAGE_WIDTH, PAGE_HEIGHT = 842, 595  # A4 landscape, in points
MARGIN = 40
FONT_SIZE = 9
LEADING = 12
MAX_CELL = 28
CHARS_PER_LINE = int((PAGE_WIDTH - 2 * MARGIN) / (0.6 * FONT_SIZE))  # Courier is 0.6 em wide
ROWS_PER_PAGE = int((PAGE_HEIGHT - 2 * MARGIN) / LEADING) - 3  # below the title, header and rule


def _escape(text: str) -> bytes:
    raw = text.encode("latin-1", "replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def _cell(value: Any) -> str:
    text = "" if value is None else f"{value:,.2f}" if isinstance(value, float) else str(value)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 3] + "..."


def table_lines(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """The table as aligned text lines: header, rule, rows (numbers right-aligned)."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(str(c))] + [len(r[i]) for r in cells if i < len(r)]) for i, c in enumerate(columns)]
    numeric = [
        bool(rows) and all(isinstance(r[i], (int, float)) for r in rows if i < len(r)) for i in range(len(columns))
    ]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if numeric[i] else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths, strict=False))]
        return "  ".join(parts).rstrip()[:CHARS_PER_LINE]

    return [line([str(c) for c in columns]), "-" * min(sum(widths) + 2 * len(widths), CHARS_PER_LINE)] + [
        line(r) for r in cells
    ]


def _content(title: str, lines: Sequence[str], page: int, pages: int) -> bytes:
    top = PAGE_HEIGHT - MARGIN
    out = [b"BT", b"/F2 13 Tf", f"{MARGIN} {top} Td".encode(), b"(" + _escape(title) + b") Tj",
           f"/F1 {FONT_SIZE} Tf {LEADING} TL 0 -{LEADING * 2} Td".encode()]
    out += [b"(" + _escape(text) + b") Tj T*" for text in lines]
    out += [b"ET", b"BT", f"/F1 8 Tf {PAGE_WIDTH - MARGIN - 60} {MARGIN / 2} Td".encode(),
            b"(" + _escape(f"Page {page} of {pages}") + b") Tj", b"ET"]
    return b"\n".join(out) + b"\n"


def write_pdf(path: Path, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Write the rows as a table over as many pages as needed (objects 1-5 are fixed, then pages)."""
    lines = table_lines(columns, rows)
    header, body = lines[:2], lines[2:]
    chunks = [body[i : i + ROWS_PER_PAGE] for i in range(0, len(body), ROWS_PER_PAGE)] or [[]]
    stamp = datetime.now(timezone.utc).strftime("D:%Y%m%d%H%M%SZ")
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, filled in below
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier /Encoding /WinAnsiEncoding >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>",
        b"<< /Title (" + _escape(title) + b") /Producer (Analytics emulator) /CreationDate ("
        + stamp.encode() + b") >>",
    ]
    kids = []
    for number, chunk in enumerate(chunks, start=1):
        stream = _content(title, header + chunk, number, len(chunks))
        page_id, content_id = len(objects) + 1, len(objects) + 2
        kids.append(f"{page_id} 0 R")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_WIDTH} {PAGE_HEIGHT}] "
            f"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents {content_id} 0 R >>".encode()
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"endstream")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body_bytes in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body_bytes + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 5 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
